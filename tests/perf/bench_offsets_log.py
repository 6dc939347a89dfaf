"""Benchmark: the one reader of __consumer_offsets (migrate/kafka/offsets_log/) at a production cluster's size,
and what it makes of ready-for-kraft and the diff's Kafka snapshot there, against the strongest simple reads of the
same records, in one run.

    python tests/perf/bench_offsets_log.py                     # 10,000 groups x 100 partitions x 10 rounds: 10M
    python tests/perf/bench_offsets_log.py --rounds 1          # a million, for the slope
    python tests/perf/bench_offsets_log.py --runs 3 --json log.json
    python tests/perf/bench_offsets_log.py --skip-console --skip-consumer   # the product's reads only

Starts its own sandbox (ZooKeeper with a 1 GB heap; a ZooKeeper-mode Kafka 3.9 broker with `--broker-heap`, since
it keeps every committed offset in memory, and `--offsets-partitions` 50 partitions of __consumer_offsets,
Kafka's default). Seeds what a live cluster's __consumer_offsets holds, in this order:

- ZooKeeper: every group's old offsets, `--zk-partitions` znodes each (what ready-for-kraft judges);
- `--rounds` rounds of commits of every partition of one topic of `--partitions` partitions for each of `--groups`
  groups, from outside (no member, metadata "someone"; zk2kafka's own pipelined writer), each round a higher
  offset: the repeated commits the log cleaner has not compacted yet (it never compacts the active segment);
- `--members` of the groups then joined by a real consumer (kafka-python, the classic protocol) that commits every
  partition and leaves: the groups' metadata records (members, generation, assignment, then Empty) and member
  commits, newer than ZooKeeper's write: taken over;
- `--transactions` of the groups get one transactional commit of every partition (an exactly-once application's
  TxnOffsetCommit), committed for half of them and aborted for the other half.

Then each read, `--runs` times, each in a child process of its own (its peak RSS its own):

- `OffsetsLog`, every group: the product's reader, every group followed, every involved partition of
  __consumer_offsets read from its start to its end; it must give every group's every partition the record that
  wrote its value (checked against OffsetFetch for the members' and transactions' groups);
- Kafka's `kafka-console-consumer.sh --formatter OffsetsMessageFormatter` over the whole topic (unless
  `--skip-console`): the strongest simple script an operator would write, in the JVM, with the JVM options of
  kafka-run-class.sh, its output to a file; the whole command and the seconds from its first line out (on a
  cluster other clients share, their records make its count unreachable: it stops `--console-idle` seconds after
  its last record and is timed to that record);
- kafka-python's `KafkaConsumer` over the same partitions, records counted, nothing parsed (unless
  `--skip-consumer`): the floor of the Python client the reader used before;
- `zk2kafka ready-for-kraft --quiet-for 1s` over every group (unless `--skip-gate`): the whole command, as an
  operator runs it; it must judge every offset with its evidence (no value "committed at an unknown time");
- the diff's Kafka snapshot (`KafkaSnapshot.write`, the retention clocks and the commit evidence asked, as `diff`
  asks them), every group (unless `--skip-snapshot`): its `commit` rows must cover every offset.

Figures: records read (the end minus start offsets of the partitions read), seconds (min/median/max), records/s at
the median, peak RSS; the host: cores, load average before and after each method, and the seconds a fixed Python
loop of 10 million additions took before and after (docs/performance.md, "How to read these figures"). Prints
Markdown tables; exits 1 when a method failed or did not give every offset its evidence. Bounded: every child is
killed after --timeout seconds; the sandbox is stopped at the end, also on failure (unless `--keep`: then it is
left seeded, to profile or time again against).
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_migrate import TOOL_JVM_OPTS, TOOLS_LOG4J
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from migrate.heap import collecting_rarely
from migrate.kafka.offsets_log.reader import READERS

ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = Path(os.environ.get("ZK2KAFKA_CACHE_DIR", "~/.cache/zk2kafka")).expanduser()
CONSOLE_MAIN = "org.apache.kafka.tools.consumer.ConsoleConsumer"
FORMATTER = "org.apache.kafka.tools.consumer.OffsetsMessageFormatter"
OFFSETS_TOPIC = "__consumer_offsets"
JOINING = 8   # groups joined at once by the members' consumers


def group_name(prefix: str, i: int) -> str:
    return f"{prefix}{i:06d}"


# ---------------------------------------------------------------------------------------------------- the host

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


def _run_child(argv: list[str], timeout: float, stdout=subprocess.PIPE, first_output: Path | None = None
               ) -> tuple[int, str, str, float, float, float | None, float | None]:
    """(exit code, stdout, stderr, wall seconds, peak RSS MiB from wait4, seconds to the first and to the
    last byte written to `first_output`); killed after `timeout` seconds."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    killer = threading.Timer(timeout, lambda: os.killpg(child.pid, signal.SIGKILL))
    killer.start()
    first, last, size = [None], [None], [0]
    watching = threading.Event()

    def watch():   # when the output file first grows (the JVM started, joined, read its first batch) and last
        while not watching.is_set():
            grown = first_output.stat().st_size if first_output.exists() else 0
            if grown > size[0]:
                size[0], last[0] = grown, time.perf_counter() - start
                first[0] = first[0] if first[0] is not None else last[0]
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
    for r in readers + ([watcher] if watcher else []):
        r.join()
    return (child.returncode, "".join(out_chunks), "".join(err_chunks), seconds,
            round(usage.ru_maxrss / 1024, 1), first[0], last[0])


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


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"load average {os.getloadavg()}"


