"""Benchmark: committing consumer offsets to Kafka: the one-admin-client loop, Kafka's Java Admin with every
group in flight, Kafka's own tool and a naive kafka-python loop, against zk2kafka, all in one run.

    python tests/perf/bench_migrate.py                                   # 10,000 groups x 10 partitions
    python tests/perf/bench_migrate.py --pin 0:1                         # stores on core 0, each client on core 1
    python tests/perf/bench_migrate.py --parallelism 32 --skip-whole     # the loop against the reviewed plan only
    python tests/perf/bench_migrate.py --parallelism 32 --writers 1 2    # one writer process, and two
    python tests/perf/bench_migrate.py --parallelism 1 8 32 --json migrate.json
    python tests/perf/bench_migrate.py --skip-zk2kafka --tool-sample 20 --naive-sample 500
    python tests/perf/bench_migrate.py --zookeeper HOST:2181/kafka --bootstrap-server HOST:9092
    python tests/perf/bench_migrate.py --skip-baselines --parallelism 32   # re-planning vs the reviewed plan
    python tests/perf/bench_migrate.py --skip-java-admin                 # no JVM for the Java Admin row

Starts its own sandbox (ZooKeeper + a ZooKeeper-mode Kafka 3.9 broker) unless --bootstrap-server
(and, for zk2kafka, --zookeeper with the chroot where /consumers lives) is given. Every group has
`--partitions` offsets on one of `--topics` topics (group i reads topic i mod --topics, all its
partitions); each partition holds `--messages` messages, and the offsets lie between 1 and the log end.
Each method commits into fresh groups of its own (distinct name prefixes), then a sample of them is
read back with KafkaAdminClient.list_group_offsets and must hold exactly the offsets written.

- the one-admin-client loop (the headline baseline: the script an engineer would write): ONE
  KafkaAdminClient, then `admin.alter_group_offsets(group, {TopicPartition: OffsetAndMetadata})` for
  every group, one after the other. Kafka only, blind: no read before or after, no check of the
  answer, no ZooKeeper, no journal. The offsets are built before the clock starts (a script would
  have them already). Timed over --loop-sample groups (all of them by default). Every other row
  gives its ratio against this one ("vs loop").
- Kafka's Java Admin (unless --skip-java-admin): tests/perf/AlterOffsets.java, run as a single-file
  program on the Kafka 3.9 jars: ONE Admin, `alterConsumerGroupOffsets(group, offsets)` fired for
  every group without waiting, then all the answers awaited. Kafka only, blind, like the loop; the
  best pace a client gets from this broker, as far as one Admin goes (it keeps one request in flight
  per connection, a fixed setting). Its seconds are timed in the JVM, from the first call sent to the
  last acknowledged (no JVM start, no connect); the child's wall time is in the figures. Every row
  gives the fraction of this pace it reaches ("vs Java Admin": its seconds over the row's).
- Kafka's tool: one JVM per group, as a shell loop over kafka-consumer-groups.sh would run it
  (`ConsumerGroupCommand --reset-offsets --from-file <group's csv> --group G --execute`, with the
  JVM options of kafka-run-class.sh). Timed on --tool-sample groups, extrapolated to all.
- naive kafka-python: per group a KafkaConsumer, one commit(), close(). Timed on --naive-sample
  groups, extrapolated to all.
- zk2kafka: `zk2kafka migrate --execute` as a child process over every group, once per --parallelism
  and --writers value (unless --skip-whole), wall time of the whole command: ZooKeeper scan, Kafka
  snapshot, Spark diff, report, and the journaled dual commit (Kafka commit + read-back, conditional
  ZooKeeper write + read-back). A second row gives its write phase alone (from the journal: plan
  journaled -> run done), the part that does what the baselines do, and more. Its groups are seeded
  into ZooKeeper first (not timed). A failing command is reported in its row.
- zk2kafka with a reviewed plan (unless --skip-reviewed-plan): fresh groups, `zk2kafka diff` (the
  plan a change ticket would carry), then `zk2kafka migrate --execute --plan RUN` (no scan, no Spark),
  each timed, and their sum: against `migrate --execute`, which scans and diffs again; and the write
  phase of `migrate --execute --plan` alone, from its journal (plan journaled -> run done).

`--pin STORES:CLIENT` (e.g. 0:1) puts ZooKeeper, the broker and the benchmark itself on the cores of
STORES and every measured client on those of CLIENT: the zk2kafka commands (with their Spark and
writer processes), the Java Admin, the tool's JVMs, and the two kafka-python loops (in this process:
the timing thread and the client's IO thread move to CLIENT for the timed part). The table's header
and the figures say which.

Prints a Markdown table; exits 1 when a method failed or its offsets did not land. Groups, topics
and znodes are left behind on a cluster given with --bootstrap-server / --zookeeper.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient

ROOT = Path(__file__).resolve().parents[2]

CACHE_DIR = Path(os.environ.get("ZK2KAFKA_CACHE_DIR", "~/.cache/zk2kafka")).expanduser()
TOOL_MAIN = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
JAVA_ADMIN = Path(__file__).with_name("AlterOffsets.java")
# What bin/kafka-run-class.sh (Kafka 3.9) gives every tool: KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS.
TOOL_JVM_OPTS = ["-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                 "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                 "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]
# config/tools-log4j.properties of the Kafka distribution.
TOOLS_LOG4J = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""


class Layout:
    """Names and offsets: group i of a method reads topic i mod topics, partitions 0..partitions-1."""

    def __init__(self, run: str, topics: int, partitions: int, messages: int):
        self.run, self.topics, self.partitions, self.messages = run, topics, partitions, messages

    def topic(self, t: int) -> str:
        return f"{self.run}-topic-{t:03d}"

    def group(self, prefix: str, i: int) -> str:
        return f"{prefix}{i:06d}"

    def offsets(self, i: int) -> dict[TopicPartition, int]:
        topic = self.topic(i % self.topics)
        return {TopicPartition(topic, p): 1 + (7 * i + p) % self.messages for p in range(self.partitions)}


class Pinning:
    """`--pin STORES:CLIENT`: the stores (and the benchmark's own threads) on the cores of STORES, the
    measured client on those of CLIENT, each a CPU list as taskset takes it ("0", "0-1", "0,2").

    On a 2-core machine "0:1" gives the client a core of its own: what it costs is then its own,
    not a share of a core it contends for with ZooKeeper and the broker. Without --pin nothing is
    pinned.
    """

    def __init__(self, spec: str | None):
        self.spec = spec
        self.stores: set[int] | None = None
        self.client: set[int] | None = None
        if spec:
            stores, sep, client = spec.partition(":")
            if not sep:
                raise ValueError(f"--pin {spec!r}: give STORES:CLIENT, e.g. 0:1")
            self.stores, self.client = _cpu_list(stores), _cpu_list(client)
            unknown = (self.stores | self.client) - os.sched_getaffinity(0)
            if unknown:
                raise ValueError(f"--pin {spec!r}: no such core here: {sorted(unknown)}")

    def pin_self(self) -> None:
        """Pin this process (call it before any thread or child starts: both inherit it) to the
        stores' cores."""
        if self.stores is not None:
            os.sched_setaffinity(0, self.stores)

    def client_preexec(self):
        """preexec_fn for a measured child process: onto the client's cores."""
        if self.client is None:
            return None
        cores = self.client
        return lambda: os.sched_setaffinity(0, cores)

    @contextmanager
    def client_thread(self):
        """The calling thread on the client's cores for the block, and every thread it starts there
        (they inherit it): kafka-python's clients do their IO on a thread of their own, started
        when the client is built, so build them inside the block."""
        if self.client is None:
            yield
            return
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, self.client)
        try:
            yield
        finally:
            os.sched_setaffinity(0, before)

    def describe(self) -> str:
        if self.spec is None:
            return "not pinned"
        return (f"pinned: ZooKeeper, the broker and the benchmark on {_cores(self.stores)}, "
                f"the measured client on {_cores(self.client)}")

    def figures(self) -> dict | None:
        if self.spec is None:
            return None
        return {"spec": self.spec, "stores": sorted(self.stores), "client": sorted(self.client)}


