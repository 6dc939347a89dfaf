"""`zk2kafka sync` under real old high-level consumers, switched one group at a time to kafka-python consumers.

The old consumers are Kafka 0.10.2's own console consumer in its ZooKeeper mode (`--zookeeper`):
`ZookeeperConsumerConnector`, registered under ids/ and owners/, auto-committing offsets to
ZooKeeper, exactly what clusters still carry. It runs on Java 17 against the 3.9 broker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from migrate.journal.journal import Journal

from support.old_consumers import COMMIT_INTERVAL, old_consumer
from support.seeding import kafka_offsets, make_topic, put
from support.wait import wait_for

HERE = Path(__file__).parent


class Producer(threading.Thread):
    """Keeps real messages flowing into every partition until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        super().__init__(daemon=True)
        # One producer, one request in flight: the n-th value of a partition lands at offset n.
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all",
                                      max_in_flight_requests_per_connection=1)
        self.topic, self.partitions = topic, partitions
        self.halt = threading.Event()
        self.sent, self.seconds = 0, 0.0

    def run(self) -> None:
        started = time.monotonic()
        while not self.halt.is_set():
            for p in range(self.partitions):
                self.producer.send(self.topic, f"{p}:{self.sent}".encode(), partition=p)
            self.sent += 1
            time.sleep(0.02)
        self.seconds = time.monotonic() - started
        self.producer.flush()
        self.producer.close()