# ---------------------------------------------------------------------------------------------------- seeding

def seed_zookeeper(zookeeper: str, prefix: str, topic: str, groups: int, partitions: int) -> float:
    """Every group's old offsets (offset p of partition p) in ZooKeeper; the last write's mtime (s)."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zookeeper, timeout=30)
    zk.start()
    try:
        last = None
        for i in range(groups):
            zk.ensure_path(f"/consumers/{group_name(prefix, i)}/offsets/{topic}")
            pending = [zk.create_async(f"/consumers/{group_name(prefix, i)}/offsets/{topic}/{p}", str(p).encode())
                       for p in range(partitions)]
            for request in pending:
                last = request.get(timeout=60)
        return zk.exists(last).mtime / 1000 if last else time.time()
    finally:
        zk.stop()
        zk.close()


def commit_rounds(bootstrap: str, topic: str, prefix: str, groups: int, partitions: int, rounds: int,
                  in_flight: int, batch: int) -> float:
    """`rounds` commits of every partition for every group, from outside, offset 1000*(round+1)+p; the seconds."""
    from migrate.connection import Connection
    from migrate.kafka.client import open_admin
    from migrate.kafka.writer import KafkaOffsetWriter

    admin = open_admin(Connection(bootstrap_server=bootstrap), client_id="zk2kafka-bench-commit",
                       in_flight=2 * in_flight + 8)
    try:
        writer = KafkaOffsetWriter(admin, in_flight=in_flight)
        t0 = time.perf_counter()
        for r in range(rounds):
            offsets = {(topic, p): 1000 * (r + 1) + p for p in range(partitions)}
            for first in range(0, groups, batch):
                answers = writer.commit_many({group_name(prefix, i): offsets
                                              for i in range(first, min(groups, first + batch))}, "someone")
                failed = {g: e for g, e in answers.items() if e is not None}
                if failed:
                    g, e = next(iter(failed.items()))
                    raise RuntimeError(f"{len(failed)} group(s) not committed, e.g. {g}: {type(e).__name__}: {e}")
            _say(f"  round {r + 1} of {rounds} committed ({time.perf_counter() - t0:.0f}s)")
        return time.perf_counter() - t0
    finally:
        admin.close()


def join_and_commit(bootstrap: str, topic: str, groups: list[str], partitions: int) -> None:
    """A consumer of each group joins, commits every partition (an offset past the rounds') and leaves."""
    from kafka.errors import RebalanceInProgressError

    def commit_once(group: str) -> bool:
        consumer = KafkaConsumer(group_id=group, bootstrap_servers=bootstrap, enable_auto_commit=False)
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                consumer.poll(timeout_ms=200)
                if len(consumer.assignment()) < partitions:
                    continue
                try:   # a rebalance still settling refuses it: poll on, and commit again
                    consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(900_000 + p, "", -1)
                                     for p in range(partitions)})
                    return True
                except RebalanceInProgressError:
                    continue
            return False
        finally:
            consumer.close()

    def one_group(group: str) -> None:
        if not any(commit_once(group) for _ in range(3)):
            raise RuntimeError(f"{group}: no member commit in 3 tries of 60s")

    with ThreadPoolExecutor(JOINING) as pool:   # each group its own consumer: the joins wait on the broker
        list(pool.map(one_group, groups))


