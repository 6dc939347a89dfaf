"""Where the stores' CPU goes while a benchmark runs: every `--every` seconds, each local JVM's
(the broker's, ZooKeeper's) CPU seconds by thread name (request handlers, JIT compilers, GC...),
its GC counters (`jstat -gc`), and how busy each core was.

    python tests/perf/bench_sync.py --pin 0:1 --rate 1000 --minutes 1.5 > bench.log &
    taskset -c 0 python tests/perf/jvm_threads.py --wait-for "changes/s for" --log bench.log --for 90

Starts once `--wait-for` appears in `--log` (at once without it), finds the JVMs by their main
class, and prints a line per JVM and interval; the figure is that of the interval ending at the
time shown. Reads /proc and runs the JDK's `jstat` (with a JRE alone, no GC counters); no JMX port
needed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

MAINS = {"broker": "kafka.Kafka", "zookeeper": "org.apache.zookeeper.server"}
TICK = os.sysconf("SC_CLK_TCK")
JSTAT = shutil.which("jstat")   # the JDK's; a JRE has none, and the GC counters are left out


def jvms() -> dict[str, int]:
    """Each store's JVM by its main class; of several (parallel test workers each start stores, and
    stop their short-lived sandboxes), the longest running."""
    found: dict[str, tuple[int, int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            started = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        except (OSError, IndexError, ValueError):
            continue   # gone meanwhile
        words = [w.decode(errors="replace") for w in argv]
        for name, main in MAINS.items():
            if (words and words[0].endswith("java") and any(w.startswith(main) for w in words)
                    and (name not in found or started < found[name][0])):
                found[name] = (started, int(pid))
    return {name: pid for name, (_, pid) in found.items()}


def threads(pid: int) -> Counter:
    """CPU seconds so far by thread name, its numbers dropped (C2 CompilerThread0 -> C2 CompilerThread)."""
    seconds = Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue   # a thread that ended
        seconds[re.sub(r"[-#\d]+$", "", name) or name] += (int(fields[11]) + int(fields[12])) / TICK
    return seconds


def gc(pid: int) -> dict[str, float]:
    """The JVM's GC counters (`jstat -gc`), or none without the JDK's jstat."""
    if JSTAT is None:
        return {}
    lines = subprocess.run([JSTAT, "-gc", str(pid)], capture_output=True, text=True).stdout.split("\n")
    return {k: float(v) if v != "-" else 0.0 for k, v in zip(lines[0].split(), lines[1].split())}


def cores() -> dict[str, tuple[int, int]]:
    """Per core: (busy, all) jiffies so far."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *values = line.split()
        if name.startswith("cpu") and name[3:].isdigit():
            ticks = list(map(int, values))
            out[name] = (sum(ticks) - ticks[3] - ticks[4], sum(ticks))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=float, default=5.0, help="seconds between two samples")
    ap.add_argument("--for", dest="total", type=float, default=120.0,
                    help="seconds to sample: --for / --every samples, at least one")
    ap.add_argument("--log", type=Path, help="a benchmark's output to watch for --wait-for")
    ap.add_argument("--wait-for", help="a line's text in --log after which to start")
    ap.add_argument("--top", type=int, default=6, help="thread names shown per JVM")
    args = ap.parse_args(argv)
    if args.wait_for:
        if args.log is None:
            ap.error("--wait-for needs --log")
        while not args.log.exists() or args.wait_for not in args.log.read_text():
            time.sleep(0.5)
    pids = jvms()
    if not pids:
        sys.exit("no broker or ZooKeeper JVM is running")
    try:
        last = {name: (threads(pid), gc(pid)) for name, pid in pids.items()}
    except (OSError, IndexError):
        sys.exit("a broker or ZooKeeper JVM stopped as it was first sampled")
    last_cores = cores()
    # Counted samples, not a deadline: jstat's own start-up may take longer than --for on a busy host.
    start = last_at = time.monotonic()
    for _ in range(max(1, round(args.total / args.every))):
        time.sleep(args.every)
        now = time.monotonic()
        elapsed, at = now - last_at, now - start
        busy = cores()
        print(f"{at:5.0f}s cores: " + ", ".join(
            f"{c} {(b - last_cores[c][0]) / max(1, a - last_cores[c][1]):.0%}" for c, (b, a) in busy.items()))
        for name, pid in pids.items():
            try:
                seconds, counters = threads(pid), gc(pid)
            except (OSError, IndexError):
                sys.exit(f"{name} ({pid}) is gone")
            spent = {t: s - last[name][0].get(t, 0.0) for t, s in seconds.items()}
            top = sorted(((s, t) for t, s in spent.items() if s >= 0.05), reverse=True)[:args.top]
            was = last[name][1]
            collections = "" if not counters else (
                f" | young GC +{counters['YGC'] - was['YGC']:.0f} ({counters['YGCT'] - was['YGCT']:.2f}s),"
                f" full GC +{counters['FGC'] - was['FGC']:.0f} ({counters['FGCT'] - was['FGCT']:.2f}s)")
            print(f"{at:5.0f}s {name}: {sum(spent.values()) / elapsed:.0%} of a core | "
                  + ", ".join(f"{t} {s:.1f}s" for s, t in top) + collections, flush=True)
            last[name] = (seconds, counters)
        last_cores, last_at = busy, now


if __name__ == "__main__":
    main()
