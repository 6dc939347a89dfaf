"""Benchmark: a million offsets end to end (`scan`, `diff --zk-snapshot` of that scan, `migrate --execute
--plan`, `verify --run`), time and memory; ten million with a size of its own.

    python tests/perf/bench_scale.py                           # 10,000 groups x 100 partitions = 1,000,000
    python tests/perf/bench_scale.py --groups 100000 --zookeeper-heap 6g --broker-heap 6g   # 10,000,000
    python tests/perf/bench_scale.py --spark-master standalone # the same diff on a Spark standalone cluster too
    python tests/perf/bench_scale.py --spark-master standalone --spark-shared --until diff   # executors read, write
    python tests/perf/bench_scale.py --dual-commit --profile-migrate migrate.txt   # the road writing both stores
    python tests/perf/bench_scale.py --dual-commit --rescan    # the same road with diff scanning ZooKeeper again
    python tests/perf/bench_scale.py --groups 1000 --json scale.json
    make test-long                                             # the same 1,000,000 as a `slow` test

Starts its own sandbox (ZooKeeper with a 1 GB heap, a ZooKeeper-mode Kafka 3.9 broker with 2 GB, since
the broker keeps every committed offset in memory; `--zookeeper-heap`, `--broker-heap` for more) unless
--zookeeper and --bootstrap-server are given. `--groups` x `--partitions` is the size: group i reads all
`--partitions` partitions of topic i mod `--topics`; its offsets lie between 1 and the log end, so every row
is MIGRATE. ZooKeeper is seeded from `--seeders` processes, each pipelining multi-op transactions. The steps
are the reviewed-plan cutover of the runbooks: the inventory `scan`, a `diff` that reads it (`--zk-snapshot`:
no second scan of ZooKeeper) and writes the plan a change ticket carries, `migrate --execute --plan`, which
writes exactly that plan into Kafka (no scan or Spark start; each group's znodes read again first, ZooKeeper
itself not written, as from any snapshot), and `verify --run`, which reads back what that run wrote; the
total is their sum. `--dual-commit` takes the road where `migrate` writes both stores: the diff plans the dual
commit from the scan's snapshot (`diff --zk-snapshot SCAN --dual-commit`), and `verify --run` reads every znode
back too; with `--rescan` the diff scans ZooKeeper again instead (the road before `--dual-commit`).
`--spark-master URL` runs the same diff again on that master after the local one
(`standalone` starts a master and a worker from the pyspark install, and stops them); `migrate` writes the
local diff's plan; with `--spark-shared` it runs with `--spark-shared-dir`, so its executors read the
snapshots and write the plan instead of the driver. `--until STEP` stops after that step.
`--profile-migrate FILE` runs `migrate` under `py-spy record` (profile_summary.py reads it).

Each command runs as a child process, as an operator would run it; a sampler reads the memory of its process
tree from /proc five times a second (each process's Pss: shared pages counted once), split into the Python
processes (zk2kafka, its ZooKeeper reader and writer processes) and the JVMs (Spark's driver, which in local
mode runs every task; on a standalone master the worker's tree, executors included, is sampled apart). For
`migrate --execute` it also reports the write phase (the journaled plan to the run marked done) and the Python
memory when the write phase began and at its peak: the writer works in bounded batches, so the second must not
grow with the number of offsets. At the end, on its own sandbox, ZooKeeper's and the broker's heap after a
full collection, their peak RSS and the disk their data dirs use.

Prints a Markdown table; exits 1 when a step failed or `verify` did not find every offset IN_SYNC.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
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
                if name == "py-spy":
                    continue
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


def run_step(name: str, argv: list[str], work: Path, wrapper: list[str] = ()) -> tuple[dict, dict, Sampler]:
    """One zk2kafka command as a child process: wall time, exit code, its JSON, and its memory over time.

    `wrapper` runs in front of the interpreter (py-spy record ... --): its own process is not counted."""
    log = work / f"{re.sub(r'[^a-z-]+', '_', name)}.log"
    with open(log, "w") as err:
        start = time.perf_counter()
        child = subprocess.Popen([*wrapper, sys.executable, "-m", "migrate", *argv, "--json"], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=err, text=True)
        sampler = Sampler(child.pid)
        sampler.start()
        out, _ = child.communicate()
        seconds = time.perf_counter() - start
        sampler.done.set()
        sampler.join()
    try:   # py-spy, when it wraps the command, says what it does on stdout too
        result = json.loads("\n".join(line for line in out.splitlines() if not line.startswith("py-spy> ")))
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
    ap.add_argument("--dual-commit", action="store_true",
                    help="the road writing both stores: `diff --zk-snapshot SCAN --dual-commit` and `migrate` "
                         "keeping ZooKeeper in agreement (each znode fenced by reading, or written conditioned on "
                         "its version, and read back)")
    ap.add_argument("--rescan", action="store_true",
                    help="with --dual-commit: `diff` scans ZooKeeper again instead of reading the scan's snapshot")
    ap.add_argument("--zookeeper-heap", default="1g", help="the own sandbox's ZooKeeper heap (-Xmx)")
    ap.add_argument("--broker-heap", default="2g", help="the own sandbox's broker heap (-Xmx)")
    ap.add_argument("--seeders", type=int, default=2, help="processes seeding ZooKeeper, each a slice of groups")
    ap.add_argument("--spark-master", metavar="URL",
                    help="also run the same diff on this Spark master, beside local[*]; `standalone` starts a "
                         "master and a worker from the pyspark install for it (stopped at the end)")
    ap.add_argument("--worker-memory", default="2g", help="the standalone worker's --memory (executors')")
    ap.add_argument("--spark-shared", action="store_true",
                    help="the diff on --spark-master with --spark-shared-dir (a directory under the work dir, which a "
                         "worker on this machine sees): its executors read the snapshots and write the plan")
    ap.add_argument("--until", choices=("scan", "diff", "migrate", "verify"), default="verify",
                    help="the last step run (the total counts those run)")
    ap.add_argument("--profile-migrate", type=Path, metavar="FILE",
                    help="run migrate under `py-spy record --idle --subprocesses` into FILE (collapsed stacks)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    if (args.zookeeper is None) != (args.bootstrap_server is None):
        ap.error("give both --zookeeper and --bootstrap-server, or neither (a sandbox is started)")
    if args.rescan and not args.dual_commit:
        ap.error("--rescan goes with --dual-commit: the road writing Kafka alone plans from a snapshot")

    run = f"scale{uuid.uuid4().hex[:6]}"
    layout = Layout(run, args.topics, args.partitions, args.messages)
    offsets = args.groups * args.partitions
    work = Path(tempfile.mkdtemp(prefix="zk2kafka-bench-scale-"))
    cluster = spark = None
    stores_used = {}
    try:
        cluster, zookeeper, bootstrap = stores(args.zookeeper, args.bootstrap_server, work,
                                               zk_heap=args.zookeeper_heap, broker_heap=args.broker_heap)
        t0 = time.perf_counter()
        make_topics(bootstrap, layout)
        seed_seconds = seed(zookeeper, layout, f"{run}-", args.groups, args.seeders)
        _say(f"{offsets:,} offsets ({args.groups:,} groups x {args.partitions} partitions on {args.topics} topics) "
             f"seeded in {time.perf_counter() - t0:.0f}s (ZooKeeper {seed_seconds:.0f}s); "
             f"ZooKeeper {zookeeper}, Kafka {bootstrap}")
        master = args.spark_master
        if master == "standalone":
            from migrate.testing.spark import StandaloneSpark

            spark = StandaloneSpark(work / "spark", cores=os.cpu_count() or 2, memory=args.worker_memory)
            master = spark.start()
            _say(f"Spark standalone master {master}, one worker ({args.worker_memory})")

        state = work / "state"
        common = ["--zookeeper", zookeeper, "--bootstrap-server", bootstrap, "--state-dir", str(state),
                  "--group", f"{run}-.*", "--zk-readers", str(args.zk_readers)]
        migrate_name = f"migrate --execute --plan --parallelism {args.parallelism} --writers {args.writers}"
        source = "" if args.rescan else " --zk-snapshot" + (" --dual-commit" if args.dual_commit else "")

        def diff_args(scan: dict) -> list[str]:
            if args.rescan:
                return []
            return ["--zk-snapshot", str(scan.get("run")), *(["--dual-commit"] if args.dual_commit else [])]

        steps = [("scan", lambda _: []), (f"diff{source}", diff_args)]
        if master:
            shared = ["--spark-shared-dir", str(work / "spark-shared")] if args.spark_shared else []
            if shared:
                Path(shared[1]).mkdir()
            steps.append((f"diff{source} --spark-master {master}{' --spark-shared-dir DIR' if shared else ''}",
                          lambda scan: [*diff_args(scan), "--spark-master", master, *shared]))
        steps += [(migrate_name, lambda diff: ["--execute", "--plan", str(diff.get("run")),
                                               "--parallelism", str(args.parallelism),
                                               "--writers", str(args.writers)]),
                  ("verify --run", lambda migrate: ["--run", str(migrate.get("run"))])]
        order = ("scan", "diff", "migrate", "verify")
        steps = [step for step in steps if order.index(step[0].split()[0]) <= order.index(args.until)]
        rows, ok, results = [], True, {}
        for name, extra in steps:
            _say(f"zk2kafka {name}")
            # Each step reads the result of the one the cutover runs before it (the standalone diff
            # reads the scan, like the local one; migrate writes the local diff's plan).
            before = {"scan": None, "diff": "scan", "migrate": "diff", "verify": "migrate"}[name.split()[0]]
            wrapper = []
            if name.startswith("migrate") and args.profile_migrate:
                # Not pausing the process for each sample: its time stays its own.
                wrapper = [str(Path(sys.executable).parent / "py-spy"), "record", "--idle", "--nonblocking",
                           "--subprocesses", "--rate", "20", "--format", "raw", "-o", str(args.profile_migrate), "--"]
            # On a Spark master the executors are the worker's children, not the command's.
            executors = Sampler(spark.servers[-1].pid) if spark and "--spark-master" in name else None
            if executors:
                executors.start()
            row, result, sampler = run_step(name, [name.split()[0], *common, *extra(results.get(before, {}))],
                                            work, wrapper)
            if executors:
                executors.done.set()
                executors.join()
                row["worker_jvm_peak_mib"] = round(executors.peak()[1] / MIB)
            results.setdefault(name.split()[0], result)
            if name.startswith("migrate"):
                row.update(write_phase(state, sampler), written=result.get("written"),
                           state=result.get("state"))
                ok &= row["exit_code"] == 0 and row["state"] == "done" and row["written"] == offsets
            elif name.startswith("verify"):
                row["verified"] = result.get("verified")
                ok &= row["exit_code"] == 0 and bool(row["verified"])
            else:
                ok &= row["exit_code"] == 0
            if name.startswith("diff"):
                row.update(_diff_figures(state, result, results.get("diff")))
                ok &= row.get("same_plan", True)
            row["offsets_per_s"] = round(offsets / row["seconds"]) if row["seconds"] else None
            rows.append(row)
            _say(f"  exit {row['exit_code']} in {row['seconds']}s, peak Pss Python {row['python_peak_mib']} MiB, "
                 f"JVM {row['jvm_peak_mib']} MiB")
        if cluster:
            stores_used = store_figures(cluster)
    finally:
        if spark:
            spark.stop()
        if cluster:
            cluster.stop()
        shutil.rmtree(work / "sandbox", ignore_errors=True)   # ten million offsets are gigabytes

    figures = {"run": run, "groups": args.groups, "partitions": args.partitions, "offsets": offsets,
               "cores": os.cpu_count(), "steps": rows, "ok": ok, "stores": stores_used,
               "total_s": round(sum(r["seconds"] for r in rows if "spark-master" not in r["step"]), 1)}
    print(render(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return figures


def _diff_figures(state: Path, result: dict, first: dict | None) -> dict:
    """Spark's start and diff seconds from the diff's summary; for a second diff (on another master),
    whether its plan is the first one's, row for row."""
    import pyarrow.parquet as pq

    reports = state / "reports"
    summary = json.loads((reports / str(result.get("run")) / "summary.json").read_text())
    spark = summary["spark"]
    figures = {"spark_master": spark["master"], "spark_start_s": round(spark["startup_seconds"], 1),
               "spark_diff_s": round(spark["diff_seconds"], 1), "counts": summary["counts"]}
    if first is not None:
        plans = [pq.read_table(reports / str(r.get("run")) / "plan.parquet") for r in (first, result)]
        figures["same_plan"] = plans[0].equals(plans[1])
    return figures