def transactional_commits(bootstrap: str, topic: str, groups: list[str], partitions: int) -> None:
    """One TxnOffsetCommit of every partition per group: committed for even positions, aborted for odd ones."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"bench-{uuid.uuid4().hex[:6]}")
    try:
        producer.init_transactions()
        for n, group in enumerate(groups):
            producer.begin_transaction()
            producer.send_offsets_to_transaction({TopicPartition(topic, p): OffsetAndMetadata(800_000 + p, "", -1)
                                                  for p in range(partitions)}, group)
            (producer.commit_transaction if n % 2 == 0 else producer.abort_transaction)()
    finally:
        producer.close()


# ------------------------------------------------------------------------------------------------ the children

def child_log(bootstrap: str, prefix: str, groups: int, partitions: int, budget: float, readers: int) -> dict:
    """OffsetsLog over every group, timed around follow and read, its first read split over `readers` processes;
    every group's every partition must be dated."""
    from migrate.connection import Connection
    from migrate.kafka.client import open_admin
    from migrate.kafka.offsets_log import OffsetsLog

    names = [group_name(prefix, i) for i in range(groups)]
    connection = Connection(bootstrap_server=bootstrap)
    admin = open_admin(connection, client_id="zk2kafka-bench-log")
    try:
        rss_before = _status_mib("VmRSS")
        t0 = time.perf_counter()
        reader = OffsetsLog(admin, connection=connection, workers=readers)
        reader.follow(names)
        why = reader.read(budget)
        seconds = time.perf_counter() - t0
        peak_read = _status_mib("VmHWM")   # the reader's, before this check builds a Commit per offset
        whole = sum(1 for g in names
                    if sum(1 for k in reader.groups[g].keys if reader.groups[g].committed(k)) == partitions)
        by_member = sum(1 for g in names for k in reader.groups[g].keys
                        if (c := reader.groups[g].committed(k)) and c.by.members)
    finally:
        admin.close()
    return {"seconds": seconds, "why": why, "groups_whole": whole, "member_commits": by_member,
            "records_applied": reader.records, "ok": why is None and whole == groups,
            "rss_before_mib": rss_before, "peak_rss_mib": peak_read, "checked_peak_rss_mib": _status_mib("VmHWM")}


def child_consumer(bootstrap: str, prefix: str, groups: int, budget: float) -> dict:
    """A plain KafkaConsumer over the same partitions, start to end, records counted only."""
    from migrate.kafka.offsets_log import partition_for

    rss_before = _status_mib("VmRSS")
    t0 = time.perf_counter()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             client_id="zk2kafka-bench-plain")
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


