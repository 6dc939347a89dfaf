"""Fault injection on the real servers of the suite's own cluster, and the check that a run converged.

Faults: `kill9` (SIGKILL a JVM), `pause` (SIGSTOP/SIGCONT), `restart_broker` (a killed broker comes back
once ZooKeeper has let go of its registration, as a supervisor's restart would), `restart_zookeeper`, and
`expire_session` (support/seeding.py). A `Case` is one test's (or one iteration's) world: a ZooKeeper chroot, a
group prefix, a state dir and the offsets it seeded; `Case.check` asserts the final state every run must
reach and feeds the `FaultLog` the suite's summary line comes from.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from migrate import cli
from migrate.write import dual_commit
from migrate.journal.journal import Journal
from migrate.kafka._compat import forget_coordinators
from migrate.sandbox.cluster import BROKER_CHROOT, LocalCluster
from migrate.jvm.server import JavaServer, kafka_ready, zk_answers
from support.cli import ROOT   # the checkout whose `migrate` the subprocesses must run
from support.seeding import kafka_offsets
from support.wait import wait_for

SEED_ENV = "ZK2KAFKA_FAULT_SEED"
FAULT_LOG = pytest.StashKey["FaultLog"]()   # the run's log, in pytest's config


@dataclass
class FaultLog:
    """What the suite did: faults injected by kind, runs checked, runs converged, offsets lost."""

    seed: int
    injected: Counter = field(default_factory=Counter)
    runs: int = 0
    converged: int = 0
    lost: int = 0

    def fault(self, kind: str, n: int = 1) -> None:
        self.injected[kind] += n

    def outcome(self, converged: bool, lost: int) -> None:
        self.runs += 1
        self.converged += converged
        self.lost += lost

    def to_json(self) -> dict:
        return {"injected": dict(self.injected), "runs": self.runs, "converged": self.converged, "lost": self.lost}

    def add(self, other: dict) -> None:
        """Another worker's log (to_json), when the suite runs in parallel workers."""
        self.injected.update(other["injected"])
        self.runs += other["runs"]
        self.converged += other["converged"]
        self.lost += other["lost"]

    def line(self) -> str:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(self.injected.items()))
        return (f"faults injected: {sum(self.injected.values())} ({kinds}); runs converged: {self.converged} of "
                f"{self.runs}; offsets lost: {self.lost}; seed {self.seed} (reproduce with {SEED_ENV}={self.seed})")


# -- servers ----------------------------------------------------------------------------------------------------


def server(cluster: LocalCluster, name: str) -> JavaServer:
    return next(s for s in cluster.servers if s.name == name)


def brokers(cluster: LocalCluster) -> dict[int, JavaServer]:
    """Broker id -> its JVM (`kafka` is broker 0, `kafka-N` broker N)."""
    return {0 if s.name == "kafka" else int(s.name.split("-")[1]): s for s in cluster.servers
            if s.name == "kafka" or s.name.startswith("kafka-")}


def kill9(victim: JavaServer) -> None:
    """SIGKILL, as a crash or the OOM killer would; returns once the process is gone."""
    os.killpg(victim.pid, signal.SIGKILL)
    wait_for(f"{victim.name} to die", lambda: not victim.alive(), 30)