def seed(zookeeper: str, layout: Layout, prefix: str, groups: int, seeders: int) -> float:
    """Seed the groups' znodes from `seeders` processes, each a slice of the groups (kazoo's
    transactions cost Python time per znode: one process seeds some 40,000 a second); returns the
    seconds."""
    start = time.perf_counter()
    seeders = max(1, min(seeders, groups))
    share = -(-groups // seeders)
    slices = [(first, min(share, groups - first)) for first in range(0, groups, share)]
    if len(slices) == 1:
        seed_zookeeper(zookeeper, layout, prefix, groups)
    else:
        with ProcessPoolExecutor(len(slices)) as pool:
            done = [pool.submit(seed_zookeeper, zookeeper, layout, prefix, n, first=first) for first, n in slices]
            for future in done:
                future.result()
    return time.perf_counter() - start


def store_figures(cluster) -> dict:
    """ZooKeeper's and each broker's heap after a full collection (jcmd GC.run, then GC.heap_info:
    what the data they hold needs), their peak resident memory and the disk their data dirs use."""
    figures = {}
    for server in cluster.servers:
        if not server.alive():
            continue
        name, pid = server.name, server.pid
        entry = {"heap_limit": server.heap}
        try:
            subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=300, check=True)
            info = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True,
                                  timeout=60, check=True).stdout
            used = [int(k) for k in re.findall(r"used (\d+)K", info)]
            entry["heap_used_after_full_gc_mib"] = round(sum(used[:2]) / 1024)   # young + old (serial GC)
        except (OSError, subprocess.SubprocessError):
            entry["heap_used_after_full_gc_mib"] = None
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            entry["peak_rss_mib"] = round(int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024)
        except (OSError, AttributeError):
            entry["peak_rss_mib"] = None
        data = server.workdir / "data"
        # Blocks, not sizes: the broker preallocates its index files sparse (10 MiB each, a few KiB used).
        entry["disk_mib"] = round(sum(f.stat().st_blocks * 512 for f in data.rglob("*") if f.is_file()) / MIB) \
            if data.is_dir() else None
        figures[name] = entry
    return figures


