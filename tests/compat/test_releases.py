"""One real workload per ZooKeeper-mode Kafka release, judged by that release's own tools.

Per release, on a sandbox of that release (the ZooKeeper it ships included):
its console producer writes distinct messages; on 0.10 and 1.1 its old high-level consumer reads
part of them and commits to ZooKeeper, on later releases (the old consumer left in 2.0) the
znodes are written the way custom clients did (2.4.1: Kafka 1.1.0's `/offset/` layout);
then `zk2kafka scan`, `diff`, `migrate --execute`, `verify`; the release's ConsumerGroupCommand
must show the migrated offsets, and its new consumer, joining the group, must read exactly the
messages the old one had not: none skipped, none twice; then the takeover rule's evidence is read from
that release's __consumer_offsets (each offset's commit time, the group's protocol type). A copy of the group, seeded
identically, is migrated and rolled back. On 1.1.1 the same offsets also go to a KRaft 4.x
cluster, as runbooks/new-kraft-cluster.md does.

Each outcome goes to results.json (the README's support table is rendered from it).
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from migrate.jvm.releases import KRAFT_VERSION, RELEASES
from migrate.sandbox.cluster import LocalCluster

import support_table
from release_tools import ReleaseTools

from support.cli import zk2kafka_process
from support.servers import CACHE_DIR
from support.wait import wait_for

TOPIC, PARTITIONS, MESSAGES, OLD_READS = "orders", 3, 600, 250
# No name inside another, so a selection that matched by substring (as --group did before it became a
# full match) would show here as a group migrated that nobody selected.
GROUP, COPY, KRAFT_GROUP = "legacy-app", "rollback-copy", "kraft-move"
# The releases in `make test`; the rest are `slow` (make test-long) and `matrix` (CI adds them to its
# `make test` run with `-m "not slow or matrix"`).
FAST = {"1.1.1", "2.8.2"}
ONE_OFFSET_LAYOUT = "2.4.1"  # the release whose znodes use Kafka 1.1.0's singular /offset/ layout


def _params():
    return [pytest.param(v, id=v, marks=() if v in FAST else (pytest.mark.slow, pytest.mark.matrix)) for v in RELEASES]


def ok(done: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    assert done.returncode == 0, \
        f"zk2kafka {what} exited {done.returncode}: {done.stderr[-3000:]}\n{done.stdout[-2000:]}"
    return done


def zk_offsets(zookeeper: str, group: str, layout: str) -> dict[int, bytes]:
    zk = KazooClient(hosts=zookeeper)
    zk.start(timeout=15)
    try:
        base = f"/consumers/{group}/{layout}/{TOPIC}"
        return {int(p): zk.get(f"{base}/{p}")[0] for p in zk.get_children(base)}
    finally:
        zk.stop()
        zk.close()


def write_zk_offsets(zookeeper: str, group: str, layout: str, offsets: dict[int, bytes]) -> None:
    """What a custom client (or a copy of a group) leaves: one decimal znode per partition."""
    zk = KazooClient(hosts=zookeeper)
    zk.start(timeout=15)
    try:
        for partition, value in offsets.items():
            zk.create(f"/consumers/{group}/{layout}/{TOPIC}/{partition}", value, makepath=True)
    finally:
        zk.stop()
        zk.close()


def commit_kafka_offsets(bootstrap: str, group: str, offsets: dict[int, int]) -> None:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="zk2kafka-compat")
    try:
        errors = admin.alter_group_offsets(group, {TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1)
                                                   for p, o in offsets.items()})
        assert all(e.__name__ == "NoError" for e in errors.values()), errors
    finally:
        admin.close()


def takeover_evidence(bootstrap: str, group: str, partitions) -> None:
    """What the takeover rule reads from this release's __consumer_offsets (migrate/kafka/offsets_log/), in the
    record versions this release's broker writes: each of the group's offsets with its commit time (minutes ago at
    most), made from outside by zk2kafka's migrate (no member then), and the group's metadata records (the release's
    new consumer joined it: protocol type `consumer`); then a consumer that joins a group of its own and commits
    every partition, whose commits read as a member's, assigned each partition."""
    import time

    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata

    from support.consumers import REBALANCE_MS, joined, settled_commit
    from support.records import read_groups

    member_group = f"{group}-member"
    consumer = joined(bootstrap, member_group, TOPIC, rebalance_ms=REBALANCE_MS)
    try:
        assert len(consumer.assignment()) == len(partitions), consumer.assignment()   # the one member: all of them
        settled_commit(consumer, {TopicPartition(TOPIC, p): OffsetAndMetadata(1, "", -1) for p in partitions})
    finally:
        consumer.close()

    def read(groups: list[str]) -> dict:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="zk2kafka-compat")
        try:
            found, why = read_groups(admin, groups)
        finally:
            admin.close()
        assert why is None, why
        return found

    logs = read([group, member_group])
    assert group in logs, logs
    found = logs[group]
    commits = {key: found.committed(key) for key in found.keys}
    assert set(commits) == {(TOPIC, p) for p in partitions}, commits
    assert all(0 <= time.time() - c.commit_ms / 1000 < 3600 for c in commits.values()), commits
    assert all(c.metadata.startswith("zk2kafka migrate ") and c.by.members == 0 for c in commits.values()), commits
    assert found.protocol_type == "consumer" and found.metadata.generation >= 1, found.metadata
    member = logs[member_group]
    for key in ((TOPIC, p) for p in partitions):
        c = member.committed(key)
        assert c is not None and c.by.members == 1 and c.by.generation >= 1 and c.by.covered, (key, c)
        assert key in c.by.member.assigned, (key, c.by)
    # It left: the coordinator records the group Empty (no member) once its LeaveGroup is through.
    wait_for(f"{member_group}'s Empty metadata record", lambda: read([member_group])[member_group].metadata.members
             == (), timeout=30, every=0.5)


