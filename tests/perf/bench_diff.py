"""Benchmark: the PySpark diff stage (`run_diff`, which writes the plan to Parquet as it comes) on synthetic snapshots.

    python tests/perf/bench_diff.py --offsets 1000000     # 10,000 groups x 100 partitions over 100 topics
    python tests/perf/bench_diff.py --offsets 100000 --master 'local[2]' --json diff.json
    python tests/perf/bench_diff.py --offsets 1000000 --compare   # and the three-shuffle query, same run

`--compare` runs the diff twice on the same snapshots, each in a fresh Python process (a cold JVM each):
first with the three-shuffle query the one-shuffle one replaced (tests/perf/joined_diff.py: a dedupe window and four
joins, three shuffles of the plan's rows), then with today's `offset_diff` (one window, one shuffle); it
checks that both plans hold the same rows, in the same order. The JVM's CPU time is reported beside the
wall time: on two shared cores it is the steadier figure. Spark's driver maps the class-data archive
`make install` made (migrate/diff/cds.py; the table says whether the JVM mapped it); `--no-class-data`
starts it without, as before the archive.

The snapshots are made directly with pyarrow (no ZooKeeper or Kafka): every group has `--partitions`
offsets spread over topics of `--topic-partitions` partitions each. Mostly MIGRATE; every 10th group has
committed offsets in Kafka (IN_SYNC, CONFLICT, TAKEN_OVER, plus one KAFKA_ONLY partition), some groups have live
consumers in ZooKeeper or Kafka, one group in 97 lost a topic, and a few values are out of range,
malformed or unreadable.

Peak memory, both for the diff stage only (the synthesis is not counted):
- driver: the VmHWM of this Python process, reset through /proc/self/clear_refs after the snapshots
  are written (ru_maxrss, which cannot be reset, is reported too);
- Spark JVM heap: the sum of the heap pools' peak use (MemoryPoolMXBean) and the heap's limit (-Xmx,
  spark.driver.memory), from the gateway JVM after the run;
- Spark JVM: the VmHWM of the py4j gateway JVM, which in local mode runs every task. getrusage
  (RUSAGE_CHILDREN) cannot measure it: it covers only children that have exited and been waited for,
  and the gateway lives until Python exits; it is reported only to show that (it reads 0: even the
  short launcher JVM spark-submit runs first is reaped by the gateway's shell, not by us). With a
  `spark://` master the executors' memory is not included.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from migrate.diff import cds
from migrate.diff.offset_diff import Policy
from migrate.diff.schema import PLAN_ORDER
from migrate.diff.run import run_diff
from migrate.kafka import takeover
from migrate.kafka.snapshot import COMMIT, GROUP, KAFKA_SCHEMA, OFFSET, PARTITION, REFUSED, not_authorized
from migrate.zk.reader import SCHEMA as ZK_SCHEMA


LOG_START, LOG_END = 1_000, 50_000_000
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
SECRET_TOPIC = "secret-topic"


def _mod(a, n: int):
    return pc.subtract(a, pc.multiply(pc.divide(a, n), n))  # int64 division truncates: a % n for a >= 0


def _is(a, n: int, r: int):
    return pc.equal(_mod(a, n), r)


def _named(prefix: str, numbers, width: int):
    return pc.binary_join_element_wise(prefix, pc.utf8_lpad(pc.cast(numbers, pa.string()), width, "0"), "")


def synthesize(groups: int, partitions: int, topics: int, topic_partitions: int) -> tuple[pa.Table, pa.Table]:
    """(zk, kafka) tables of ZK_SCHEMA and KAFKA_SCHEMA; the zk one has groups x partitions rows.

    Raises ValueError when a group's partitions do not fit into `topics` x `topic_partitions`.
    """
    slots = -(-partitions // topic_partitions)  # topics one group reads
    if slots + 1 > topics:  # +1: the KAFKA_ONLY offset goes to a topic the group does not read
        raise ValueError(f"{partitions} partitions per group need more than {topics} topics "
                         f"of {topic_partitions} partitions")
    n = groups * partitions
    i = pa.array(range(n), pa.int64())
    g, j = pc.divide(i, partitions), _mod(i, partitions)
    partition = pc.cast(_mod(j, topic_partitions), pa.int32())
    slot = pc.divide(j, topic_partitions)
    topic = _named("topic-", _mod(pc.add(g, slot), topics), 3)
    # One group in 97 reads a topic that has since been deleted: UNKNOWN_PARTITION.
    topic = pc.if_else(pc.and_(_is(g, 97, 5), pc.equal(slot, 0)), pa.scalar("deleted-topic"), topic)
    # One group in 89 reads a topic zk2kafka may not describe: TOPIC_NOT_AUTHORIZED.
    topic = pc.if_else(pc.and_(_is(g, 89, 7), pc.equal(slot, 0)), pa.scalar(SECRET_TOPIC), topic)
    group = _named("group-", g, 6)

    offset = pc.add(LOG_START, _mod(pc.multiply(i, 7919), LOG_END - LOG_START))
    # Row-level faults every prime-th row, so they do not line up with the group-level patterns (every
    # 10th group known to Kafka, ...) and hide behind IN_SYNC at every size.
    offset = pc.if_else(_is(i, 197, 0), pa.scalar(LOG_START // 2, pa.int64()), offset)     # BELOW_LOG_START
    offset = pc.if_else(_is(i, 199, 1), pa.scalar(LOG_END + 500, pa.int64()), offset)      # ABOVE_LOG_END
    malformed, unreadable = _is(i, 499, 2), _is(i, 997, 3)
    status = pc.if_else(malformed, pa.scalar("MALFORMED"), pc.if_else(unreadable, pa.scalar("UNREADABLE"),
                                                                      pa.scalar("OK")))
    raw = pc.if_else(malformed, pa.scalar("1.5E3"), pc.if_else(unreadable, pa.scalar(""),
                                                               pc.cast(offset, pa.string())))
    reason = pc.if_else(malformed, pa.scalar("not a decimal"), pc.if_else(unreadable, pa.scalar("NoAuth"),
                                                                          pa.scalar(None, pa.string())))
    offset = pc.if_else(pc.or_(malformed, unreadable), pa.scalar(None, pa.int64()), offset)
    # Every topic was created a day before the offsets were written; one offset in 991 is older than its
    # topic (ZooKeeper's /brokers/topics/<topic> says when): TOPIC_RECREATED.
    created = pc.if_else(_is(i, 991, 4), pa.scalar(T0 + dt.timedelta(hours=1)), pa.scalar(T0 - dt.timedelta(days=1)))
    live_zk = _is(g, 50, 1)  # old consumers still registered: GROUP_ACTIVE_ZK
    consumers = pc.if_else(live_zk, pa.scalar(2, pa.int32()), pa.scalar(0, pa.int32()))
    owned = pc.if_else(live_zk, pa.scalar(partitions, pa.int32()), pa.scalar(0, pa.int32()))
    path = pc.binary_join_element_wise("/consumers/", group, "/offsets/", topic, "/",
                                       pc.cast(partition, pa.string()), "")
    zk = pa.table({
        "group": group, "topic": topic, "partition": partition, "raw": raw, "offset": offset, "status": status,
        "reason": reason, "mtime": pa.repeat(pa.scalar(T0, ZK_SCHEMA.field("mtime").type), n),
        "ctime": pa.repeat(pa.scalar(T0, ZK_SCHEMA.field("ctime").type), n),
        "version": pa.repeat(pa.scalar(1, pa.int32()), n),
        "mzxid": pa.array(range(1, n + 1), ZK_SCHEMA.field("mzxid").type),   # each znode's own last change
        "layout": pa.repeat(pa.scalar("standard"), n),
        "path": path, "zk_consumers": consumers, "zk_owned_partitions": owned,
        "topic_ctime": pc.cast(created, ZK_SCHEMA.field("topic_ctime").type),
    }, schema=ZK_SCHEMA)
    return zk, _kafka(zk, g, i, groups, partitions, topics, topic_partitions, slots)


def _kafka(zk: pa.Table, g, i, groups: int, partitions: int, topics: int, topic_partitions: int,
           slots: int) -> pa.Table:
    rows = [{"kind": PARTITION, "topic": f"topic-{t:03d}", "partition": p, "log_start": LOG_START,
             "log_end": LOG_END, "leader": 0} for t in range(topics) for p in range(topic_partitions)]
    rows.append({"kind": REFUSED, "topic": SECRET_TOPIC, "error": not_authorized(SECRET_TOPIC)})
    for n in range(groups):
        known = n % 10 == 0  # every 10th group already commits to Kafka; one in 100 of those is live
        live = n % 100 == 10
        rows.append({"kind": GROUP, "group": f"group-{n:06d}", "members": 3 if live else 0,
                     "group_state": ("Stable" if live else "Empty") if known else None,
                     "protocol_type": "consumer" if known else None})
        if known:  # an offset for a topic the group never had in ZooKeeper: KAFKA_ONLY
            rows.append({"kind": OFFSET, "group": f"group-{n:06d}", "topic": f"topic-{(n + slots) % topics:03d}",
                         "partition": 0, "committed_offset": 7, "metadata": ""})
    known = _is(g, 10, 0)
    committed = zk.filter(known).select(["group", "topic", "partition", "offset"])
    # Four in five already equal (IN_SYNC), the rest differ (CONFLICT).
    ahead = _is(i.filter(known), 5, 0)
    offset = pc.if_else(ahead, pc.add(committed["offset"], 50), committed["offset"])
    offset = pc.fill_null(offset, 0)
    kafka_offsets = pa.table({
        "kind": pa.repeat(pa.scalar(OFFSET), committed.num_rows), "group": committed["group"],
        "topic": committed["topic"], "partition": committed["partition"], "committed_offset": offset,
        "metadata": pa.repeat(pa.scalar(""), committed.num_rows)})
    # When the values that differ were committed (the snapshot's `commit` rows, the takeover rule's
    # input): every other one by the consumer group after ZooKeeper's last write, T0 (TAKEN_OVER), the
    # rest before it (CONFLICT).
    differ = kafka_offsets.filter(ahead)
    written = int(T0.timestamp() * 1000)
    later = _is(pa.array(range(differ.num_rows), pa.int64()), 2, 0)
    commits = pa.table({
        "kind": pa.repeat(pa.scalar(COMMIT), differ.num_rows), "group": differ["group"],
        "topic": differ["topic"], "partition": differ["partition"],
        "committed_offset": differ["committed_offset"],
        "commit_ms": pc.if_else(later, pa.scalar(written + 600_000), pa.scalar(written - 600_000)),
        "commit_by": pa.repeat(pa.scalar(takeover.MEMBER), differ.num_rows),
        "commit_who": pa.repeat(pa.scalar("by member m-1 of generation 4, assigned it (protocol type consumer)"),
                                differ.num_rows)})
    small = pa.Table.from_pylist(rows, schema=KAFKA_SCHEMA)
    return pa.concat_tables([small, kafka_offsets, commits], promote_options="default").cast(KAFKA_SCHEMA)


def _vm_hwm_mib(pid: int | str) -> float | None:
    """Peak resident set (VmHWM) of a process in MiB, or None when /proc does not say."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _reset_peak(pid: int | str) -> bool:
    """Reset a process's VmHWM to its current RSS (Linux >= 4.0); False when not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _gateway_pid() -> int | None:
    """The pid of the py4j gateway JVM, or None before one was started (or if it is not a JVM)."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None:
        return None
    # pyspark starts bin/spark-submit, whose shell execs into java with the same pid; should that ever
    # change, report nothing rather than a shell's memory.
    try:
        return proc.pid if Path(f"/proc/{proc.pid}/comm").read_text().strip() == "java" else None
    except OSError:
        return None


