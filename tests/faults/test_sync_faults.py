"""`zk2kafka sync --execute` following a rolling cutover through faults.

Each test runs the real command as a process on the fault cluster, with --rescan-every 1h so that
only watches (and the re-scan a lost session starts at once) bring changes in: a watch not
re-armed after the fault shows as a change never mirrored. Old consumers keep committing to
ZooKeeper before, during and after the fault; one group had its Kafka offsets committed by
someone else before it (sync stops it: differs), and its old consumer's stale commits keep coming.
After each fault, Kafka must hold what ZooKeeper last holds for every group still mirrored, and
the other group the values someone else committed. The outcome goes to the suite's summary line.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kafka import TopicPartition
from kafka.structs import OffsetAndMetadata
from kazoo.exceptions import KazooException
from prometheus_client.parser import text_string_to_metric_families

from support.faults import ROOT, brokers, coordinator_partition, kill9, restart_broker, restart_zookeeper, server
from support.wait import free_port, wait_for

pytestmark = pytest.mark.integration

GROUPS = 12
SESSION_PAUSE = 25.0   # seconds sync is frozen: past its 15 s ZooKeeper session, which expires


class Sync:
    """`zk2kafka sync --execute` on a case, as a process with its metrics endpoint."""

    def __init__(self, case, log: Path):
        self.address, self.log = f"127.0.0.1:{free_port()}", log
        with log.open("a") as err:   # a file, not a pipe: a full pipe would stall sync
            self.process = subprocess.Popen(
                [sys.executable, "-m", "migrate", "sync", "--execute",
                 *case.args("--rescan-every", "1h", "--stop-after", "900s",
                            "--metrics-address", self.address)],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)})

    def get(self, path: str) -> tuple[int, str] | None:
        """(status, body) of GET `path`, or None while nothing answers."""
        try:
            with urllib.request.urlopen(f"http://{self.address}{path}", timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()
        except (urllib.error.URLError, OSError):
            return None

    def sample(self, name: str, **labels) -> float | None:
        got = self.get("/metrics")
        if got is None:
            return None
        for family in text_string_to_metric_families(got[1]):
            for s in family.samples:
                if s.name == name and s.labels == labels:
                    return s.value
        return None

    def healthy(self) -> bool:
        return self.get("/healthz") == (200, "ok\n")

    def unhealthy_because(self, what: str) -> str | None:
        got = self.get("/healthz")
        return got[1] if got is not None and got[0] == 503 and what in got[1] else None

    def kill9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)
        assert self.process.returncode == 0, self.log.read_text()[-3000:]


class OldConsumers(threading.Thread):
    """The old consumers' auto-commits: every few milliseconds one znode moves forward, until
    halted; through a fault the test's client retries."""

    def __init__(self, case, keys, rng: random.Random):
        super().__init__(daemon=True)
        self.case, self.keys, self.rng = case, keys, rng
        self.offsets = {key: case.expected[key] for key in keys}
        self.halt = threading.Event()
        self.commits = 0

    def run(self) -> None:
        zk = self.case.stores.zk
        while not self.halt.is_set():
            key = self.rng.choice(self.keys)
            self.offsets[key] += self.rng.randrange(1, 5)
            try:
                zk.retry(zk.set, self.case.path(*key), str(self.offsets[key]).encode())
                self.commits += 1
            except KazooException:
                pass   # ZooKeeper away past the retries: a commit the old consumer lost too
            time.sleep(0.02)


def zk_offsets(case) -> dict:
    return {key: int(value) for key, (value, _) in case.zk_state().items()}


def differing(case, groups) -> list:
    """Keys of `groups` where Kafka does not hold ZooKeeper's offset."""
    zk, kafka = zk_offsets(case), case.kafka_state()
    return sorted(k for k in zk if k[0] in groups and kafka[k] != zk[k])


def cutover(stores, fault_log, name: str, fault) -> None:
    """Sync follows a cutover under way; `fault(sync, case)` is injected while old consumers
    commit and returns the sync that runs on (the same, or one started again). Then the check."""
    rng = random.Random(f"{fault_log.seed}-{name}")
    case = stores.case(name)
    case.seed(GROUPS, rng)
    taken, mirrored = case.groups[0], case.groups[1:]
    sync = Sync(case, stores.tmp / f"{name}-sync.log")
    old = None
    try:
        wait_for("sync to mirror every group", lambda: not differing(case, case.groups), 90)
        assert sync.healthy(), sync.get("/healthz")
        # Someone else committed `taken` further on in Kafka (an admin tool: no consumer is shown,
        # so the group differs); its old consumer's stale commit still lands in ZooKeeper, which
        # sync must not copy.
        theirs = {key: offset + 500 for key, offset in case.expected.items() if key[0] == taken}
        stores.admin.alter_group_offsets(taken, {TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                                                 for (_, t, p), o in theirs.items()})
        key = next(iter(theirs))
        stores.zk.set(case.path(*key), str(case.expected[key] + 1).encode())
        wait_for("sync to leave the group someone else wrote", lambda: sync.sample(
            "zk2kafka_sync_groups_stopped", reason="differs") == 1, 30)

        old = OldConsumers(case, list(case.expected), rng)
        old.start()
        wait_for("old consumers committing", lambda: old.commits >= 20, 30)
        sync = fault(sync, case)
        time.sleep(1)   # commits after the recovery too
        old.halt.set()
        old.join(timeout=90)

        try:
            wait_for("Kafka to hold ZooKeeper's last commits", lambda: not differing(case, mirrored),
                     60)
        except AssertionError:
            pass
        lost = differing(case, mirrored)
        kafka = case.kafka_state()
        rewound = sorted(k for k, o in theirs.items() if kafka[k] != o)
        stores.log.outcome(converged=not lost and not rewound, lost=len(lost))
        assert not lost, f"{len(lost)} change(s) never mirrored, e.g. {lost[:3]}"
        assert not rewound, f"the group someone else wrote was moved: {[(k, kafka[k]) for k in rewound]}"
        wait_for("sync healthy again", sync.healthy, 60)
    finally:
        if old is not None:
            old.halt.set()
        sync.stop()