def log_positions(bootstrap: str, topic: str) -> dict[str, tuple[int, int]]:
    """message -> (partition, offset), read with kafka-python: where the release's producer put each one."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        positions: dict[str, tuple[int, int]] = {}
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for tp, records in consumer.poll(timeout_ms=1000).items():
                for r in records:
                    positions[r.value.decode()] = (tp.partition, r.offset)
        return positions
    finally:
        consumer.close()


def copy_topic(source: str, target: str, topic: str) -> None:
    """Every partition's messages, in order, into the same partition of a fresh topic: the same offsets,
    as an offset-preserving mirror leaves them (runbooks/new-kraft-cluster.md's precondition)."""
    from kafka import KafkaProducer

    by_partition: dict[int, list[tuple[int, str]]] = {}
    for message, (partition, offset) in log_positions(source, topic).items():
        by_partition.setdefault(partition, []).append((offset, message))
    producer = KafkaProducer(bootstrap_servers=target, acks="all", max_in_flight_requests_per_connection=1)
    try:
        for partition, rows in by_partition.items():
            assert [o for o, _ in sorted(rows)] == list(range(len(rows))), "the source log has gaps"
            for _, message in sorted(rows):
                producer.send(topic, value=message.encode(), partition=partition)
        producer.flush()
    finally:
        producer.close()


@pytest.mark.parametrize("version", _params())
def test_release_workload(version: str, tmp_path: Path):
    release = RELEASES[version]
    old_consumer = release.line < (2, 0)
    layout = "offset" if version == ONE_OFFSET_LAYOUT else "offsets"
    writer = ("its old ZooKeeper consumer" if old_consumer
              else f"znodes as custom clients wrote them (`/{layout}/`)")
    proven: dict[str, bool] = {step: False for step in support_table.STEPS}
    kraft = version == "1.1.1"
    kraft_proven = {step: False for step in ("scan", "diff", "migrate", "verify", "describe", "resume")}
    cluster = LocalCluster(tmp_path / "sandbox", CACHE_DIR, kafka_version=version, kraft=kraft, attached=True)
    try:
        endpoints = cluster.start()
        env = {"ZK2KAFKA_ZOOKEEPER": endpoints.zookeeper, "ZK2KAFKA_BOOTSTRAP_SERVER": endpoints.bootstrap_server,
               "ZK2KAFKA_STATE_DIR": str(tmp_path / "state")}
        tools = ReleaseTools(version, release.bundle, CACHE_DIR, tmp_path / "tools")

        tools.create_topic(endpoints.zookeeper, endpoints.bootstrap_server, TOPIC, PARTITIONS)
        messages = [f"{version}-message-{i:04d}" for i in range(MESSAGES)]
        tools.produce(endpoints.bootstrap_server, TOPIC, messages)
        positions = log_positions(endpoints.bootstrap_server, TOPIC)
        assert sorted(positions) == messages, "the producer did not write every message exactly once"
        proven["produce"] = True

        if old_consumer:
            read = tools.old_consume(endpoints.zookeeper, TOPIC, GROUP, OLD_READS)
            assert len(read) == OLD_READS and len(set(read)) == OLD_READS and set(read) <= set(messages)
            zk_values = zk_offsets(endpoints.zookeeper, GROUP, layout)
            committed = {p: int(v) for p, v in zk_values.items()}
            # What it committed is what it read: every message below its offsets, none above.
            assert set(read) == {m for m, (p, o) in positions.items() if o < committed.get(p, 0)}
            unread = Counter(messages) - Counter(read)
        else:
            ends = Counter(p for p, _ in positions.values())
            committed = {p: ends[p] * 2 // 5 for p in range(PARTITIONS)}
            zk_values = {p: str(o).encode() for p, o in committed.items()}
            write_zk_offsets(endpoints.zookeeper, GROUP, layout, zk_values)
            unread = Counter(m for m, (p, o) in positions.items() if o >= committed[p])
        assert 0 < sum(unread.values()) < MESSAGES
        write_zk_offsets(endpoints.zookeeper, COPY, layout, zk_values)
        if kraft:
            write_zk_offsets(endpoints.zookeeper, KRAFT_GROUP, layout, zk_values)
        proven["zk_offsets"] = True

        assert "scanned" in ok(zk2kafka_process("scan", env=env, timeout=600), "scan").stdout
        proven["scan"] = True
        ok(zk2kafka_process("diff", env=env, timeout=600), "diff")
        proven["diff"] = True
        ok(zk2kafka_process("migrate", "--execute", "--group", GROUP, env=env, timeout=600), "migrate --execute")
        proven["migrate"] = True
        ok(zk2kafka_process("verify", "--group", GROUP, env=env, timeout=600), "verify")
        proven["verify"] = True

        shown = tools.describe(endpoints.bootstrap_server, GROUP)
        assert shown == {(TOPIC, p): o for p, o in committed.items()}, shown
        proven["describe"] = True
        resumed = tools.new_consume(endpoints.bootstrap_server, TOPIC, GROUP, sum(unread.values()))
        assert Counter(resumed) == unread, (
            f"skipped {sorted(unread - Counter(resumed))[:5]}, read twice or unexpected "
            f"{sorted(Counter(resumed) - unread)[:5]}")
        proven["resume"] = True
        takeover_evidence(endpoints.bootstrap_server, GROUP, committed)

        if kraft:  # before the rollback, so that a failure there does not hide this path
            _onto_kraft(endpoints, tmp_path, layout, committed, unread, kraft_proven)

        # The copy: half moved already (Kafka holds older offsets for it), migrated with ZooKeeper winning,
        # then rolled back: its znodes and its Kafka offsets must be as before. (A group new to Kafka is
        # rolled back with OffsetDelete, which brokers before 2.4 lack: see the README.)
        before = {p: o // 2 for p, o in committed.items()}
        commit_kafka_offsets(endpoints.bootstrap_server, COPY, before)
        copied = zk2kafka_process("migrate", "--execute", "--group", COPY, "--on-conflict", "zk", "--json",
                                  env=env, timeout=600)
        # CONFLICT rows stay blockers in the report even when resolved (exit 3); the run itself must be done.
        conflicts = sum(o != before[p] for p, o in committed.items())
        assert copied.returncode == (3 if conflicts else 0), copied.stderr[-3000:]
        assert json.loads(copied.stdout)["state"] == "done" and json.loads(copied.stdout)["written"] == conflicts
        assert tools.describe(endpoints.bootstrap_server, COPY) == {(TOPIC, p): o for p, o in committed.items()}
        rollback = ok(zk2kafka_process("rollback", json.loads(copied.stdout)["run"], "--execute", env=env,
                                       timeout=600), "rollback")
        assert zk_offsets(endpoints.zookeeper, COPY, layout) == zk_values
        left = tools.describe(endpoints.bootstrap_server, COPY)
        assert left == {(TOPIC, p): o for p, o in before.items()}, f"after {rollback.stdout!r}: {left}"
        proven["rollback"] = True
    finally:
        cluster.stop()
        support_table.record("releases", version, {
            "zookeeper": release.zookeeper, "writer": writer, "proven": proven, "passed": all(proven.values())})
        if kraft:
            support_table.record("kraft", f"{version} → {KRAFT_VERSION} (KRaft)", {
                "writer": writer, "proven": kraft_proven, "passed": all(kraft_proven.values())})


def _onto_kraft(endpoints, tmp_path: Path, layout: str, committed: dict[int, int], unread: Counter,
                proven: dict[str, bool]) -> None:
    """runbooks/new-kraft-cluster.md: read the old ZooKeeper, write the new KRaft cluster only."""
    target = endpoints.kraft_bootstrap_server
    tools = ReleaseTools(KRAFT_VERSION, "kafka-4", CACHE_DIR, tmp_path / "tools-kraft")
    tools.create_topic("", target, TOPIC, PARTITIONS)
    copy_topic(endpoints.bootstrap_server, target, TOPIC)
    env = {"ZK2KAFKA_ZOOKEEPER": endpoints.zookeeper, "ZK2KAFKA_BOOTSTRAP_SERVER": target,
           "ZK2KAFKA_STATE_DIR": str(tmp_path / "state-kraft")}
    before = zk_offsets(endpoints.zookeeper, KRAFT_GROUP, layout)
    scanned = ok(zk2kafka_process("scan", "--group", KRAFT_GROUP, env=env, timeout=600), "scan (KRaft)")
    assert "scanned" in scanned.stdout
    proven["scan"] = True
    ok(zk2kafka_process("diff", "--group", KRAFT_GROUP, env=env, timeout=600), "diff (KRaft)")
    proven["diff"] = True
    ok(zk2kafka_process("migrate", "--execute", "--no-zk-write", "--group", KRAFT_GROUP, env=env, timeout=600),
       "migrate (KRaft)")
    assert zk_offsets(endpoints.zookeeper, KRAFT_GROUP, layout) == before, "the old cluster's ZooKeeper changed"
    proven["migrate"] = True
    ok(zk2kafka_process("verify", "--group", KRAFT_GROUP, env=env, timeout=600), "verify (KRaft)")
    proven["verify"] = True
    assert tools.describe(target, KRAFT_GROUP) == {(TOPIC, p): o for p, o in committed.items()}
    proven["describe"] = True
    resumed = tools.new_consume(target, TOPIC, KRAFT_GROUP, sum(unread.values()))
    assert Counter(resumed) == unread
    proven["resume"] = True
    takeover_evidence(target, KRAFT_GROUP, committed)