def child_snapshot(bootstrap: str, prefix: str, groups: int, partitions: int, topic: str, work: str) -> dict:
    """The diff's Kafka snapshot of every group: its `commit` rows must cover every offset."""
    import pyarrow.parquet as pq

    from migrate.connection import Connection
    from migrate.kafka.client import open_admin
    from migrate.kafka.snapshot import COMMIT, KafkaSnapshot

    names = [group_name(prefix, i) for i in range(groups)]
    connection = Connection(bootstrap_server=bootstrap)
    admin = open_admin(connection, client_id="zk2kafka-bench-snapshot")
    path = Path(work) / f"kafka-{uuid.uuid4().hex[:6]}.parquet"
    try:
        rss_before = _status_mib("VmRSS")
        t0 = time.perf_counter()
        # as the diff's pipeline asks it: a large read of __consumer_offsets split over processes
        info = KafkaSnapshot(admin, connection=connection).write(path, names, [topic], commit_clocks=True)
        seconds = time.perf_counter() - t0
    finally:
        admin.close()
    kinds = pq.read_table(path, columns=["kind"]).column("kind").to_pylist()
    commits = sum(1 for k in kinds if k == COMMIT)
    path.unlink()
    return {"seconds": seconds, "commit_rows": commits, "why": info.commit_clocks_unknown,
            "ok": commits == groups * partitions and info.commit_clocks_unknown is None,
            "rss_before_mib": rss_before, "peak_rss_mib": _status_mib("VmHWM")}


# ------------------------------------------------------------------------------------------------ the parent

def _records(bootstrap: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, client_id="zk2kafka-bench-count")
    try:
        tps = [TopicPartition(OFFSETS_TOPIC, p) for p in sorted(consumer.partitions_for_topic(OFFSETS_TOPIC))]
        start, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        return sum(end[tp] - start[tp] for tp in tps)
    finally:
        consumer.close()


def time_child(name: str, argv: list[str], runs: int, timeout: float, records: int) -> dict:
    row = {"method": name, "load_before": _load(), "runs": [], "error": None, "records": records}
    for _ in range(runs):
        code, out, err, wall, maxrss, *_ = _run_child(argv, timeout)
        try:
            result = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            result = {"ok": False, "why": f"exit {code}: {err.strip()[-800:]}"}
        result.update(wall_s=round(wall, 2), wait4_maxrss_mib=maxrss, exit_code=code)
        result.setdefault("seconds", wall)
        result.setdefault("peak_rss_mib", maxrss)
        row["runs"].append(result)
        _say(f"  {name}: {result['seconds']:.2f}s, ok={result['ok']}"
             + (f" ({result['why']})" if result.get("why") else ""))
        if not result["ok"]:
            row["error"] = result.get("why")
            break
    row["load_after"] = _load()
    return _summarise(row)


def time_gate(zookeeper: str, bootstrap: str, prefix: str, work: Path, runs: int, timeout: float,
              records: int) -> dict:
    """zk2kafka ready-for-kraft over every group, as an operator runs it: every offset judged with evidence."""
    argv = [sys.executable, "-m", "migrate", "ready-for-kraft", "--zookeeper", zookeeper, "--bootstrap-server",
            bootstrap, "--state-dir", str(work / "gate"), "--quiet-for", "1s", "--clock-margin", "1s",
            "--group", f"{prefix}.*", "--json", "-q"]
    row = {"method": "zk2kafka ready-for-kraft --quiet-for 1s, every group (the whole command)",
           "load_before": _load(), "runs": [], "error": None, "records": records}
    for _ in range(runs):
        code, out, err, wall, maxrss, *_ = _run_child(argv, timeout)
        try:
            data = json.loads(out)
        except ValueError:
            data = {}
        verdicts = data.get("verdicts", [])
        offsets = sum(v["offsets"] for v in verdicts)
        judged = sum(v["in_kafka"] + v["taken_over"] for v in verdicts) + sum(len(v["differs"]) for v in verdicts)
        unknown = sum(1 for v in verdicts for d in v["differs"] if "unknown time" in d)
        taken = sum(v["taken_over"] for v in verdicts)
        ok = bool(verdicts) and judged == offsets and not unknown
        result = {"seconds": wall, "ok": ok, "offsets": offsets, "taken_over": taken, "unknown": unknown,
                  "peak_rss_mib": maxrss, "exit_code": code, "clocks": data.get("clocks"),
                  "why": None if ok else f"exit {code}: {unknown} unknown of {offsets}: {err.strip()[-800:]}"}
        row["runs"].append(result)
        _say(f"  ready-for-kraft: {wall:.2f}s, {offsets:,} offsets, {taken:,} taken over, {unknown} unknown, ok={ok}")
        if not ok:
            row["error"] = result["why"]
            break
    row["load_after"] = _load()
    return _summarise(row)