def _cores(cores: set[int]) -> str:
    return ("core " if len(cores) == 1 else "cores ") + ",".join(map(str, sorted(cores)))


def _cpu_list(text: str) -> set[int]:
    cores: set[int] = set()
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            raise ValueError(f"not a CPU list: {text!r} (e.g. 0, 0-1, 0,2)")
        cores.update(range(int(first), int(last or first) + 1))
    return cores


def stores(zookeeper: str | None, bootstrap: str | None, work: Path, **sandbox):
    """(cluster, ZooKeeper, Kafka): the stores given (cluster None), or a sandbox of the
    benchmark's own under `work`, started with `sandbox` (zk_heap, broker_heap,
    offsets_partitions), for the caller to stop."""
    if bootstrap is not None:
        return None, zookeeper, bootstrap
    from migrate.sandbox.cluster import LocalCluster

    cluster = LocalCluster(work / "sandbox", CACHE_DIR, attached=True, **sandbox)
    try:
        endpoints = cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster, endpoints.zookeeper, endpoints.bootstrap_server


def make_topics(bootstrap: str, layout: Layout) -> None:
    """Create the topics and put `messages` messages into every partition, so the offsets are in range."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="zk2kafka-bench")
    try:
        admin.create_topics({layout.topic(t): {"num_partitions": layout.partitions, "replication_factor": 1}
                             for t in range(layout.topics)}, wait_for_metadata=True)
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, client_id="zk2kafka-bench")
    try:
        for t in range(layout.topics):
            for p in range(layout.partitions):
                for m in range(layout.messages):
                    producer.send(layout.topic(t), value=f"{p}-{m}".encode(), partition=p)
        producer.flush()
    finally:
        producer.close()


def seed_zookeeper(hosts: str, layout: Layout, prefix: str, groups: int, tx_ops: int = 500,
                   in_flight: int = 32, first: int = 0) -> int:
    """Create /consumers/<group>/offsets/<topic>/<partition> for groups first..first+groups-1 with
    pipelined multi-ops.

    Returns the number of offset znodes. A transaction holds whole groups (parents before children).
    """
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    try:
        zk.ensure_path("/consumers")
        pending, tx, ops = [], zk.transaction(), 0

        def flush(tx):
            pending.append(tx.commit_async())
            if len(pending) >= in_flight:
                drain(pending[: in_flight // 2])
                del pending[: in_flight // 2]

        for i in range(first, first + groups):
            base = f"/consumers/{layout.group(prefix, i)}"
            offsets = layout.offsets(i)
            tx.create(base)
            tx.create(f"{base}/offsets")
            for topic in sorted({tp.topic for tp in offsets}):
                tx.create(f"{base}/offsets/{topic}")
            for tp, offset in offsets.items():
                tx.create(f"{base}/offsets/{tp.topic}/{tp.partition}", str(offset).encode())
            ops += 2 + len(offsets) + len({tp.topic for tp in offsets})
            if ops >= tx_ops:
                flush(tx)
                tx, ops = zk.transaction(), 0
        if ops:
            flush(tx)
        drain(pending)
    finally:
        zk.stop()
        zk.close()
    return groups * layout.partitions


def drain(results) -> None:
    for r in results:
        for op in r.get():
            if isinstance(op, Exception):
                raise op


def verify(bootstrap: str, layout: Layout, prefix: str, indices: list[int], sample: int) -> dict:
    """Read back a spread-out sample of `indices`' groups; each must hold exactly its offsets."""
    step = max(1, len(indices) // max(1, sample))
    chosen = indices[::step][:sample]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="zk2kafka-bench-verify")
    bad = []
    try:
        for k in range(0, len(chosen), 200):
            chunk = {layout.group(prefix, i): i for i in chosen[k:k + 200]}
            answer = admin.list_group_offsets({g: None for g in chunk})
            for g, i in chunk.items():
                got = {tp: om.offset for tp, om in answer.get(g, {}).items()}
                if got != layout.offsets(i):
                    bad.append(g)
    finally:
        admin.close()
    return {"verified_groups": len(chosen), "verified_ok": len(chosen) - len(bad), "mismatched": bad[:10]}


