"""Benchmark: what reading the takeover rule's commit times costs: `group_clock.read_clocks` over G groups x
P partitions of offsets committed from outside, against the simplest reads of the same records, in one run.

    python tests/perf/bench_commit_clocks.py                          # 10,000 groups x 100 partitions = 1,000,000
    python tests/perf/bench_commit_clocks.py --groups 1000            # 100,000 commit records, for the slope
    python tests/perf/bench_commit_clocks.py --runs 5 --json clocks.json
    python tests/perf/bench_commit_clocks.py --no-crc-rows              # what kafka-python's CRC check costs
    python tests/perf/bench_commit_clocks.py --runs 2 --no-crc-rows --only-all-groups
    python tests/perf/bench_commit_clocks.py --bootstrap-server HOST:9092 --groups 100 --partitions 10

Starts its own sandbox (ZooKeeper and a ZooKeeper-mode Kafka 3.9 broker with a `--broker-heap` of 2 GB, since
the broker keeps every committed offset in memory, and `--offsets-partitions` 50 partitions of
__consumer_offsets, Kafka's default) unless --bootstrap-server is given. It creates one topic of
`--partitions` partitions and commits an offset of every partition for each of `--groups` groups, as a
commit from outside does (no member, metadata "someone"), with zk2kafka's own pipelined writer
(`KafkaOffsetWriter.commit_many`): G x P commit records in __consumer_offsets, nothing else in them on its
own sandbox. Then each method reads them, `--runs` times, each run a child process of its own (a fresh
interpreter or JVM, so its peak RSS is its own):

- read_clocks, all groups: `group_clock.read_clocks(admin, every group, budget=--budget)`, as ready-for-kraft
  and the Kafka snapshot call it (each involved partition of __consumer_offsets from its start to its end,
  every record's key parsed, the asked groups' values too). Timed in the child around the call alone: the
  describe of __consumer_offsets, the reader's start and the read (the gate's process is running already);
  it must return every group with all its partitions' commit times.
- read_clocks, `--selected` groups: the same call for the first few groups only; it reads only the
  partitions of __consumer_offsets that hold them.
- kafka-python consumer, no parsing: the floor of the same client: a KafkaConsumer (the same defaults as
  read_clocks') assigned the same partitions, from the start to the end offsets, counting records. Timed
  the same way, from the consumer's start.
- Kafka's console consumer with its offsets formatter (unless --skip-console): what an operator would run,
  `kafka-console-consumer.sh --topic __consumer_offsets --from-beginning --formatter
  org.apache.kafka.tools.consumer.OffsetsMessageFormatter --max-messages N`, N the records the topic holds,
  with the JVM options of kafka-run-class.sh, its output to a file. It reads every partition of the topic
  (it cannot be given a set), and prints every record as text. Wall time of the JVM, its start and its
  group join included; the seconds from its first line out are beside.

- with --no-crc-rows, read_clocks and the plain consumer again with kafka-python's check_crcs=False (a what-if,
  patched here in the child, not in the product): what the CRC-32C check of every record batch costs, in pure
  Python unless the crc32c package is installed (the figures say which). --only-all-groups leaves out the
  --selected row, the console consumer and the shipped budgets.

Then read_clocks over all groups once at each of `--shipped-budgets` (sync's 10 s, the snapshot's 15 s,
ready-for-kraft's 30 s): whether it told the commit times within the budget, or nothing, and why.

Figures: records read (end minus start offsets of the partitions read, counted before each run), seconds
(min/median/max over the runs), records/s at the median, peak RSS of the reading process (VmHWM of a Python
child; the JVM's from wait4), and the host: cores, load average before and after each method, and the
seconds a fixed Python loop of 10 million additions took before and after (docs/performance.md, "How to
read these figures"). Prints Markdown tables; exits 1 when a method failed or read_clocks did not return
every group's commit times. Bounded: every child is killed after --timeout seconds; its own sandbox is
stopped at the end, also on failure. On a cluster given with --bootstrap-server the groups and the topic are
left behind.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench_migrate import TOOL_JVM_OPTS, TOOLS_LOG4J   # Kafka's tool JVM settings, as bin/ gives them
from kafka import KafkaConsumer, TopicPartition

ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = Path(os.environ.get("ZK2KAFKA_CACHE_DIR", "~/.cache/zk2kafka")).expanduser()
CONSOLE_MAIN = "org.apache.kafka.tools.consumer.ConsoleConsumer"
FORMATTER = "org.apache.kafka.tools.consumer.OffsetsMessageFormatter"
OFFSETS_TOPIC = "__consumer_offsets"
SHIPPED = {10.0: "sync", 15.0: "diff/migrate (the Kafka snapshot)", 30.0: "ready-for-kraft"}


def group_name(prefix: str, i: int) -> str:
    return f"{prefix}{i:06d}"


def host_loop() -> float:
    """Seconds a fixed loop of 10 million additions takes: the host's speed (docs/testing.md)."""
    t = time.perf_counter()
    s = 0
    for i in range(10_000_000):
        s += i
    return round(time.perf_counter() - t, 2)


