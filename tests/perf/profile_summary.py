"""Where a command's time went, from `py-spy record --idle --format raw` (bench_scale.py --profile-migrate).

    python tests/perf/profile_summary.py migrate.txt                         # by process and thread role
    python tests/perf/profile_summary.py migrate.txt --under DualCommit._migrate --depth 2

With --idle every thread is sampled whether it runs or waits, so a thread's samples are its wall time. Each
sample is put under the frame `--depth` levels below the first frame named `--under` (its function, without
the line), and counted as waiting when its innermost frame is a wait (a lock, a poll, a socket read), else as
running Python. Prints a Markdown table: samples, their share, and how many of them waited.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

# Innermost frames that are a thread waiting, not running: locks, conditions, selectors, sockets, sleeps.
WAITS = re.compile(r"^(?:Condition\.wait|Event\.wait|wait|acquire|select|poll|_poll|epoll|recv|recv_into|"
                   r"sleep|Lock\.acquire|_wait_for_tstate_lock|join|Queue\.get|get|accept|read|readinto|"
                   r"EpollSelector\.select|PollSelector\.select|DefaultSelector\.select|"
                   r"SelectSelector\.select|_recv_into|sock_recv|_recv|_recv_bytes|watch)$")
PROCESS = re.compile(r'process \d+:"[^"]*";?')
FUNCTION = re.compile(r"^(.*?) \((.*?)(?::\d+)?\)$")


def frames(stack: str) -> tuple[str, list[str]]:
    """(the innermost process, its frames outermost first, each `function (file)` without the line).

    With --subprocesses a child's stack starts with its parents' `process PID:"command"` frames."""
    process, out = "", []
    while (m := PROCESS.match(stack)) is not None:   # its command line may hold `;`
        process, stack = m.group(0), stack[m.end():]
    for frame in stack.split(";") if stack else []:
        m = FUNCTION.match(frame)
        out.append(f"{m.group(1)} ({m.group(2)})" if m else frame)
    return process, out


def role(process: str, stack: list[str]) -> str:
    """Which process (the command or one of its writers, forked by multiprocessing) and which thread."""
    who = "writer process" if "multiprocessing" in process else "command process"
    thread = "a worker thread" if stack and stack[0].startswith("Thread._bootstrap") else "main thread"
    io = [f for f in stack if "NetworkSelector.run_forever" in f or "ConnectionHandler" in f or "_connect_loop" in f]
    if io:
        thread = "kafka-python IO thread" if "NetworkSelector" in io[0] else "kazoo IO thread"
    return f"{who}, {thread}"


def summarize(path: Path, under: str | None, depth: int) -> tuple[Counter, Counter, int]:
    """(samples per key, waiting samples per key, all samples)."""
    counts, waiting, total = Counter(), Counter(), 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        n = int(n)
        total += n
        process, stack_frames = frames(stack)
        if under:
            at = next((i for i, f in enumerate(stack_frames) if f.split(" (")[0] == under), None)
            if at is None:
                continue
            below = stack_frames[at + 1:at + 1 + depth]
            key = " > ".join(f.split(" (")[0] for f in below) or f"{under} itself"
        else:
            key = role(process, stack_frames)
        counts[key] += n
        if stack_frames and WAITS.match(stack_frames[-1].split(" (")[0].split(".")[-1]):
            waiting[key] += n
    return counts, waiting, total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", type=Path)
    ap.add_argument("--under", help="only stacks through this function (e.g. DualCommit._migrate)")
    ap.add_argument("--depth", type=int, default=1, help="frames below --under to group by")
    ap.add_argument("--rate", type=float, default=20.0, help="py-spy's --rate: samples a second")
    args = ap.parse_args(argv)
    counts, waiting, total = summarize(args.profile, args.under, args.depth)
    shown = sum(counts.values())
    print(f"{shown:,} of {total:,} samples ({shown / args.rate:,.0f} thread-seconds at {args.rate:g}/s)\n")
    print("| where | thread-seconds | share | waiting |")
    print("| --- | ---: | ---: | ---: |")
    for key, n in counts.most_common():
        print(f"| {key} | {n / args.rate:,.1f} | {100 * n / shown:.1f} % | {100 * waiting[key] / n:.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