def bench_tool(bootstrap: str, layout: Layout, prefix: str, sample: int, jars: list[Path], work: Path,
               pin: Pinning) -> dict:
    """Kafka's ConsumerGroupCommand, one JVM per group; returns the timing of `sample` groups."""
    (work / "tools-log4j.properties").write_text(TOOLS_LOG4J)
    java = ["java", *TOOL_JVM_OPTS, f"-Dlog4j.configuration=file:{work / 'tools-log4j.properties'}",
            "-cp", os.pathsep.join(map(str, jars)), TOOL_MAIN]
    # The CSV files are written before the clock starts: a migration script would have them already.
    files = []
    for i in range(sample):
        g = layout.group(prefix, i)
        f = work / f"{g}.csv"
        f.write_text("".join(f"{g},{tp.topic},{tp.partition},{o}\n" for tp, o in layout.offsets(i).items()))
        files.append((g, f))
    each, error = [], None
    start = time.perf_counter()
    for g, f in files:
        t0 = time.perf_counter()
        done = subprocess.run([*java, "--bootstrap-server", bootstrap, "--reset-offsets", "--from-file", str(f),
                               "--group", g, "--execute"], capture_output=True, text=True, timeout=300,
                              preexec_fn=pin.client_preexec())
        each.append(time.perf_counter() - t0)
        if done.returncode != 0:
            error = f"exit {done.returncode} on {g}: {_tail(done.stderr or done.stdout)}"
            break
    return {"seconds": time.perf_counter() - start, "timed_groups": len(each),
            "per_group_min_s": min(each, default=None),
            "per_group_max_s": max(each, default=None), "error": error}