def _status_mib(field: str, pid: str = "self") -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


# ---------------------------------------------------------------------------------------------- the children

def child_clocks(bootstrap: str, prefix: str, groups: int, partitions: int, budget: float,
                 check_crcs: bool = True) -> dict:
    """read_clocks over groups 0..groups-1, timed around the call; checks every group came back whole.

    check_crcs=False: a what-if, read_clocks' reader made with KafkaConsumer(check_crcs=False) (patched
    here, not in the product)."""
    import functools

    from migrate.connection import Connection
    from migrate.kafka import group_clock
    from migrate.kafka.client import open_admin

    if not check_crcs:
        group_clock.KafkaConsumer = functools.partial(KafkaConsumer, check_crcs=False)

    names = [group_name(prefix, i) for i in range(groups)]
    admin = open_admin(Connection(bootstrap_server=bootstrap), client_id="zk2kafka-bench-clocks")
    try:
        rss_before = _status_mib("VmRSS")
        t0 = time.perf_counter()
        clocks, why = group_clock.read_clocks(admin, names, budget=budget)
        seconds = time.perf_counter() - t0
    finally:
        admin.close()
    whole = sum(1 for g in names if g in clocks and len(clocks[g].partitions) == partitions)
    return {"seconds": seconds, "why": why, "groups_told": len(clocks), "groups_whole": whole,
            "ok": why is None and whole == groups, "rss_before_mib": rss_before,
            "peak_rss_mib": _status_mib("VmHWM")}


def child_consumer(bootstrap: str, prefix: str, groups: int, budget: float, check_crcs: bool = True) -> dict:
    """A plain KafkaConsumer over the same partitions read_clocks reads, start to end, records counted only."""
    from migrate.kafka.group_clock import partition_for

    rss_before = _status_mib("VmRSS")
    t0 = time.perf_counter()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             client_id="zk2kafka-bench-plain", check_crcs=check_crcs)
    try:
        count = len(consumer.partitions_for_topic(OFFSETS_TOPIC) or ())
        tps = [TopicPartition(OFFSETS_TOPIC, p)
               for p in sorted({partition_for(group_name(prefix, i), count) for i in range(groups)})]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        left = {tp for tp in tps if end[tp] > 0}
        records = 0
        deadline = time.monotonic() + budget
        while left and time.monotonic() < deadline:
            for records_of in consumer.poll(timeout_ms=500).values():
                records += len(records_of)
            left = {tp for tp in left if consumer.position(tp) < end[tp]}
        seconds = time.perf_counter() - t0
    finally:
        consumer.close()
    return {"seconds": seconds, "records_seen": records, "ok": not left,
            "why": f"{len(left)} partition(s) unfinished" if left else None,
            "rss_before_mib": rss_before, "peak_rss_mib": _status_mib("VmHWM")}


# ------------------------------------------------------------------------------------------------ the parent