class NewConsumer(threading.Thread):
    """The replacement: a kafka-python group member with auto-commit, logging what it processed."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=bootstrap, enable_auto_commit=True,
                                      auto_commit_interval_ms=int(COMMIT_INTERVAL * 1000),
                                      auto_offset_reset="earliest")   # a missing offset would show as reprocessing
        self.seen: list[tuple[int, int]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            # Long enough for a whole join on a loaded host (tests/support/consumers.py); records end it sooner.
            for tp, records in self.consumer.poll(timeout_ms=1000).items():
                for r in records:
                    assert r.value == f"{tp.partition}:{r.offset}".encode(), r   # value names its offset
                    self.seen.append((tp.partition, r.offset))
        self.consumer.close()   # commits what it processed


def test_sync_mirrors_old_consumers_and_a_rolling_switch_skips_nothing(cluster, broker_zk, kafka_admin, prefix,
                                                                       tmp_path):
    zk, zookeeper = broker_zk, cluster.zookeeper
    topic, partitions = f"{prefix}events", 2
    make_topic(kafka_admin, cluster.bootstrap_server, topic, partitions, 0)
    groups = [f"{prefix}app{i}" for i in range(2)]
    idle = f"{prefix}idle"   # no consumer at all: sync mirrors it, and nothing else touches it
    put(zk, f"/consumers/{idle}/offsets/{topic}/0", b"7")
    producer = Producer(cluster.bootstrap_server, topic, partitions)
    producer.start()

    for g in groups:   # groups with progress of their own already in ZooKeeper, where the old consumers resume
        for p in range(partitions):
            put(zk, f"/consumers/{g}/offsets/{topic}/{p}", b"0")
    logs = {g: tmp_path / f"{g}.out" for g in groups}
    old = {g: old_consumer(zookeeper, topic, g, logs[g], tmp_path) for g in groups}
    state = tmp_path / "state"
    sync_log = open(tmp_path / "sync.log", "w")
    sync = subprocess.Popen([sys.executable, "-m", "migrate", "sync", "--execute", "--zookeeper", zookeeper,
                             "--bootstrap-server", cluster.bootstrap_server, "--group", f"{prefix}.*",
                             "--state-dir", str(state), "--rescan-every", "2s",
                             "--quiet-for", f"{3 * COMMIT_INTERVAL:g}s",
                             "--stop-after", "300s", "--json"],
                            stdout=subprocess.PIPE, stderr=sync_log, text=True, cwd=HERE.parents[1],
                            env={**os.environ, "PYTHONPATH": str(HERE.parents[1])})
    new: dict[str, NewConsumer] = {}
    try:
        # While the old consumers run, Kafka follows their ZooKeeper commits within seconds.
        def zk_offsets(group):
            return {(topic, p): int(zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0]) for p in range(partitions)}

        for g in groups:
            wait_for(f"old consumer of {g} to commit",
                     lambda g=g: zk.get(f"/consumers/{g}/offsets/{topic}/1")[1].version,
                     timeout=60)
        time.sleep(2 * COMMIT_INTERVAL)
        target = zk_offsets(groups[0])
        mirrored_at = wait_for("sync to mirror a change", lambda: all(
            kafka_offsets(kafka_admin, [groups[0]])[groups[0]].get(k, (-1,))[0] >= o for k, o in target.items())
            and time.monotonic(), timeout=10)
        assert mirrored_at

        status_file = wait_for("sync's live status", lambda: next(state.glob("reports/*/sync-status.json"), None))
        for g in groups:
            # The runbook's switch: stop the old consumer (a last commit), wait until sync says the group
            # is ready (ids/ empty, every offset in Kafka), then start the new consumer.
            old[g].send_signal(signal.SIGTERM)   # its shutdown hook commits, then its session closes
            old[g].wait(timeout=30)
            final = zk_offsets(g)
            wait_for(f"{g} ready in sync's status",
                     lambda g=g: g in json.loads(status_file.read_text())["groups_ready"],
                     timeout=20)
            assert {k: v[0] for k, v in kafka_offsets(kafka_admin, [g])[g].items()} == final
            new[g] = NewConsumer(cluster.bootstrap_server, topic, g)
            new[g].start()

        # Each group that gained Kafka members is left alone from then on, and said so.
        wait_for("sync to stop both switched groups", lambda: set(groups) <= set(
            json.loads(status_file.read_text())["groups_stopped"]), timeout=30)
        producer.halt.set()
        producer.join(timeout=30)
        reader = KafkaConsumer(bootstrap_servers=cluster.bootstrap_server)
        try:
            end = reader.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
        finally:
            reader.close()   # else its metadata thread outlives the cluster, logging into a closed stream
        for g in groups:
            # A join, a rebalance and the fetches: 60 s ran out once on a machine at load 7.
            try:
                wait_for(f"{g}'s new consumer to reach the log end", lambda g=g: all(
                    (tp.partition, o - 1) in set(new[g].seen) for tp, o in end.items()), timeout=120)
            except AssertionError as timed_out:
                last = {p: max((o for q, o in new[g].seen if q == p), default=None) for p in range(partitions)}
                raise AssertionError(f"{timed_out}: log end {({tp.partition: o for tp, o in end.items()})}, "
                                     f"last seen {last}, assigned {new[g].consumer.assignment()}") from None
    finally:
        for c in new.values():
            c.halt.set()
            c.join(timeout=30)
        producer.halt.set()
        for p in old.values():
            if p.poll() is None:
                p.kill()
        sync.send_signal(signal.SIGTERM)
        out, _ = sync.communicate(timeout=60)
        sync_log.close()

    # SIGTERM stops sync cleanly, and the run is in the journal.
    assert sync.returncode == 0, (tmp_path / "sync.log").read_text()[-3000:]
    result = json.loads(out)
    assert set(groups) <= set(result["groups_stopped"]) and result["offsets_mirrored"] > 0
    assert all("Kafka" in result["groups_stopped"][g] for g in groups)
    assert idle in result["groups_synced"]   # renewals: tests/integration/test_sync_renewal.py
    with Journal.open(state) as journal:
        (run,) = journal.runs()
        assert run.kind == "sync" and run.state == "done" and run.groups["skipped"] == 2

    # Rollback of a sync run puts back what Kafka held before sync committed, where nobody moved on since:
    # the idle group had nothing; the switched groups belong to their new consumers now.
    rollback = subprocess.run([sys.executable, "-m", "migrate", "rollback", run.run_id, "--execute",
                               "--bootstrap-server",
                               cluster.bootstrap_server, "--state-dir", str(state), "--json", "-q"],
                              capture_output=True, text=True, cwd=HERE.parents[1], timeout=120)
    rolled = json.loads(rollback.stdout)
    assert rollback.returncode == 1 and set(rolled["failed"]) == set(groups), rollback.stderr
    assert all("moved" in why for why in rolled["failed"].values())
    assert kafka_offsets(kafka_admin, [idle])[idle] == {}

    # No message skipped; reprocessing at most one commit interval of messages per partition.
    per_interval = producer.sent / producer.seconds * COMMIT_INTERVAL
    for g in groups:
        by_old = Counter(tuple(map(int, line.split(":"))) for line in logs[g].read_text().split())
        by_new = Counter(new[g].seen)
        for tp, o in end.items():
            p = tp.partition
            done = {off for (q, off) in list(by_old) + list(by_new) if q == p}
            assert done >= set(range(0, o)), f"{g} partition {p}: skipped {sorted(set(range(o)) - done)[:10]}"
            again = sum(1 for (q, off) in by_new if q == p and (q, off) in by_old)
            print(f"{g} partition {p}: {o} messages, {again} processed twice (one interval: {per_interval:.0f})")
            assert again <= per_interval + 1, (g, p, again)