def bench_naive(bootstrap: str, layout: Layout, prefix: str, sample: int, pin: Pinning) -> dict:
    """kafka-python: per group a consumer, one commit of all its offsets, close."""
    # In this process, on the client's cores: each consumer's IO thread starts in the block and
    # inherits them. A consumer that joins no group (a manual commit) runs no heartbeat.
    with pin.client_thread():
        start = time.perf_counter()
        for i in range(sample):
            consumer = KafkaConsumer(group_id=layout.group(prefix, i), bootstrap_servers=bootstrap,
                                     enable_auto_commit=False)
            consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in layout.offsets(i).items()})
            consumer.close()
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "timed_groups": sample, "error": None}


def bench_admin_loop(bootstrap: str, layout: Layout, prefix: str, sample: int, pin: Pinning) -> dict:
    """One KafkaAdminClient, `alter_group_offsets` per group, blind; the timing of `sample` groups."""
    # Built before the clock: a script would read them from a file it already has.
    work = [(layout.group(prefix, i), {tp: OffsetAndMetadata(o, "", -1) for tp, o in layout.offsets(i).items()})
            for i in range(sample)]
    # In this process, on the client's cores: the admin's IO thread starts with it, inside the block,
    # and inherits them; this thread only waits on it, and no other thread of ours runs meanwhile.
    with pin.client_thread():
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="zk2kafka-bench-loop")
        try:
            start = time.perf_counter()
            for group, offsets in work:
                admin.alter_group_offsets(group, offsets)
            seconds = time.perf_counter() - start
        finally:
            admin.close()
    return {"seconds": seconds, "timed_groups": sample, "error": None}