def _run_child(argv: list[str], timeout: float, stdout=subprocess.PIPE, first_output: Path | None = None
               ) -> tuple[int, str, str, float, float, float | None]:
    """(exit code, stdout, stderr, wall seconds, peak RSS MiB from wait4, seconds to the first byte in
    `first_output`); killed after `timeout` seconds."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    killer = threading.Timer(timeout, lambda: os.killpg(child.pid, signal.SIGKILL))
    killer.start()
    first = [None]
    watching = threading.Event()

    def watch():   # when the output file first grows: the JVM started, joined and read its first batch
        while not watching.is_set():
            if first_output.exists() and first_output.stat().st_size > 0:
                first[0] = time.perf_counter() - start
                return
            watching.wait(0.05)

    watcher = threading.Thread(target=watch, daemon=True) if first_output else None
    if watcher:
        watcher.start()
    out_chunks, err_chunks = [], []
    readers = [threading.Thread(target=lambda s=s, into=into: into.append(s.read()), daemon=True)
               for s, into in ((child.stdout, out_chunks), (child.stderr, err_chunks)) if s is not None]
    for r in readers:
        r.start()
    try:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    finally:
        killer.cancel()
        watching.set()
    seconds = time.perf_counter() - start
    for r in readers:
        r.join()
    return (child.returncode, "".join(out_chunks), "".join(err_chunks), seconds,
            round(usage.ru_maxrss / 1024, 1), first[0])


def _records(bootstrap: str, partitions: set[int] | None) -> int:
    """Records in those partitions of __consumer_offsets (all when None): end minus start offsets."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, client_id="zk2kafka-bench-count")
    try:
        every = consumer.partitions_for_topic(OFFSETS_TOPIC) or set()
        tps = [TopicPartition(OFFSETS_TOPIC, p) for p in sorted(every if partitions is None else partitions)]
        start, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        return sum(end[tp] - start[tp] for tp in tps)
    finally:
        consumer.close()


def _offsets_partitions(bootstrap: str, groups: list[str]) -> tuple[int, set[int]]:
    from migrate.kafka.group_clock import partition_for

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, client_id="zk2kafka-bench-count")
    try:
        count = len(consumer.partitions_for_topic(OFFSETS_TOPIC) or ())
    finally:
        consumer.close()
    return count, {partition_for(g, count) for g in groups}


def commit_groups(bootstrap: str, topic: str, prefix: str, groups: int, partitions: int, in_flight: int,
                  batch: int) -> float:
    """Commit offset 1+p of each partition p of `topic` for every group, from outside; returns the seconds."""
    from migrate.connection import Connection
    from migrate.kafka.client import open_admin
    from migrate.kafka.writer import KafkaOffsetWriter

    admin = open_admin(Connection(bootstrap_server=bootstrap), client_id="zk2kafka-bench-commit",
                       in_flight=2 * in_flight + 8)
    try:
        writer = KafkaOffsetWriter(admin, in_flight=in_flight)
        offsets = {(topic, p): 1 + p for p in range(partitions)}
        t0 = time.perf_counter()
        for first in range(0, groups, batch):
            answers = writer.commit_many({group_name(prefix, i): offsets
                                          for i in range(first, min(groups, first + batch))}, "someone")
            failed = {g: e for g, e in answers.items() if e is not None}
            if failed:
                g, e = next(iter(failed.items()))
                raise RuntimeError(f"{len(failed)} group(s) not committed, e.g. {g}: {type(e).__name__}: {e}")
        return time.perf_counter() - t0
    finally:
        admin.close()


def make_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="zk2kafka-bench")
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            described = admin.describe_topics([topic])
            if described and len(described[0]["partitions"]) == partitions:
                return
            time.sleep(0.2)
        raise RuntimeError(f"topic {topic} not ready in 60s")
    finally:
        admin.close()


def _load() -> float:
    return round(os.getloadavg()[0], 1)


def time_python(name: str, mode: str, bootstrap: str, prefix: str, groups: int, partitions: int, runs: int,
                budget: float, timeout: float, records_in: set[int]) -> dict:
    """`runs` children of `mode` (clocks | consumer): their seconds, records, peak RSS."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--bootstrap-server", bootstrap,
            "--prefix", prefix, "--groups", str(groups), "--partitions", str(partitions), "--budget", str(budget)]
    row = {"method": name, "groups": groups, "partitions_read": len(records_in), "load_before": _load(),
           "runs": [], "error": None}
    for _ in range(runs):
        records = _records(bootstrap, records_in)
        code, out, err, wall, maxrss, _ = _run_child(argv, timeout)
        try:
            result = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            result = {"ok": False, "why": f"exit {code}: {err.strip()[-500:]}"}
        result.update(records=records, wall_s=round(wall, 2), wait4_maxrss_mib=maxrss, exit_code=code)
        if "records_seen" in result and result["ok"] and result["records_seen"] != records:
            result.update(ok=False, why=f"read {result['records_seen']} records of {records}")
        row["runs"].append(result)
        _say(f"  {name}: {result.get('seconds', wall):.2f}s, {records:,} records, ok={result['ok']}"
             + (f" ({result['why']})" if result.get("why") else ""))
        if not result["ok"]:
            row["error"] = result.get("why")
            break
    row["load_after"] = _load()
    return _summarise(row)


def _printed(path: Path) -> int:
    """Records the offsets formatter printed: Kafka 3.9's prints each as a JSON object, with no line between."""
    mark, count, carry = b'{"key":', 0, b""
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            joined = carry + chunk
            count += joined.count(mark)
            # a mark cut by the chunk's end is counted with the next chunk; one already counted is not kept
            carry = joined[-(len(mark) - 1):] if not joined.endswith(mark) else b""
    return count