def time_console(bootstrap: str, jars: list[Path], work: Path, runs: int, timeout: float, records: int,
                 markers: int, idle: float) -> dict:
    """Kafka's console consumer with the offsets formatter over the whole of __consumer_offsets: every record
    but the transactions' `markers`, which no consumer is given. On a cluster other clients share, their
    markers and compacted offsets make that count unreachable: the consumer then stops after `idle` seconds
    with nothing new, and its time is taken to the last record it printed."""
    log4j = work / "tools-log4j.properties"
    log4j.write_text(TOOLS_LOG4J)
    row = {"method": "kafka-console-consumer.sh --formatter OffsetsMessageFormatter (JVM start included)",
           "load_before": _load(), "runs": [], "error": None, "records": records}
    for n in range(runs):
        out = work / f"console-{n}.txt"
        argv = ["java", *TOOL_JVM_OPTS, f"-Dlog4j.configuration=file:{log4j}", "-cp", os.pathsep.join(map(str, jars)),
                CONSOLE_MAIN, "--bootstrap-server", bootstrap, "--topic", OFFSETS_TOPIC, "--from-beginning",
                "--formatter", FORMATTER, "--max-messages", str(records - markers),
                "--timeout-ms", str(int(idle * 1000)),
                "--consumer-property", "enable.auto.commit=false"]
        with open(out, "w") as sink:
            code, _, err, wall, maxrss, first, last = _run_child(argv, timeout, stdout=sink, first_output=out)
        printed = _printed(out)
        out.unlink()
        ok = code == 0 and printed > 0
        idled = printed < records - markers and last is not None
        seconds = last if idled else wall
        result = {"seconds": seconds, "from_first_line_s": None if first is None else round(seconds - first, 2),
                  "records_seen": printed, "ended": "idle" if idled else "count", "ok": ok, "exit_code": code,
                  "peak_rss_mib": maxrss, "why": None if ok else f"exit {code}: {err.strip()[-500:]}"}
        row["runs"].append(result)
        _say(f"  console consumer: {seconds:.2f}s, {printed:,} offset commits printed, ok={ok}"
             + (f" (stopped {idle:g}s after its last record: the topic holds other clients' records)" if idled else ""))
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
        row.update(min_s=round(secs[0], 3), median_s=round(median, 3), max_s=round(secs[-1], 3),
                   records_per_s=round(row["records"] / median) if median and row["records"] else None,
                   peak_rss_mib=max(r.get("peak_rss_mib") or 0 for r in done))
        firsts = [r["from_first_line_s"] for r in done if r.get("from_first_line_s") is not None]
        if firsts:
            row["from_first_line_median_s"] = round(statistics.median(firsts), 2)
    return row


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap-server", help="an existing Kafka (give --zookeeper too; default: a sandbox)")
    ap.add_argument("--zookeeper", help="an existing ZooKeeper, its chroot holding /consumers")
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=100, help="partitions of the topic: offsets per group")
    ap.add_argument("--rounds", type=int, default=10, help="commits of every offset, from outside")
    ap.add_argument("--members", type=int, default=100, help="groups a consumer then joins, commits and leaves")
    ap.add_argument("--transactions", type=int, default=100, help="groups with a transactional commit")
    ap.add_argument("--zk-partitions", type=int, default=10, help="ZooKeeper offsets per group (the gate's)")
    ap.add_argument("--runs", type=int, default=1, help="timed runs of each method")
    ap.add_argument("--budget", type=float, default=900.0, help="the reader's budget in the timed runs")
    ap.add_argument("--skip-console", action="store_true", help="no console consumer row (no JVM)")
    ap.add_argument("--skip-consumer", action="store_true", help="no kafka-python consumer row")
    ap.add_argument("--skip-gate", action="store_true", help="no ready-for-kraft row")
    ap.add_argument("--skip-snapshot", action="store_true", help="no Kafka snapshot row")
    ap.add_argument("--keep", action="store_true",
                    help="leave the own sandbox running, seeded, to profile or time again against it")
    ap.add_argument("--broker-heap", default="4g", help="the own sandbox's broker heap (-Xmx)")
    ap.add_argument("--offsets-partitions", type=int, default=50,
                    help="the own sandbox's offsets.topic.num.partitions (Kafka's default: 50)")
    ap.add_argument("--in-flight", type=int, default=32, help="commits in flight while seeding")
    ap.add_argument("--batch", type=int, default=1000, help="groups per commit_many call while seeding")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds before a child is killed")
    ap.add_argument("--console-idle", type=float, default=30.0,
                    help="seconds with no record before the console consumer stops short of its count")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--readers", type=int, nargs="+", default=[1, READERS],
                    help="time OffsetsLog's first read split over each of these numbers of processes")
    ap.add_argument("--child", choices=("log", "consumer", "snapshot"), help=argparse.SUPPRESS)
    ap.add_argument("--prefix", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        with collecting_rarely():   # as the commands that read do (migrate/heap.py)
            if args.child == "log":
                result = child_log(args.bootstrap_server, args.prefix, args.groups, args.partitions, args.budget,
                                   args.readers[0])
            elif args.child == "consumer":
                result = child_consumer(args.bootstrap_server, args.prefix, args.groups, args.budget)
            else:
                result = child_snapshot(args.bootstrap_server, args.prefix, args.groups, args.partitions,
                                        args.topic, args.work)
        print(json.dumps(result))
        return result
    command = "python tests/perf/bench_offsets_log.py " + " ".join(sys.argv[1:] if argv is None else argv)
    figures: dict = {"command": command.strip(), "groups": args.groups, "partitions": args.partitions,
                     "rounds": args.rounds, "members": args.members, "transactions": args.transactions,
                     "zk_partitions": args.zk_partitions, "cores": os.cpu_count(), "uptime_before": _uptime(),
                     "loop_before_s": host_loop()}
    run = f"log{uuid.uuid4().hex[:6]}"
    prefix, topic = f"{run}-g", f"{run}-orders"
    work = Path(tempfile.mkdtemp(prefix="zk2kafka-bench-log-"))
    cluster = None
    rows: list[dict] = []
    try:
        from migrate.jvm.artifacts import ensure_bundle

        jars = [] if args.skip_console else ensure_bundle("kafka-3.9", CACHE_DIR)
        bootstrap, zookeeper = args.bootstrap_server, args.zookeeper
        if bootstrap is None:
            from migrate.sandbox.cluster import LocalCluster

            t0 = time.perf_counter()
            cluster = LocalCluster(work / "sandbox", CACHE_DIR, attached=not args.keep, broker_heap=args.broker_heap,
                                   zk_heap="1g", offsets_partitions=args.offsets_partitions)
            endpoints = cluster.start()
            bootstrap, zookeeper = endpoints.bootstrap_server, endpoints.zookeeper
            figures["sandbox"] = {"broker_heap": args.broker_heap, "offsets_partitions": args.offsets_partitions,
                                  "start_s": round(time.perf_counter() - t0, 1)}
        make_topic(bootstrap, topic, args.partitions)
        t0 = time.perf_counter()
        written = seed_zookeeper(zookeeper, prefix, topic, args.groups, args.zk_partitions)
        figures["zk_seed_s"] = round(time.perf_counter() - t0, 1)
        while time.time() < written + 1.5:   # past the 1 s margin the gate is given
            time.sleep(0.1)
        figures["commit_s"] = round(commit_rounds(bootstrap, topic, prefix, args.groups, args.partitions,
                                                  args.rounds, args.in_flight, args.batch), 1)
        t0 = time.perf_counter()
        join_and_commit(bootstrap, topic, [group_name(prefix, i) for i in range(args.members)], args.partitions)
        transactional_commits(bootstrap, topic, [group_name(prefix, args.members + i)
                                                 for i in range(args.transactions)], args.partitions)
        figures["members_and_transactions_s"] = round(time.perf_counter() - t0, 1)
        records = _records(bootstrap)
        figures["topic_records"] = records
        _say(f"__consumer_offsets: {records:,} records ({args.groups:,} groups x {args.partitions} x "
             f"{args.rounds} rounds, {args.members} joined, {args.transactions} transactional)")

        child = [sys.executable, str(Path(__file__).resolve()), "--bootstrap-server", bootstrap, "--prefix", prefix,
                 "--groups", str(args.groups), "--partitions", str(args.partitions), "--budget", str(args.budget),
                 "--topic", topic, "--work", str(work)]
        for readers in dict.fromkeys(args.readers):
            _say(f"OffsetsLog, every group, {readers} process(es):")
            rows.append(time_child(f"OffsetsLog, all {args.groups:,} groups, {readers} process(es)",
                                   [*child, "--child", "log", "--readers", str(readers)], args.runs, args.timeout,
                                   records))
        if not args.skip_console:
            _say("console consumer with the offsets formatter:")
            rows.append(time_console(bootstrap, jars, work, args.runs, args.timeout, records, args.transactions,
                                     args.console_idle))
        if not args.skip_consumer:
            _say("kafka-python consumer, no parsing:")
            rows.append(time_child("kafka-python KafkaConsumer, the same partitions, no parsing",
                                   [*child, "--child", "consumer"], args.runs, args.timeout, records))
        if not args.skip_gate:
            _say("ready-for-kraft:")
            rows.append(time_gate(zookeeper, bootstrap, prefix, work, args.runs, args.timeout, records))
        if not args.skip_snapshot:
            _say("the diff's Kafka snapshot:")
            rows.append(time_child(f"the diff's Kafka snapshot (KafkaSnapshot.write), all {args.groups:,} groups",
                                   [*child, "--child", "snapshot"], args.runs, args.timeout, records))
    finally:
        if cluster is not None and not args.keep:
            cluster.stop()
        elif cluster is not None:
            _say(f"kept: --bootstrap-server {bootstrap} --zookeeper {zookeeper}, groups {prefix}*, topic {topic}; "
                 f"stop it with: zk2kafka sandbox down --state-dir {work}")
        figures["loop_after_s"] = host_loop()
        figures["uptime_after"] = _uptime()
    figures["methods"] = rows
    figures["ok"] = bool(rows) and all(r["ok"] for r in rows)
    print(render(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return figures


def render(f: dict) -> str:
    lines = [f"\n`{f['command']}`",
             f"\n__consumer_offsets: {f.get('topic_records', 0):,} records ({f['groups']:,} groups x {f['partitions']} "
             f"partitions x {f['rounds']} rounds from outside in {f.get('commit_s')} s, {f['members']} groups "
             f"joined, {f['transactions']} transactional); ZooKeeper: {f['zk_partitions']} offsets a group. "
             f"{f['cores']} cores, loop {f['loop_before_s']} s before and {f['loop_after_s']} s after.",
             f"\nbefore: {f['uptime_before']}\nafter:  {f['uptime_after']}\n",
             "| method | runs | min | median | max | records/s (median) | peak RSS | load before/after |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in f["methods"]:
        if not r.get("median_s"):
            lines.append(f"| {r['method']} | {len(r['runs'])} | FAILED: {r['error']} | | | | | |")
            continue
        median = f"{r['median_s']} s"
        if r.get("from_first_line_median_s") is not None:
            median += f" ({r['from_first_line_median_s']} s from its first line)"
        lines.append(f"| {r['method']} | {len(r['runs'])} | {r['min_s']} s | {median} | {r['max_s']} s | "
                     f"{r.get('records_per_s') or 0:,} | {r['peak_rss_mib']:,} MiB | "
                     f"{r['load_before']} / {r['load_after']} |" + ("" if r["ok"] else f" FAILED: {r['error']}"))
    return "\n".join(lines)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(0 if main()["ok"] else 1)