def bench_java_admin(bootstrap: str, layout: Layout, prefix: str, groups: int, jars: list[Path], work: Path,
                     pin: Pinning) -> dict:
    """Kafka's Java Admin (AlterOffsets.java): `alterConsumerGroupOffsets` for every group at once, blind.

    The row's seconds are the program's own (first call sent -> last acknowledged), `client_cpu_s` the
    CPU its JVM spent meanwhile; `child_wall_s` adds the JVM's start, the in-memory compile of the
    source and the Admin's connection."""
    # Written before the clock: a script would have its offsets already.
    offsets = work / "java-admin-offsets.txt"
    with offsets.open("w") as f:
        for i in range(groups):
            g = layout.group(prefix, i)
            f.writelines(f"{g} {tp.topic} {tp.partition} {o}\n" for tp, o in layout.offsets(i).items())
    (work / "tools-log4j.properties").write_text(TOOLS_LOG4J)
    # Tuned for pace, not Kafka's tool's options: the JVM's own heap, and C1 only. A short run spends
    # its window warming up, and C2's compiler threads take the client's own cores to do it: pinned
    # to one core, C1 alone halved the window at 1,000 groups, and the client then waits on the broker.
    cmd = ["java", "-XX:TieredStopAtLevel=1", f"-Dlog4j.configuration=file:{work / 'tools-log4j.properties'}",
           "-cp", os.pathsep.join(map(str, jars)), str(JAVA_ADMIN), bootstrap, str(offsets)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=pin.client_preexec())
    wall = time.perf_counter() - start
    out = {"seconds": wall, "child_wall_s": wall, "timed_groups": groups, "exit_code": done.returncode,
           "error": None}
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = None
    if done.returncode != 0:
        out["error"] = f"exit {done.returncode}: {_tail(done.stderr or done.stdout)}"
    elif not isinstance(result, dict) or result.get("groups") != groups:
        out["error"] = f"unexpected output: {_tail(done.stdout)}"
    else:
        out.update(seconds=result["seconds"], client_cpu_s=result["cpu_s"], jvm_setup_s=result["setup_s"])
    return out


def bench_zk2kafka(zookeeper: str, bootstrap: str, prefix: str, groups: int, options: list[str],
                   state: Path, pin: Pinning) -> dict:
    """`zk2kafka migrate --execute OPTIONS` over the groups named `prefix*`, timed whole; failures are reported."""
    cmd = [sys.executable, "-m", "migrate", "migrate", "--execute", "--zookeeper", zookeeper,
           "--bootstrap-server", bootstrap, "--state-dir", str(state), *options,
           "--group", f"{prefix}.*", "--json", "-q"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, preexec_fn=pin.client_preexec())
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "timed_groups": groups, "exit_code": done.returncode, "error": None}
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = None
    if done.returncode != 0:
        out["error"] = f"exit {done.returncode}: {_tail(done.stderr or done.stdout)}"
    elif not isinstance(result, dict) or result.get("state") != "done":
        out["error"] = f"unexpected output: {_tail(done.stdout)}"
    if isinstance(result, dict):
        out["written"] = result.get("written")
        out["run"] = result.get("run")
    out["write_phase_s"] = _write_phase(state)
    return out


def bench_reviewed(zookeeper: str, bootstrap: str, prefix: str, groups: int, options: list[str],
                   state: Path, pin: Pinning) -> dict:
    """`zk2kafka diff`, then `zk2kafka migrate --execute --plan RUN` over the groups named `prefix*`, each timed."""
    base = ["--zookeeper", zookeeper, "--bootstrap-server", bootstrap, "--state-dir", str(state),
            "--group", f"{prefix}.*", "--json", "-q"]
    start = time.perf_counter()
    diffed = subprocess.run([sys.executable, "-m", "migrate", "diff", *base], capture_output=True, text=True, cwd=ROOT,
                            preexec_fn=pin.client_preexec())
    diff_s = time.perf_counter() - start
    out = {"diff_s": diff_s, "timed_groups": groups, "error": None}
    if diffed.returncode != 0:
        return {**out, "seconds": diff_s,
                "error": f"diff exit {diffed.returncode}: {_tail(diffed.stderr or diffed.stdout)}"}
    plan = json.loads(diffed.stdout)["plan_id"]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "migrate", "migrate", "--execute", "--plan", plan,
                           *options, *base], capture_output=True, text=True, cwd=ROOT,
                          preexec_fn=pin.client_preexec())
    out.update(execute_s=time.perf_counter() - start, plan=plan)
    out["seconds"] = out["diff_s"] + out["execute_s"]
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = None
    if done.returncode != 0:
        out["error"] = f"exit {done.returncode}: {_tail(done.stderr or done.stdout)}"
    elif not isinstance(result, dict) or result.get("state") != "done":
        out["error"] = f"unexpected output: {_tail(done.stdout)}"
    else:
        out["written"] = result.get("written")
    out["write_phase_s"] = _write_phase(state)
    return out