def time_console(bootstrap: str, jars: list[Path], work: Path, runs: int, timeout: float,
                 commit_records: int) -> dict:
    """Kafka's console consumer with the offsets formatter over the whole of __consumer_offsets."""
    log4j = work / "tools-log4j.properties"
    log4j.write_text(TOOLS_LOG4J)
    row = {"method": "kafka-console-consumer.sh --formatter OffsetsMessageFormatter (JVM start included)",
           "groups": None, "partitions_read": _offsets_partitions(bootstrap, [])[0],
           "load_before": _load(), "runs": [], "error": None}
    for n in range(runs):
        records = _records(bootstrap, None)
        out = work / f"console-{n}.txt"
        argv = ["java", *TOOL_JVM_OPTS, f"-Dlog4j.configuration=file:{log4j}", "-cp",
                os.pathsep.join(map(str, jars)), CONSOLE_MAIN, "--bootstrap-server", bootstrap,
                "--topic", OFFSETS_TOPIC, "--from-beginning", "--formatter", FORMATTER,
                "--max-messages", str(records), "--timeout-ms", str(int(timeout * 1000)),
                "--consumer-property", "enable.auto.commit=false"]
        with open(out, "w") as sink:
            code, _, err, wall, maxrss, first = _run_child(argv, timeout, stdout=sink, first_output=out)
        lines = _printed(out)
        out.unlink()
        # Its own group's join adds a record after N was counted: it may stop one record short of the end.
        ok = code == 0 and lines >= commit_records - 1
        result = {"seconds": wall, "from_first_line_s": None if first is None else round(wall - first, 2),
                  "records": records, "records_seen": lines, "ok": ok, "exit_code": code,
                  "peak_rss_mib": maxrss,
                  "why": None if ok else (f"exit {code}, {lines} of {commit_records} commits printed: "
                                          f"{err.strip()[-500:]}")}
        row["runs"].append(result)
        _say(f"  console consumer: {wall:.2f}s, {lines:,} offset commits printed of {records:,} records, ok={ok}")
        if not ok:
            row["error"] = result["why"]
            break
    row["load_after"] = _load()
    return _summarise(row)


