"""Benchmark: a million offsets end to end (`scan`, `diff --zk-snapshot` of that scan, `migrate --execute
--plan`, `verify --run`), time and memory.

    python tests/perf/bench_scale.py                           # 10,000 groups x 100 partitions = 1,000,000
    python tests/perf/bench_scale.py --groups 1000 --json scale.json
    make test-long                                             # the same 1,000,000 as a `slow` test

Starts its own sandbox (ZooKeeper with a 1 GB heap, a ZooKeeper-mode Kafka 3.9 broker with 2 GB, since
the broker keeps every committed offset in memory) unless --zookeeper and --bootstrap-server are given.
Group i reads all `--partitions` partitions of topic i mod `--topics`; its offsets lie between 1 and the log
end, so every row is MIGRATE. The steps are the reviewed-plan cutover of the runbooks: the inventory `scan`,
a `diff` that reads it (`--zk-snapshot`: no second scan of ZooKeeper) and writes the plan a change ticket
carries, `migrate --execute --plan`, which writes exactly that plan into Kafka (no scan or Spark start; each
group's znodes read again first, ZooKeeper itself not written, as from any snapshot), and `verify --run`,
which reads back what that run wrote; the total is their sum. Each command runs as a child process, as an
operator would run it; a sampler reads the memory of its process tree from /proc five times a second (each
process's Pss: shared pages counted once), split into the Python processes (zk2kafka, its ZooKeeper reader
and writer processes) and the JVMs (Spark's driver, which in local mode runs every task). For `migrate
--execute` it also reports the write phase (the journaled plan to the run marked done) and the Python memory
when the write phase began and at its peak: the writer works in bounded batches, so the second must not grow
with the number of offsets.

Prints a Markdown table; exits 1 when a step failed or `verify` did not find every offset IN_SYNC.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench_migrate import Layout, make_topics, seed_zookeeper, stores

ROOT = Path(__file__).resolve().parents[2]

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024


def _tree(root: int) -> list[int]:
    """`root` and every process below it (the Spark JVM is a grandchild, ZooKeeper readers are children)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue   # gone while we looked
            children.setdefault(ppid, []).append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def _rss(pid: int) -> tuple[str, int]:
    """(command name, proportional resident bytes) of a process; ("", 0) once it has exited.

    Pss, not Rss: the writer processes are forked from a server that imported their modules, so
    they share those pages; Rss would count every shared page once per process, Pss splits it
    between them, and the tree's sum is the memory it really holds. Rss where Pss is not offered.
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return "", 0
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return name, int(line.split()[1]) * 1024
    except OSError:
        pass
    return name, int(stat.rsplit(")", 1)[1].split()[21]) * PAGE


class Sampler(threading.Thread):
    """Memory of a process tree every `interval` seconds: (time, python bytes, jvm bytes), the sums
    of its processes' proportional resident sets (see _rss)."""

    def __init__(self, pid: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, int, int]] = []
        self.per_pid: dict[int, list[tuple[float, int]]] = {}   # each process's own, to tell which grows
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            python = jvm = 0
            now = time.time()
            for pid in _tree(self.pid):
                name, rss = _rss(pid)
                if name == "java":
                    jvm += rss
                else:
                    python += rss      # zk2kafka and its reader processes (the JVM launcher shell is tiny)
                if rss:
                    self.per_pid.setdefault(pid, []).append((now, rss))
            self.samples.append((now, python, jvm))
            self.done.wait(self.interval)

    def peak(self, since: float = 0.0, until: float = float("inf")) -> tuple[int, int]:
        window = [s for s in self.samples if since <= s[0] <= until] or self.samples[-1:]
        return max(s[1] for s in window), max(s[2] for s in window)


def run_step(name: str, argv: list[str], work: Path) -> tuple[dict, dict, Sampler]:
    """One zk2kafka command as a child process: wall time, exit code, its JSON, and its memory over time."""
    log = work / f"{name.split()[0]}.log"
    with open(log, "w") as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "migrate", *argv, "--json"], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=err, text=True)
        sampler = Sampler(child.pid)
        sampler.start()
        out, _ = child.communicate()
        seconds = time.perf_counter() - start
        sampler.done.set()
        sampler.join()
    try:
        result = json.loads(out)
    except ValueError:
        result = {}
    python, jvm = sampler.peak()
    row = {"step": name, "seconds": round(seconds, 1), "exit_code": child.returncode,
           "python_peak_mib": round(python / MIB), "jvm_peak_mib": round(jvm / MIB), "log": str(log)}
    return row, result, sampler