@contextmanager
def pause(victim: JavaServer):
    """SIGSTOP the JVM for the duration of the block, then SIGCONT it."""
    os.killpg(victim.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(victim.pid, signal.SIGCONT)


def start(victim: JavaServer) -> None:
    # PR_SET_PDEATHSIG follows the thread that forks: only a JVM started by the main thread dies with the session.
    assert threading.current_thread() is threading.main_thread(), "start servers from the main thread"
    victim.start(attached=True)


def registered(zk: KazooClient, broker_id: int) -> bool:
    return zk.retry(zk.exists, f"{BROKER_CHROOT}/brokers/ids/{broker_id}") is not None


def restart_broker(cluster: LocalCluster, zk: KazooClient, broker_id: int) -> None:
    """Start a dead broker again once its old registration is gone (a fresh one fails on NodeExists before)."""
    victim = brokers(cluster)[broker_id]
    wait_for(f"the registration of dead broker {broker_id} to expire", lambda: not registered(zk, broker_id), 90)
    start(victim)
    wait_for(f"broker {broker_id} to register again", lambda: victim.alive() and registered(zk, broker_id), 90)


def restart_zookeeper(cluster: LocalCluster) -> None:
    zk = server(cluster, "zookeeper")
    start(zk)
    wait_for("ZooKeeper to answer again", lambda: zk_answers(cluster.endpoints.zk_server), 90)


def ensure_up(cluster: LocalCluster) -> None:
    """Every server alive and answering, every broker registered and every replica in sync (a test left it so)."""
    if not server(cluster, "zookeeper").alive():
        restart_zookeeper(cluster)
    zk = connect(cluster.endpoints.zk_server)
    admin = None
    try:
        for broker_id, broker in brokers(cluster).items():
            if not broker.alive():
                restart_broker(cluster, zk, broker_id)
            bootstrap = cluster.endpoints.bootstrap_server.split(",")[broker_id]
            wait_for(f"broker {broker_id} to answer", lambda b=bootstrap: kafka_ready(b), 90)
        admin = KafkaAdminClient(bootstrap_servers=cluster.endpoints.bootstrap_server, client_id="zk2kafka-faults")
        wait_for("every replica back in sync", lambda: all(
            len(p["isr_nodes"]) == len(p["replica_nodes"])
            for t in admin.describe_topics() for p in t["partitions"]), 90)
    finally:
        if admin is not None:
            admin.close()
        zk.stop()
        zk.close()


def connect(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, connection_retry=KazooRetry(max_tries=-1, max_delay=1),
                         command_retry=KazooRetry(max_tries=-1, max_delay=1, deadline=60))
    client.start(timeout=30)
    return client


def java_hash(text: str) -> int:
    """Java's String.hashCode of an ASCII/BMP string."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group: str, offsets_partitions: int) -> int:
    """The `__consumer_offsets` partition whose leader coordinates `group` (Kafka's Utils.abs(hash) % n)."""
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % offsets_partitions


# -- running zk2kafka -------------------------------------------------------------------------------------------


class Crashed(BaseException):
    """Raised at a crash point in-process: like `kill -9` there, without taking the test process along."""


def journaled_run(argv: list[str], state_dir: Path, monkeypatch) -> str:
    """`migrate --execute` in-process, stopped dead right after it journaled its plan; the run id.

    The plan (Spark, warm in this process) and the journal are real; the writing is then left to
    `--resume` processes, which the tests kill.
    """
    def crash(self, groups):
        raise Crashed("after the run was journaled")

    with monkeypatch.context() as patch:
        patch.setattr(dual_commit.DualCommit, "migrate", crash)
        try:
            cli.main(["migrate", *argv, "--execute", "-q"])
        except Crashed:
            pass
        else:
            raise AssertionError("migrate --execute never reached its first write")
    with Journal.open(state_dir) as journal:
        (run,) = journal.runs()
        assert run.state == "running" and run.groups["pending"] == len(journal.groups(run.run_id)), run
        return run.run_id


def spawn(argv: list[str], env: dict | None = None, **popen) -> subprocess.Popen:
    """`python -m migrate ARGV` as a process of its own, output captured."""
    return subprocess.Popen([sys.executable, "-m", "migrate", *argv], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def journal_progress(state_dir: Path, run_id: str) -> dict[str, int]:
    """Groups per state, plus `touched` (before-values journaled), read while another process writes."""
    with Journal.open(state_dir) as journal:
        run = journal.run(run_id)
        touched = sum(g.before_recorded for g in journal.groups(run_id))
    return {**run.groups, "touched": touched}


# -- a test's world ---------------------------------------------------------------------------------------------


@dataclass
class Case:
    """A chroot, a group prefix and a state dir of one test or iteration, and the offsets seeded into them."""

    stores: Stores
    chroot: str
    prefix: str
    state_dir: Path
    expected: dict[tuple[str, str, int], int] = field(default_factory=dict)
    # znodes seeded with a trailing newline, as some old clients wrote them: the dual commit rewrites them as
    # digits; the others hold the run's bytes already and are fenced by reading, never written
    rewritten: set[tuple[str, str, int]] = field(default_factory=set)

    @property
    def zookeeper(self) -> str:
        return self.stores.endpoints.zk_server + self.chroot

    @property
    def groups(self) -> list[str]:
        return sorted({g for g, _, _ in self.expected})

    def args(self, *extra: str) -> list[str]:
        return ["--zookeeper", self.zookeeper, "--bootstrap-server", self.stores.endpoints.bootstrap_server,
                "--state-dir", str(self.state_dir), "--group", f"{self.prefix}.*", *extra]

    def path(self, group: str, topic: str, partition: int) -> str:
        return f"{self.chroot}/consumers/{group}/offsets/{topic}/{partition}"

    def seed(self, groups: int | list[str], rng) -> dict:
        """Groups (a number of them, named <prefix>g<n>, or these names) with an offset per partition, in
        ZooKeeper only, a quarter of them with a trailing newline; the offsets seeded, which a run must carry
        into Kafka."""
        zk, topic = self.stores.zk, self.stores.topic
        names = [f"{self.prefix}g{i:04d}" for i in range(groups)] if isinstance(groups, int) else groups
        parents = [f"{self.chroot}/consumers"]
        for group in names:
            parents += [f"{self.chroot}/consumers/{group}", f"{self.chroot}/consumers/{group}/offsets",
                        f"{self.chroot}/consumers/{group}/offsets/{topic}"]
            for p in range(self.stores.partitions):
                self.expected[(group, topic, p)] = rng.randrange(0, self.stores.messages + 1)
                if rng.random() < 0.25:
                    self.rewritten.add((group, topic, p))
        zk.ensure_path(self.chroot)
        nodes = [(path, b"") for path in parents] + [
            (self.path(*key), str(offset).encode() + (b"\n" if key in self.rewritten else b""))
            for key, offset in self.expected.items()]
        for i in range(0, len(nodes), 500):
            tx = zk.transaction()
            for path, value in nodes[i:i + 500]:
                tx.create(path, value)
            results = tx.commit()
            assert not [r for r in results if isinstance(r, Exception)], results
        return self.expected

    def zk_state(self) -> dict[tuple[str, str, int], tuple[bytes, int]]:
        """(value, version) of every seeded znode, read pipelined."""
        pending = {key: self.stores.zk.get_async(self.path(*key)) for key in self.expected}
        state = {}
        for key, answer in pending.items():
            value, stat = answer.get(timeout=30)
            state[key] = (value, stat.version)
        return state

    def kafka_state(self) -> dict[tuple[str, str, int], int | None]:
        """Kafka's committed offset of every seeded partition, once the test's own client reaches it again."""
        def fetch():
            try:
                return kafka_offsets(self.stores.admin, self.groups) or None
            except KafkaError:
                # kafka-python keeps a group's coordinator after it moved to the other broker: ask again.
                forget_coordinators(self.stores.admin, self.groups)
                raise

        committed = wait_for("Kafka to answer the test's OffsetFetch", fetch, 90)
        return {(g, t, p): committed[g].get((t, p), (None,))[0] for g, t, p in self.expected}

    def after_run(self, key: tuple[str, str, int]) -> tuple[bytes, int]:
        """What a znode holds once a run wrote its group: the offset as digits, at version 1 where the bytes
        changed (written once), 0 where they did not (fenced: never written)."""
        return str(self.expected[key]).encode(), int(key in self.rewritten)

    def untouched(self) -> bool:
        """Nothing written anywhere: Kafka holds no offset of the case's groups, every znode is at version 0."""
        return (all(v is None for v in self.kafka_state().values())
                and all(version == 0 for _, version in self.zk_state().values()))

    def disagreements(self, run_id: str, kafka: dict | None = None, zk: dict | None = None) -> list[str]:
        """Where the journal and the stores disagree: a group written but not journaled as touched, or journaled
        committed / verified without the offsets to show for it, or a value nobody planned. Empty when they agree."""
        kafka = self.kafka_state() if kafka is None else kafka
        zk = self.zk_state() if zk is None else zk
        with Journal.open(self.state_dir) as journal:
            groups = {g.name: g for g in journal.groups(run_id)}
        keys_of: dict[str, list] = {}
        for key in self.expected:
            keys_of.setdefault(key[0], []).append(key)
        problems = []
        for name, keys in keys_of.items():
            in_kafka = [kafka[k] == self.expected[k] for k in keys]
            in_zk = [zk[k] == self.after_run(k) for k in keys]
            zk_written = [zk[k] == self.after_run(k) for k in keys if k in self.rewritten]
            stray = [k for k in keys if kafka[k] not in (None, self.expected[k])
                     or zk[k][1] > (k in self.rewritten)]
            group = groups[name]
            if stray:
                problems.append(f"{name}: values nobody planned: {stray[:2]}")
            if (any(in_kafka) or any(zk_written)) and not group.before_recorded:
                problems.append(f"{name}: written, but the journal has no before-values for it")
            if group.state in ("committed", "verified") and not all(in_kafka):
                problems.append(f"{name}: journaled {group.state}, but Kafka does not hold the plan")
            if group.state == "verified" and not all(in_zk):
                problems.append(f"{name}: journaled verified, but ZooKeeper does not hold the plan")
        return problems

    def check(self, run_id: str) -> None:
        """The final state of a run: Kafka == ZooKeeper == the seeded offsets, each znode written exactly once
        where its bytes change and never where they do not, the journal done with every group verified. Feeds
        the fault log, then asserts."""
        kafka, zk = self.kafka_state(), self.zk_state()
        lost = sorted(k for k, v in self.expected.items() if kafka[k] != v or zk[k][0] != str(v).encode())
        twice = sorted(k for k, (_, version) in zk.items() if version != self.after_run(k)[1])
        with Journal.open(self.state_dir) as journal:
            run = journal.run(run_id)
        done = run is not None and run.state == "done" and run.groups["verified"] == len(self.groups)
        self.stores.log.outcome(converged=not (lost or twice) and done, lost=len(lost))
        examples = [(k, self.expected[k], kafka[k], zk[k]) for k in lost[:3]]
        assert not lost, f"{len(lost)} offset(s) lost, e.g. (key, seeded, Kafka, ZooKeeper): {examples}"
        assert not twice, (f"{len(twice)} znode(s) not written once where the bytes change, never where they do "
                           f"not, e.g. {[(k, k in self.rewritten, zk[k]) for k in twice[:3]]}")
        assert done, f"journal: {run and (run.state, run.groups)}"


@dataclass
class Stores:
    """The test's own clients on the fault cluster (ZooKeeper without chroot, a Kafka admin) and its fault log."""

    cluster: LocalCluster
    zk: KazooClient
    admin: KafkaAdminClient
    topic: str
    partitions: int
    messages: int
    tmp: Path
    log: FaultLog

    @property
    def endpoints(self):
        return self.cluster.endpoints

    @classmethod
    @contextmanager
    def open(cls, cluster: LocalCluster, topic: str, partitions: int, messages: int, tmp: Path, log):
        zk = connect(cluster.endpoints.zk_server)
        admin = KafkaAdminClient(bootstrap_servers=cluster.endpoints.bootstrap_server, client_id="zk2kafka-faults")
        try:
            yield cls(cluster, zk, admin, topic, partitions, messages, tmp, log)
        finally:
            admin.close()
            zk.stop()
            zk.close()

    def case(self, name: str = "case") -> Case:
        """A fresh chroot, group prefix and state dir."""
        tag = uuid.uuid4().hex[:10]
        return Case(self, f"/faults/{tag}", f"{name}-{tag}-", self.tmp / f"{name}-{tag}")