def _summarise(row: dict) -> dict:
    done = [r for r in row["runs"] if r["ok"]]
    secs = sorted(r["seconds"] for r in done)
    row["ok"] = row["error"] is None and bool(done)
    if secs:
        median = statistics.median(secs)
        records = statistics.median(r["records"] for r in done)
        row.update(min_s=round(secs[0], 2), median_s=round(median, 2), max_s=round(secs[-1], 2),
                   records=int(records), records_per_s=round(records / median) if median else None,
                   peak_rss_mib=max(r.get("peak_rss_mib") or 0 for r in done),
                   rss_before_mib=max((r.get("rss_before_mib") or 0 for r in done), default=None))
        firsts = [r["from_first_line_s"] for r in done if r.get("from_first_line_s") is not None]
        if firsts:
            row["from_first_line_median_s"] = round(statistics.median(firsts), 2)
    return row


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap-server", help="an existing Kafka (default: a sandbox of its own)")
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=100, help="partitions of the topic: offsets per group")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each method")
    ap.add_argument("--selected", type=int, default=10,
                    help="also time read_clocks for this many groups only (0: not)")
    ap.add_argument("--budget", type=float, default=600.0, help="read_clocks' budget in the timed runs")
    ap.add_argument("--shipped-budgets", type=float, nargs="*", default=sorted(SHIPPED),
                    help="read_clocks over all groups once at each of these budgets")
    ap.add_argument("--skip-console", action="store_true", help="no console consumer row (no JVM)")
    ap.add_argument("--broker-heap", default="2g", help="the own sandbox's broker heap (-Xmx)")
    ap.add_argument("--offsets-partitions", type=int, default=50,
                    help="the own sandbox's offsets.topic.num.partitions (Kafka's default: 50)")
    ap.add_argument("--in-flight", type=int, default=32, help="commits in flight while seeding")
    ap.add_argument("--batch", type=int, default=1000, help="groups per commit_many call while seeding")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds before a child is killed")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--no-crc-rows", action="store_true",
                    help="also time read_clocks and the plain consumer with kafka-python's check_crcs=False "
                         "(a what-if: the pure-Python CRC-32C check of every batch left out)")
    ap.add_argument("--only-all-groups", action="store_true",
                    help="no --selected row, no console consumer, no shipped budgets: the all-groups reads only")
    ap.add_argument("--child", choices=("clocks", "consumer", "clocks-nocrc", "consumer-nocrc"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--prefix", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        crcs = not args.child.endswith("-nocrc")
        if args.child.startswith("clocks"):
            result = child_clocks(args.bootstrap_server, args.prefix, args.groups, args.partitions, args.budget,
                                  crcs)
        else:
            result = child_consumer(args.bootstrap_server, args.prefix, args.groups, args.budget, crcs)
        print(json.dumps(result))
        return result
    command = "python tests/perf/bench_commit_clocks.py " + " ".join(sys.argv[1:] if argv is None else argv)

    figures: dict = {"command": command.strip(), "groups": args.groups, "partitions": args.partitions,
                     "commit_records": args.groups * args.partitions, "cores": os.cpu_count(),
                     "uptime_before": _uptime(), "loop_before_s": host_loop(), "kafka_python_crc32c": _crc32c()}
    run = f"clocks{uuid.uuid4().hex[:6]}"
    prefix, topic = f"{run}-g", f"{run}-orders"
    work = Path(tempfile.mkdtemp(prefix="zk2kafka-bench-clocks-"))
    cluster = None
    rows: list[dict] = []
    try:
        from migrate.jvm.artifacts import ensure_bundle

        jars = [] if args.skip_console else ensure_bundle("kafka-3.9", CACHE_DIR)
        bootstrap = args.bootstrap_server
        if bootstrap is None:
            from migrate.sandbox.cluster import LocalCluster

            t0 = time.perf_counter()
            cluster = LocalCluster(work / "sandbox", CACHE_DIR, attached=True, broker_heap=args.broker_heap,
                                   offsets_partitions=args.offsets_partitions)
            bootstrap = cluster.start().bootstrap_server
            figures["sandbox"] = {"broker_heap": args.broker_heap, "offsets_partitions": args.offsets_partitions,
                                  "start_s": round(time.perf_counter() - t0, 1)}
        make_topic(bootstrap, topic, args.partitions)
        seconds = commit_groups(bootstrap, topic, prefix, args.groups, args.partitions, args.in_flight, args.batch)
        figures["commit_s"] = round(seconds, 1)
        figures["commits_per_s"] = round(args.groups * args.partitions / seconds) if seconds else None
        count, involved = _offsets_partitions(bootstrap, [group_name(prefix, i) for i in range(args.groups)])
        figures.update(offsets_partitions=count, topic_records=_records(bootstrap, None))
        _say(f"{args.groups:,} groups x {args.partitions} partitions committed in {seconds:.1f}s on Kafka "
             f"{bootstrap}; __consumer_offsets: {count} partitions, {figures['topic_records']:,} records")

        _say(f"read_clocks, all {args.groups:,} groups:")
        rows.append(time_python(f"read_clocks, all {args.groups:,} groups", "clocks", bootstrap, prefix,
                                args.groups, args.partitions, args.runs, args.budget, args.timeout, involved))
        if args.no_crc_rows:
            _say("read_clocks, all groups, check_crcs=False:")
            rows.append(time_python(f"what-if: read_clocks, all {args.groups:,} groups, check_crcs=False",
                                    "clocks-nocrc", bootstrap, prefix, args.groups, args.partitions, args.runs,
                                    args.budget, args.timeout, involved))
            _say("kafka-python consumer, check_crcs=False:")
            rows.append(time_python("kafka-python KafkaConsumer, no parsing, check_crcs=False", "consumer-nocrc",
                                    bootstrap, prefix, args.groups, args.partitions, args.runs, args.budget,
                                    args.timeout, involved))
        if args.only_all_groups:
            args.selected, args.skip_console, args.shipped_budgets = 0, True, []
        if 0 < args.selected < args.groups:
            _, some = _offsets_partitions(bootstrap, [group_name(prefix, i) for i in range(args.selected)])
            _say(f"read_clocks, {args.selected} groups:")
            rows.append(time_python(f"read_clocks, {args.selected} groups", "clocks", bootstrap, prefix,
                                    args.selected, args.partitions, args.runs, args.budget, args.timeout, some))
        _say("kafka-python consumer, same partitions, no parsing:")
        rows.append(time_python("kafka-python KafkaConsumer, the same partitions, no parsing", "consumer",
                                bootstrap, prefix, args.groups, args.partitions, args.runs, args.budget,
                                args.timeout, involved))
        if not args.skip_console:
            _say("console consumer with the offsets formatter:")
            rows.append(time_console(bootstrap, jars, work, args.runs, args.timeout,
                                    args.groups * args.partitions))
        figures["budgets"] = []
        for budget in args.shipped_budgets:
            _say(f"read_clocks, all groups, budget {budget:g}s:")
            row = time_python(f"budget {budget:g}s", "clocks", bootstrap, prefix, args.groups, args.partitions,
                              1, budget, args.timeout, involved)
            r = row["runs"][0]
            figures["budgets"].append({"budget_s": budget, "used_by": SHIPPED.get(budget), "told": r["ok"],
                                       "seconds": round(r.get("seconds", r["wall_s"]), 2), "why": r.get("why"),
                                       "records": r["records"], "load": row["load_before"]})
    finally:
        if cluster is not None:
            cluster.stop()
        figures["loop_after_s"] = host_loop()
        figures["uptime_after"] = _uptime()
    figures["methods"] = rows
    figures["ok"] = bool(rows) and all(r["ok"] for r in rows)
    print(render(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return figures


def _crc32c() -> str:
    """Which CRC-32C kafka-python checks each record batch with (check_crcs, on by default)."""
    from kafka.record import util

    return "C (the crc32c package)" if getattr(util, "crc32c_c", None) is not None else "pure Python"


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"load average {os.getloadavg()}"


def render(f: dict) -> str:
    lines = [f"\n`{f['command']}`",
             f"\n{f['groups']:,} groups x {f['partitions']} partitions = {f['commit_records']:,} commits from "
             f"outside, committed in {f.get('commit_s')} s ({f.get('commits_per_s') or 0:,}/s); __consumer_offsets: "
             f"{f.get('offsets_partitions')} partitions, {f.get('topic_records', 0):,} records. {f['cores']} cores, "
             f"loop {f['loop_before_s']} s before and {f['loop_after_s']} s after. kafka-python's CRC-32C check: "
             f"{f['kafka_python_crc32c']}.",
             f"\nbefore: {f['uptime_before']}\nafter:  {f['uptime_after']}\n",
             "| method | runs | records read | min | median | max | records/s (median) | peak RSS "
             "| load before/after |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in f["methods"]:
        if not r.get("median_s"):
            lines.append(f"| {r['method']} | {len(r['runs'])} | FAILED: {r['error']} | | | | | | |")
            continue
        rss = f"{r['peak_rss_mib']:,} MiB"
        if r.get("rss_before_mib"):
            rss += f" ({r['rss_before_mib']:,} before the read)"
        median = f"{r['median_s']} s"
        if r.get("from_first_line_median_s") is not None:
            median += f" ({r['from_first_line_median_s']} s from its first line)"
        lines.append(f"| {r['method']} | {len(r['runs'])} | {r['records']:,} | {r['min_s']} s | {median} | "
                     f"{r['max_s']} s | {r['records_per_s']:,} | {rss} | {r['load_before']} / {r['load_after']} |"
                     + ("" if r["ok"] else f" FAILED: {r['error']}"))
    if f.get("budgets"):
        lines += ["", f"| shipped budget | used by | read_clocks over all {f['groups']:,} groups | seconds | load |",
                  "| ---: | --- | --- | ---: | ---: |"]
        for b in f["budgets"]:
            told = "told every commit time" if b["told"] else f"told nothing: {b['why']}"
            lines.append(f"| {b['budget_s']:g} s | {b['used_by'] or ''} | {told} | {b['seconds']} | {b['load']} |")
    return "\n".join(lines)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(0 if main()["ok"] else 1)