def render(figures: dict) -> str:
    lines = [f"\n{figures['offsets']:,} offsets ({figures['groups']:,} groups x {figures['partitions']} "
             f"partitions), {figures['cores']} cores\n",
             "| step | wall time | offsets/s | peak memory (Pss), Python | peak memory (Pss), Spark JVM | exit |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in figures["steps"]:
        jvm = f"{r['jvm_peak_mib']:,} MiB"
        if "worker_jvm_peak_mib" in r:
            jvm += f" (driver), {r['worker_jvm_peak_mib']:,} MiB (worker and executor)"
        lines.append(f"| `zk2kafka {r['step']}` | {r['seconds']:,} s | {r['offsets_per_s']:,} | "
                     f"{r['python_peak_mib']:,} MiB | {jvm} | {r['exit_code']} |")
        if "spark_diff_s" in r:
            same = {True: "; the plan the local diff's, row for row",
                    False: "; THE PLAN DIFFERS"}.get(r.get("same_plan"), "")
            lines.append(f"| Spark on {r['spark_master']}: start, diff | {r['spark_start_s']} s, "
                         f"{r['spark_diff_s']} s{same} | | | | |")
        if "write_phase_s" in r:
            lines.append(f"| the same run, write phase only | {r['write_phase_s']:,} s | "
                         f"{round(figures['offsets'] / r['write_phase_s']) if r['write_phase_s'] else 0:,} | "
                         f"{r['python_at_write_start_mib']:,} MiB at its start, {r['python_write_peak_mib']:,} "
                         f"MiB at its peak | | |")
    run = [r["step"].split()[0] for r in figures["steps"] if "spark-master" not in r["step"]]
    named = "the cutover's four steps" if len(run) == 4 else "the steps run"
    lines.append(f"| {named} ({', '.join('diff on local[*]' if x == 'diff' else x for x in run)}) | "
                 f"{figures['total_s']:,} s | | | | |")
    if figures.get("stores"):
        lines += ["", "| store | heap limit | heap used after a full GC | peak RSS | disk |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for name, st in figures["stores"].items():
            lines.append(f"| {name} | {st['heap_limit']} | {st['heap_used_after_full_gc_mib']} MiB | "
                         f"{st['peak_rss_mib']} MiB | {st['disk_mib']} MiB |")
    return "\n".join(lines)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(0 if main()["ok"] else 1)