def _heap_mib() -> tuple[float | None, float | None]:
    """(peak heap used, heap limit) of the gateway JVM in MiB; (None, None) without one."""
    from pyspark import SparkContext

    if SparkContext._gateway is None:
        return None, None
    management = SparkContext._gateway.jvm.java.lang.management
    pools = [pool for pool in management.ManagementFactory.getMemoryPoolMXBeans()
             if str(pool.getType()) == "Heap memory"]
    peak = sum(pool.getPeakUsage().getUsed() for pool in pools)   # >= the heap's own peak
    limit = SparkContext._gateway.jvm.java.lang.Runtime.getRuntime().maxMemory()
    return round(peak / 2**20, 1), round(limit / 2**20, 1)


def _maps(pid: int, path: Path) -> bool:
    try:
        return str(path) in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _cpu_seconds(pid: int | str) -> float | None:
    """User + system CPU time a process has used, in seconds, or None when /proc does not say."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(zk_path: Path, kafka_path: Path, plan_path: Path, master: str) -> dict:
    """Run the diff and write its plan; returns timings (s), peaks (MiB) and the plan's status counts."""
    driver_reset = _reset_peak("self")
    jvm = _gateway_pid()
    if jvm is not None:  # a JVM from an earlier session in this process: count this run only
        _reset_peak(jvm)
    jvm_cpu_before = (_cpu_seconds(jvm) or 0.0) if jvm is not None else 0.0
    started = time.perf_counter()
    result = run_diff(zk_path, kafka_path, Policy(), master, plan_path)   # writes the plan as it comes
    total = time.perf_counter() - started
    jvm = _gateway_pid()
    heap_peak, heap_limit = _heap_mib()
    # CPU time says what the run cost when other processes share the cores and stretch the wall time.
    jvm_cpu = _cpu_seconds(jvm) if jvm is not None else None
    archive = cds.archive_path()
    counts = Counter()
    for batch in pq.ParquetFile(plan_path).iter_batches(columns=["status"]):
        counts.update(batch.column("status").to_pylist())
    return {
        "master": master, "plan_rows": result.rows, "counts": dict(sorted(counts.items())),
        "spark_startup_s": result.startup_seconds, "diff_s": result.diff_seconds, "total_s": round(total, 3),
        "startup_share": round(result.startup_seconds / total, 3),
        "plan_parquet_mib": round(plan_path.stat().st_size / 2**20, 1),
        "driver_peak_rss_mib": round(_vm_hwm_mib("self"), 1) if driver_reset else None,
        "driver_ru_maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "jvm_pid": jvm,
        # Read from the JVM's own mappings, not from what it was told.
        "class_data_archive": str(archive) if jvm is not None and _maps(jvm, archive) else None,
        "jvm_peak_rss_mib": round(_vm_hwm_mib(jvm), 1) if jvm is not None else None,
        "jvm_heap_peak_mib": heap_peak, "jvm_heap_limit_mib": heap_limit,
        "jvm_cpu_s": None if jvm_cpu is None else round(jvm_cpu - jvm_cpu_before, 1),
        "load_average_1m": round(os.getloadavg()[0], 1),
        "rusage_children_maxrss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }


QUERIES = {"joins": "the three-shuffle joins (tests/perf/joined_diff.py)",
           "current": "offset_diff: one shuffle"}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--offsets", type=int, default=1_000_000, help="ZooKeeper offsets (rows); sets --groups")
    ap.add_argument("--groups", type=int, help="groups (default: offsets / partitions)")
    ap.add_argument("--partitions", type=int, default=100, help="partitions per group")
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--topic-partitions", type=int, default=10, help="partitions per topic")
    ap.add_argument("--master", default="local[*]", help="Spark master (JVM peak covers local mode only)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--compare", action="store_true",
                    help="run the three-shuffle query and today's, each in a fresh process, on the same snapshots")
    ap.add_argument("--no-class-data", action="store_true",
                    help="start Spark without the class-data archive `make install` made (a cache dir without one)")
    ap.add_argument("--query", choices=sorted(QUERIES), default="current", help=argparse.SUPPRESS)
    ap.add_argument("--snapshots", type=Path, help=argparse.SUPPRESS)   # --compare's children: zk/kafka.parquet there
    args = ap.parse_args(argv)
    if args.no_class_data:   # --compare's children inherit it
        os.environ["ZK2KAFKA_CACHE_DIR"] = tempfile.mkdtemp(prefix="zk2kafka-no-class-data-")
    groups = args.groups or max(1, args.offsets // args.partitions)

    with tempfile.TemporaryDirectory(prefix="zk2kafka-bench-diff-") as tmp:
        tmp = Path(tmp)
        if args.snapshots:
            zk_path, kafka_path, synth = args.snapshots / "zk.parquet", args.snapshots / "kafka.parquet", 0.0
            offsets, kafka_rows = (pq.ParquetFile(p).metadata.num_rows for p in (zk_path, kafka_path))
        else:
            t0 = time.perf_counter()
            zk, kafka = synthesize(groups, args.partitions, args.topics, args.topic_partitions)
            zk_path, kafka_path = tmp / "zk.parquet", tmp / "kafka.parquet"
            # One row group per 64 groups, as the scan writes them (a batch of ZkOffsetReader.group_batch
            # groups at a time): Spark reads a file's row groups in parallel, one task per split.
            pq.write_table(zk, zk_path, row_group_size=64 * args.partitions)
            pq.write_table(kafka, kafka_path)
            synth = time.perf_counter() - t0
            offsets, kafka_rows = zk.num_rows, kafka.num_rows
            del zk, kafka
            pa.default_memory_pool().release_unused()  # so the driver's peak below is the diff's, not the synthesis'
            print(f"synthesized {offsets:,} ZooKeeper offsets and {kafka_rows:,} Kafka rows in {synth:.1f}s",
                  file=sys.stderr)
        if args.compare:
            return _compare(args, tmp, offsets, groups, kafka_rows)
        if args.query == "joins":
            from joined_diff import joined_diff

            import migrate.diff.run

            keys = [name for name, _ in PLAN_ORDER]

            def joined(zk, kafka, policy, carry, splits):
                # The three-shuffle query, ordered by Spark as run_diff ordered that query.
                return joined_diff(zk, kafka, policy).orderBy(*keys)

            migrate.diff.run.offset_diff = joined
        plan_path = (args.snapshots or tmp) / f"plan-{args.query}.parquet"
        figures = measure(zk_path, kafka_path, plan_path, args.master)

    # Each ZooKeeper offset is one plan row, plus one Kafka-only partition per group known to Kafka.
    expected = offsets + len(range(0, groups, 10))
    if figures["plan_rows"] != expected:
        raise AssertionError(f"the plan has {figures['plan_rows']:,} rows, expected {expected:,}")
    figures = {"offsets": offsets, "groups": groups, "partitions_per_group": args.partitions,
               "topics": args.topics, "kafka_rows": kafka_rows, "cores": os.cpu_count(),
               "synthesize_s": round(synth, 3), "query": args.query, **figures}
    print(f"\n{offsets:,} offsets ({groups:,} groups x {args.partitions} partitions over {args.topics} topics), "
          f"{kafka_rows:,} Kafka snapshot rows, master {args.master}, {os.cpu_count()} cores, "
          f"query: {QUERIES[args.query]}\n")
    rows = [("Spark start-up", f"{figures['spark_startup_s']:.1f} s ({figures['startup_share']:.0%} of total)"),
            ("diff (join, statuses, sorted plan to Parquet, per-group figures)",
             f"{figures['diff_s']:.1f} s ({figures['plan_parquet_mib']} MiB of Parquet)"),
            ("total", f"{figures['total_s']:.1f} s"),
            ("peak RSS, Python driver", _mib(figures["driver_peak_rss_mib"])),
            ("peak RSS, Spark JVM", _mib(figures["jvm_peak_rss_mib"])),
            ("Spark JVM CPU time (start-up included)", f"{figures['jvm_cpu_s']} s"),
            ("load average (1 min) at the end, this run's JVM included", f"{figures['load_average_1m']}"),
            ("Spark class-data archive (migrate/diff/cds.py)",
             "mapped" if figures["class_data_archive"] else "none (`python -m migrate.diff.cds` makes it)"),
            ("Spark JVM heap: peak used / limit",
             f"{_mib(figures['jvm_heap_peak_mib'])} / {_mib(figures['jvm_heap_limit_mib'])}")]
    print("| step | figure |\n| --- | ---: |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print("\nstatuses: " + ", ".join(f"{k} {v:,}" for k, v in figures["counts"].items()))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return figures


def _compare(args, tmp: Path, offsets: int, groups: int, kafka_rows: int) -> dict:
    """Each query in a fresh process on the snapshots in `tmp`; the plans must hold the same rows."""
    runs = {}
    for query in QUERIES:
        out = tmp / f"{query}.json"
        command = [sys.executable, __file__, "--offsets", str(args.offsets), "--partitions", str(args.partitions),
                   "--topics", str(args.topics), "--master", args.master, "--snapshots", str(tmp),
                   "--query", query, "--json", str(out)]
        if args.groups:
            command += ["--groups", str(args.groups)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        runs[query] = json.loads(out.read_text())
    same = _same_rows(tmp / "plan-joins.parquet", tmp / "plan-current.parquet")
    print(f"\n{offsets:,} offsets ({groups:,} groups x {args.partitions} partitions), {kafka_rows:,} Kafka rows, "
          f"master {args.master}, {os.cpu_count()} cores, a fresh process and JVM each, in this order\n")
    print("| query | total | Spark start-up | diff | JVM CPU | load (1 min) | peak RSS JVM | JVM heap peak / limit |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for query, f in runs.items():
        print(f"| {QUERIES[query]} | {f['total_s']:.1f} s | {f['spark_startup_s']:.1f} s | {f['diff_s']:.1f} s "
              f"| {f['jvm_cpu_s']} s | {f['load_average_1m']} | {_mib(f['jvm_peak_rss_mib'])} "
              f"| {_mib(f['jvm_heap_peak_mib'])} / {_mib(f['jvm_heap_limit_mib'])} |")
    print(f"\nthe two plans: {'the same rows in the same order' if same else 'DIFFERENT'} "
          f"({runs['current']['plan_rows']:,} rows)")
    figures = {"offsets": offsets, "groups": groups, "runs": runs, "same_plan": same}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    if not same:
        raise AssertionError("the three-shuffle query and today's planned different rows")
    return figures


def _same_rows(one: Path, other: Path) -> bool:
    """Whether two plan files hold equal rows in equal order (compared a batch at a time)."""
    with pq.ParquetFile(one) as a, pq.ParquetFile(other) as b:
        if a.metadata.num_rows != b.metadata.num_rows or a.schema_arrow != b.schema_arrow:
            return False
        return all(x.equals(y) for x, y in zip(a.iter_batches(batch_size=65_536), b.iter_batches(batch_size=65_536)))


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} MiB"


if __name__ == "__main__":
    main()