def test_sync_follows_through_a_zookeeper_session_expiry(stores, fault_log):
    def expire(sync: Sync, case) -> Sync:
        # Frozen past its session timeout, as a long GC pause or a stalled VM would: ZooKeeper
        # expires the session and drops its watches; sync comes back to a new one.
        os.kill(sync.process.pid, signal.SIGSTOP)
        try:
            time.sleep(SESSION_PAUSE)
        finally:
            os.kill(sync.process.pid, signal.SIGCONT)
        fault_log.fault("sync: zookeeper session expiry")
        wait_for("sync to see its session expired", lambda: (
            sync.sample("zk2kafka_sync_zookeeper_sessions_lost_total") or 0) >= 1, 60)
        return sync

    cutover(stores, fault_log, "sync-expiry", expire)


def test_sync_follows_through_zookeeper_killed_and_restarted(stores, fault_log):
    def crash(sync: Sync, case) -> Sync:
        zookeeper = server(stores.cluster, "zookeeper")
        kill9(zookeeper)
        reason = wait_for("/healthz to say ZooKeeper is away",
                          lambda: sync.unhealthy_because("ZooKeeper"), 30)
        assert "connection lost" in reason, reason
        restart_zookeeper(stores.cluster)
        fault_log.fault("sync: zookeeper kill -9 + restart")
        wait_for("sync healthy again", sync.healthy, 60)
        return sync

    cutover(stores, fault_log, "sync-zk-restart", crash)


def test_sync_follows_through_a_broker_killed_and_restarted(stores, fault_log):
    def crash(sync: Sync, case) -> Sync:
        # The coordinator of most of the case's groups dies: they move to the other broker.
        (offsets,) = stores.admin.describe_topics(["__consumer_offsets"])
        leader = {p["partition_index"]: p["leader_id"] for p in offsets["partitions"]}
        coordinators = [leader[coordinator_partition(g, len(leader))] for g in case.groups]
        victim = max(set(coordinators), key=coordinators.count)
        kill9(brokers(stores.cluster)[victim])
        fault_log.fault("sync: broker kill -9 + restart")
        time.sleep(5)   # commits go on, through the coordinator that moved
        restart_broker(stores.cluster, stores.zk, victim)
        return sync

    cutover(stores, fault_log, "sync-broker", crash)


def test_healthz_says_503_while_kafka_is_down(stores, fault_log):
    case = stores.case("sync-kafka-down")
    case.seed(2, random.Random(f"{fault_log.seed}-sync-kafka-down"))
    sync = Sync(case, stores.tmp / "sync-kafka-down.log")
    try:
        # Following, not just serving /healthz: its endpoint answers while it still reads the stores.
        wait_for("sync to mirror every group", lambda: not differing(case, case.groups), 90)
        wait_for("sync healthy", sync.healthy, 90)
        dead = brokers(stores.cluster)
        for broker in dead.values():
            kill9(broker)
        fault_log.fault("sync: every broker kill -9", len(dead))
        wait_for("/healthz to say Kafka is away", lambda: sync.unhealthy_because("Kafka:"), 30)
        for broker_id in reversed(sorted(dead)):   # the last to die leads: it comes back first
            restart_broker(stores.cluster, stores.zk, broker_id)
        wait_for("sync healthy again", sync.healthy, 90)
    finally:
        sync.stop()


def test_sync_killed_and_restarted_mid_cutover_takes_up_where_it_was(stores, fault_log):
    def crash(sync: Sync, case) -> Sync:
        sync.kill9()
        fault_log.fault("sync: sync kill -9 + restart")
        time.sleep(2)   # old consumers commit while no sync runs
        restarted = Sync(case, sync.log)   # the same state dir: the journal knows the run killed
        wait_for("the restarted sync healthy", restarted.healthy, 90)
        return restarted

    cutover(stores, fault_log, "sync-kill9", crash)