def write_phase(state: Path, sampler: Sampler) -> dict:
    """The migrate run's write phase from the journal, with the Python memory when it began and at its peak."""
    with sqlite3.connect(state / "journal.sqlite") as db:
        created, updated = db.execute("SELECT created, updated FROM runs WHERE kind='migrate'").fetchone()
    at_start = next((s[1] for s in sampler.samples if s[0] >= created), 0)
    peak, _ = sampler.peak(created, updated)
    return {"write_phase_s": round(updated - created, 1), "python_at_write_start_mib": round(at_start / MIB),
            "python_write_peak_mib": round(peak / MIB)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zookeeper", help="an existing ZooKeeper, with the chroot holding /consumers")
    ap.add_argument("--bootstrap-server", help="an existing Kafka (give --zookeeper too)")
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=100, help="offsets per group (partitions of each topic)")
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--messages", type=int, default=5, help="messages per partition; offsets lie in 1..messages")
    ap.add_argument("--parallelism", type=int, default=32, help="zk2kafka migrate --parallelism")
    ap.add_argument("--zk-readers", type=int, default=1, help="zk2kafka --zk-readers for scan and diff")
    ap.add_argument("--writers", type=int, default=1, help="zk2kafka migrate --writers")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    if (args.zookeeper is None) != (args.bootstrap_server is None):
        ap.error("give both --zookeeper and --bootstrap-server, or neither (a sandbox is started)")

    run = f"scale{uuid.uuid4().hex[:6]}"
    layout = Layout(run, args.topics, args.partitions, args.messages)
    offsets = args.groups * args.partitions
    work = Path(tempfile.mkdtemp(prefix="zk2kafka-bench-scale-"))
    cluster = None
    try:
        cluster, zookeeper, bootstrap = stores(args.zookeeper, args.bootstrap_server, work,
                                               zk_heap="1g", broker_heap="2g")
        t0 = time.perf_counter()
        make_topics(bootstrap, layout)
        seed_zookeeper(zookeeper, layout, f"{run}-", args.groups)
        _say(f"{offsets:,} offsets ({args.groups:,} groups x {args.partitions} partitions on {args.topics} topics) "
             f"seeded in {time.perf_counter() - t0:.0f}s; ZooKeeper {zookeeper}, Kafka {bootstrap}")

        state = work / "state"
        common = ["--zookeeper", zookeeper, "--bootstrap-server", bootstrap, "--state-dir", str(state),
                  "--group", f"{run}-.*", "--zk-readers", str(args.zk_readers)]
        rows, ok, result = [], True, {}
        for name, extra in (("scan", lambda _: []),
                            ("diff --zk-snapshot", lambda scan: ["--zk-snapshot", str(scan.get("run"))]),
                            (f"migrate --execute --plan --parallelism {args.parallelism} --writers {args.writers}",
                             lambda diff: ["--execute", "--plan", str(diff.get("run")),
                                           "--parallelism", str(args.parallelism), "--writers", str(args.writers)]),
                            ("verify --run", lambda migrate: ["--run", str(migrate.get("run"))])):
            _say(f"zk2kafka {name}")
            row, result, sampler = run_step(name, [name.split()[0], *common, *extra(result)], work)
            if name.startswith("migrate"):
                row.update(write_phase(state, sampler), written=result.get("written"),
                           state=result.get("state"))
                ok &= row["exit_code"] == 0 and row["state"] == "done" and row["written"] == offsets
            elif name.startswith("verify"):
                row["verified"] = result.get("verified")
                ok &= row["exit_code"] == 0 and bool(row["verified"])
            else:
                ok &= row["exit_code"] == 0
            row["offsets_per_s"] = round(offsets / row["seconds"]) if row["seconds"] else None
            rows.append(row)
            _say(f"  exit {row['exit_code']} in {row['seconds']}s, peak Pss Python {row['python_peak_mib']} MiB, "
                 f"JVM {row['jvm_peak_mib']} MiB")
    finally:
        if cluster:
            cluster.stop()

    figures = {"run": run, "groups": args.groups, "partitions": args.partitions, "offsets": offsets,
               "cores": os.cpu_count(), "steps": rows, "ok": ok,
               "total_s": round(sum(r["seconds"] for r in rows), 1)}
    print(render(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return figures


def render(figures: dict) -> str:
    lines = [f"\n{figures['offsets']:,} offsets ({figures['groups']:,} groups x {figures['partitions']} "
             f"partitions), {figures['cores']} cores\n",
             "| step | wall time | offsets/s | peak memory (Pss), Python | peak memory (Pss), Spark JVM | exit |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in figures["steps"]:
        lines.append(f"| `zk2kafka {r['step']}` | {r['seconds']:,} s | {r['offsets_per_s']:,} | "
                     f"{r['python_peak_mib']:,} MiB | {r['jvm_peak_mib']:,} MiB | {r['exit_code']} |")
        if "write_phase_s" in r:
            lines.append(f"| the same run, write phase only | {r['write_phase_s']:,} s | "
                         f"{round(figures['offsets'] / r['write_phase_s']) if r['write_phase_s'] else 0:,} | "
                         f"{r['python_at_write_start_mib']:,} MiB at its start, {r['python_write_peak_mib']:,} "
                         f"MiB at its peak | | |")
    lines.append(f"| all four steps | {figures['total_s']:,} s | | | | |")
    return "\n".join(lines)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(0 if main()["ok"] else 1)