def _write_phase(state: Path) -> float | None:
    """The write phase of the state dir's migrate run, from its journal: plan journaled -> run done."""
    journal = state / "journal.sqlite"
    if not journal.exists():
        return None
    with sqlite3.connect(journal) as db:
        row = db.execute("SELECT updated - created FROM runs WHERE kind='migrate'").fetchone()
    return row[0] if row else None


def _tail(text: str, lines: int = 5) -> str:
    return " / ".join(line.strip() for line in text.strip().splitlines()[-lines:]) or "(no output)"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zookeeper", help="an existing ZooKeeper, with the chroot holding /consumers (zk2kafka only)")
    ap.add_argument("--bootstrap-server", help="an existing Kafka instead of a fresh sandbox")
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=10, help="offsets per group (partitions of each topic)")
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--messages", type=int, default=5, help="messages per partition; offsets lie in 1..messages")
    ap.add_argument("--loop-sample", type=int, help="groups timed with the one-admin-client loop (default: all)")
    ap.add_argument("--tool-sample", type=int, default=20, help="groups timed with Kafka's tool")
    ap.add_argument("--naive-sample", type=int, default=500, help="groups timed with the kafka-python loop")
    ap.add_argument("--parallelism", type=int, nargs="+", default=[8], help="zk2kafka --parallelism values")
    ap.add_argument("--writers", type=int, nargs="+", default=[1],
                    help="zk2kafka --writers values (writer processes), each with every --parallelism")
    ap.add_argument("--skip-zk2kafka", action="store_true", help="time the baselines only")
    ap.add_argument("--skip-baselines", action="store_true",
                    help="no tool, no naive loop (the admin loop always runs, the Java Admin unless skipped)")
    ap.add_argument("--skip-java-admin", action="store_true", help="no Java Admin row")
    ap.add_argument("--skip-reviewed-plan", action="store_true", help="no diff + migrate --execute --plan rows")
    ap.add_argument("--skip-whole", action="store_true",
                    help="no `migrate --execute` (scan + diff + write) rows: the reviewed plan's only")
    ap.add_argument("--verify-sample", type=int, default=200, help="groups read back per method")
    ap.add_argument("--pin", metavar="STORES:CLIENT",
                    help="pin ZooKeeper, the broker and the benchmark to the cores STORES and every measured "
                         "client to CLIENT (CPU lists as taskset takes them), e.g. 0:1")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    try:
        pin = Pinning(args.pin)
    except ValueError as e:
        ap.error(str(e))
    before = os.sched_getaffinity(0)
    # Before any thread or child starts: the sandbox's JVMs inherit the stores' cores.
    pin.pin_self()
    if (args.zookeeper is None) != (args.bootstrap_server is None) and not (args.skip_zk2kafka
                                                                             and args.bootstrap_server):
        ap.error("give both --zookeeper and --bootstrap-server, or neither (a sandbox is started)")
    tool_sample, naive_sample = min(args.tool_sample, args.groups), min(args.naive_sample, args.groups)
    loop_sample = min(args.loop_sample or args.groups, args.groups)
    command = "python tests/perf/bench_migrate.py " + " ".join(sys.argv[1:] if argv is None else argv)

    from migrate.jvm.artifacts import ensure_bundle

    run = f"bench{uuid.uuid4().hex[:6]}"
    layout = Layout(run, args.topics, args.partitions, args.messages)
    total = args.groups * args.partitions
    work = Path(tempfile.mkdtemp(prefix="zk2kafka-bench-migrate-"))
    cluster = None
    rows: list[dict] = []
    setup: dict = {}
    try:
        t0 = time.perf_counter()
        jars = ensure_bundle("kafka-3.9", CACHE_DIR)
        cluster, zookeeper, bootstrap = stores(args.zookeeper, args.bootstrap_server, work, zk_heap="1g")
        if cluster is not None:
            setup["cluster_start_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        make_topics(bootstrap, layout)
        setup["topics_s"] = round(time.perf_counter() - t0, 1)
        _say(f"run {run}: {args.topics} topics x {args.partitions} partitions x {args.messages} messages "
             f"in {setup['topics_s']}s; Kafka {bootstrap}, ZooKeeper {zookeeper}")

        prefix = f"{run}-loop-"
        _say(f"one-admin-client loop: {loop_sample} groups")
        rows.append({"method": "one KafkaAdminClient, `alter_group_offsets` per group (Kafka only, blind)",
                     "key": "loop", "extrapolated": loop_sample < args.groups,
                     **bench_admin_loop(bootstrap, layout, prefix, loop_sample, pin)})
        rows[-1].update(verify(bootstrap, layout, prefix, list(range(loop_sample)), args.verify_sample))

        if not args.skip_java_admin:
            prefix = f"{run}-java-"
            _say(f"Java Admin: {args.groups} groups, all in flight at once")
            rows.append({"method": "Kafka's Java Admin, `alterConsumerGroupOffsets` for every group at once "
                                   "(Kafka only, blind; timed in the JVM)", "key": "java_admin", "extrapolated": False,
                         **bench_java_admin(bootstrap, layout, prefix, args.groups, jars, work, pin)})
            rows[-1].update(verify(bootstrap, layout, prefix, list(range(args.groups)), args.verify_sample))

        if not args.skip_baselines:
            prefix = f"{run}-tool-"
            _say(f"Kafka's tool: {tool_sample} groups, one JVM each")
            rows.append({"method": "Kafka tool (ConsumerGroupCommand --reset-offsets, one JVM per group)",
                         "key": "tool", "extrapolated": tool_sample < args.groups,
                         **bench_tool(bootstrap, layout, prefix, tool_sample, jars, work, pin)})
            rows[-1].update(verify(bootstrap, layout, prefix, list(range(rows[-1]["timed_groups"])),
                                   args.verify_sample))

            prefix = f"{run}-naive-"
            _say(f"naive kafka-python: {naive_sample} groups")
            rows.append({"method": "naive kafka-python (consumer + commit + close per group)", "key": "naive",
                         "extrapolated": naive_sample < args.groups,
                         **bench_naive(bootstrap, layout, prefix, naive_sample, pin)})
            rows[-1].update(verify(bootstrap, layout, prefix, list(range(naive_sample)), args.verify_sample))

        def checked(row: dict, prefix: str) -> dict:
            """The row, failed unless every offset was written and the sampled groups read back right."""
            if row["error"] is None and row.get("written") != total:
                row["error"] = f"wrote {row.get('written')} of {total:,} offsets"
            if row["error"] is None:
                row.update(verify(bootstrap, layout, prefix, list(range(args.groups)), args.verify_sample))
            return row

        if not args.skip_zk2kafka:
            for n, w in [(n, w) for n in args.parallelism for w in args.writers]:
                tag, options = (f"p{n}", f"--parallelism {n}") if w == 1 else (f"p{n}-w{w}",
                                                                             f"--parallelism {n} --writers {w}")
                prefix = f"{run}-zk2k-{tag}-"
                if not args.skip_whole:
                    t0 = time.perf_counter()
                    znodes = seed_zookeeper(zookeeper, layout, prefix, args.groups)
                    seeded = time.perf_counter() - t0
                    setup[f"zk_seed_{tag}_s"] = round(seeded, 1)
                    _say(f"zk2kafka {options}: seeded {znodes:,} offset znodes in {seeded:.1f}s; migrating")
                    row = {"method": f"zk2kafka migrate --execute {options} (whole command)",
                           "key": f"zk2kafka-{tag}", "extrapolated": False,
                           **bench_zk2kafka(zookeeper, bootstrap, prefix, args.groups, options.split(),
                                            work / f"state-{tag}", pin)}
                    rows.append(checked(row, prefix))
                    if row.get("write_phase_s"):
                        rows.append({**row, "method": f"zk2kafka {options}, write phase only (dual commit, "
                                                      "read-backs, journal; no scan, snapshot or Spark)",
                                     "key": f"zk2kafka-{tag}-write", "seconds": row["write_phase_s"]})
                if args.skip_reviewed_plan:
                    continue
                prefix = f"{run}-plan-{tag}-"
                seed_zookeeper(zookeeper, layout, prefix, args.groups)
                _say(f"zk2kafka {options}: diff, then migrate --execute --plan")
                row = {"method": f"zk2kafka diff + migrate --execute --plan {options}",
                       "key": f"zk2kafka-plan-{tag}", "extrapolated": False,
                       **bench_reviewed(zookeeper, bootstrap, prefix, args.groups, options.split(),
                                        work / f"state-plan-{tag}", pin)}
                rows.append(checked(row, prefix))
                if row["error"] is None:
                    rows.append({**row, "method": "the same: `zk2kafka diff` alone (scan, snapshot, Spark, report)",
                                 "key": f"zk2kafka-plan-{tag}-diff", "seconds": row["diff_s"]})
                    rows.append({**row, "method": f"the same: `migrate --execute --plan {options}` alone "
                                                  "(no scan, no Spark)",
                                 "key": f"zk2kafka-plan-{tag}-exec", "seconds": row["execute_s"]})
                    if row.get("write_phase_s"):
                        rows.append({**row, "method": f"the same: `migrate --execute --plan {options}`, write phase "
                                                      "only (dual commit, read-backs, journal)",
                                     "key": f"zk2kafka-plan-{tag}-write", "seconds": row["write_phase_s"]})
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
        os.sched_setaffinity(0, before)   # a test calling main() gets its cores back

    for r in rows:
        ok = r["error"] is None and r.get("verified_ok") == r.get("verified_groups")
        r["ok"] = ok
        if r["error"] is None and r["timed_groups"]:
            r["per_group_s"] = r["seconds"] / r["timed_groups"]
            r["offsets_per_s"] = r["timed_groups"] * args.partitions / r["seconds"]
            r["all_groups_s"] = r["per_group_s"] * args.groups
        else:
            r["per_group_s"] = r["offsets_per_s"] = r["all_groups_s"] = None
    # vs_java_admin: the fraction of the Java Admin's pace (its seconds over the row's, per offset).
    bases = ("loop", "java_admin", "tool", "naive")
    base = {r["key"]: r["offsets_per_s"] for r in rows if r["key"] in bases}
    for r in rows:
        for k in bases:
            mine, theirs = r["offsets_per_s"], base.get(k)
            r[f"vs_{k}"] = mine / theirs if mine and theirs else None

    figures = {"groups": args.groups, "partitions_per_group": args.partitions, "topics": args.topics,
               "messages_per_partition": args.messages, "offsets": total, "cores": os.cpu_count(), "run": run,
               "pin": pin.figures(), "setup": setup, "methods": rows, "command": command}
    print(f"\n{command}\n\n{total:,} offsets ({args.groups:,} groups x {args.partitions} partitions over "
          f"{args.topics} topics), {os.cpu_count()} cores, {pin.describe()}\n")
    print(f"| method | groups timed | wall time | per group | offsets/s | all {args.groups:,} groups | vs loop "
          "| vs Java Admin | vs tool | vs naive | verified |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        verified = f"{r['verified_ok']}/{r['verified_groups']} groups" if "verified_groups" in r else "-"
        if r["error"] is not None:
            print(f"| {r['method']} | {r['timed_groups']:,} | {r['seconds']:.1f} s | - | - | - | - | - | - | - "
                  f"| FAILED: {r['error'][:300].replace('|', '/')} |")
            continue
        guess = " (extrapolated)" if r["extrapolated"] else ""
        ratios = " | ".join(_ratio(r[f"vs_{k}"]) for k in bases)
        print(f"| {r['method']} | {r['timed_groups']:,} | {r['seconds']:.1f} s | {r['per_group_s'] * 1000:,.2f} ms "
              f"| {r['offsets_per_s']:,.0f}{guess} | {r['all_groups_s']:,.0f} s{guess} | {ratios} "
              f"| {verified}{'' if r['ok'] else ' MISMATCH'} |")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return figures


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}x" if x >= 1 else f"{x:.2g}x"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(0 if all(r["ok"] for r in main()["methods"]) else 1)
