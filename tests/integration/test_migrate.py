"""`migrate --execute`, `--resume`, `verify`, `rollback` and `status` against real ZooKeeper and Kafka."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import NodeNotReadyError
from kafka.structs import OffsetAndMetadata

from migrate import cli
from migrate.journal.journal import Journal
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.sandbox.cluster import LocalCluster

from support.cli import zk2kafka_json
from support.seeding import kafka_offsets, make_topic, put, zk_tree
from support.servers import CACHE_DIR, backend


@pytest.fixture
def legacy(cluster, zk, kafka_admin, prefix):
    """Three groups with offsets only in ZooKeeper (one value padded, which a run rewrites as digits), one that
    Kafka disagrees with."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 3, 50)
    groups = [f"{prefix}g{i}" for i in range(3)]
    expected = {}
    for i, group in enumerate(groups):
        for p in range(3):
            offset = 10 * (i + 1) + p
            put(zk, f"/consumers/{group}/offsets/{topic}/{p}", f" {offset}\n".encode() if (i, p) == (0, 0)
                else str(offset).encode())
            expected[(group, topic, p)] = offset
    conflict = f"{prefix}conflict"
    put(zk, f"/consumers/{conflict}/offsets/{topic}/0", b"30")
    kafka_admin.alter_group_offsets(conflict, {TopicPartition(topic, 0): OffsetAndMetadata(25, "old", -1)})
    return {"topic": topic, "groups": groups, "conflict": conflict, "expected": expected,
            "padded": (groups[0], topic, 0)}


def zk_version_after_run(legacy, key) -> int:
    """The dual commit rewrites a znode whose bytes change (the padded one), once; one already holding the
    run's value is fenced by reading it, never written."""
    return 1 if key == legacy["padded"] else 0


def common(cluster, zk_chroot, tmp_path, prefix) -> list[str]:
    return ["--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
            "--state-dir", str(tmp_path), "--group", f"{prefix}.*"]


def test_migrate_then_verify_round_trips_and_consumers_start_at_the_migrated_positions(
        cluster, zk, zk_chroot, kafka_admin, prefix, legacy, tmp_path, capsys):
    args = common(cluster, zk_chroot, tmp_path, prefix)
    before_zk = zk_tree(zk)
    code, dry, _ = zk2kafka_json("migrate", *args)
    assert code == 3 and dry["dry_run"] and dry["planned"]["commit_offsets"] == 9   # the CONFLICT blocks
    assert zk_tree(zk) == before_zk and kafka_offsets(kafka_admin, legacy["groups"]) == {
        g: {} for g in legacy["groups"]}

    code, done, _ = zk2kafka_json("migrate", *args, "--execute")
    assert code == 3, done                       # written, with the CONFLICT row left alone: exit 3
    assert done["state"] == "done" and done["groups"]["verified"] == 3 and done["groups"]["skipped"] == 1
    assert done["written"] == 9 and not done["failed"]
    in_kafka = kafka_offsets(kafka_admin, legacy["groups"])
    for (group, topic, p), offset in legacy["expected"].items():
        assert in_kafka[group][(topic, p)] == (offset, f"zk2kafka migrate {done['run']}")
        value, stat = zk.get(f"/consumers/{group}/offsets/{topic}/{p}")
        assert (value, stat.version) == (str(offset).encode(), zk_version_after_run(legacy, (group, topic, p)))
    assert kafka_offsets(kafka_admin, [legacy["conflict"]])[legacy["conflict"]] == {(legacy["topic"], 0): (25, "old")}

    code, verified, _ = zk2kafka_json("verify", *args, "--exclude-group", ".*conflict")
    assert code == 0 and verified["verified"], verified
    code, unverified, _ = zk2kafka_json("verify", *args)
    assert code == 3 and unverified["mismatched"] == {"CONFLICT": 1}

    code, status, _ = zk2kafka_json("status", "--state-dir", str(tmp_path))
    assert [(r["run"], r["state"]) for r in status["runs"]] == [(done["run"], "done")]

    # A real consumer joining each migrated group starts exactly where ZooKeeper said.
    for group in legacy["groups"]:
        consumer = KafkaConsumer(legacy["topic"], group_id=group, bootstrap_servers=cluster.bootstrap_server,
                                 enable_auto_commit=False, auto_offset_reset="latest")
        first = {}
        deadline = time.monotonic() + 60
        while len(first) < 3 and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                first.setdefault(tp.partition, records[0].offset)
        consumer.close()
        assert first == {p: legacy["expected"][(group, legacy["topic"], p)] for p in range(3)}


@pytest.mark.parametrize("crash_at", ["before-kafka-commit", "after-kafka-commit", "after-zk-write"])
def test_kill_9_then_resume_converges(cluster, zk, zk_chroot, kafka_admin, prefix, legacy, tmp_path, capsys,
                                      crash_at):
    args = common(cluster, zk_chroot, tmp_path, prefix) + ["--exclude-group", ".*conflict"]
    killed = subprocess.run([sys.executable, "-m", "migrate", "migrate", *args, "--execute", "--parallelism", "1",
                             "-q"], env={**os.environ, "ZK2KAFKA_CRASH_AT": crash_at},
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr

    with Journal.open(tmp_path) as journal:
        (run,) = journal.runs()
        assert run.state == "running" and run.groups["verified"] == 0   # the journal claims nothing it did not do
    code, resumed, _ = zk2kafka_json("migrate", *args, "--execute", "--resume", run.run_id)
    assert code == 0, resumed
    assert resumed["state"] == "done" and resumed["groups"]["verified"] == 3

    in_kafka = kafka_offsets(kafka_admin, legacy["groups"])
    for (group, topic, p), offset in legacy["expected"].items():
        assert in_kafka[group][(topic, p)][0] == offset
        value, stat = zk.get(f"/consumers/{group}/offsets/{topic}/{p}")
        assert (value, stat.version) == (str(offset).encode(), zk_version_after_run(legacy, (group, topic, p)))
    code, _, _ = zk2kafka_json("verify", *args)
    assert code == 0


def test_resume_refuses_when_the_options_changed(cluster, zk_chroot, prefix, legacy, tmp_path, capsys):
    args = common(cluster, zk_chroot, tmp_path, prefix)
    zk2kafka_json("migrate", *args, "--execute")
    run = Journal.open(tmp_path).runs()[0].run_id
    code = cli.main(["migrate", *args, "--execute", "--resume", run, "--on-conflict", "zk", "-q"])
    err = capsys.readouterr().err
    assert code == 1 and "--on-conflict: 'skip' then, 'zk' now" in err


def test_a_group_that_turns_active_mid_run_fails_alone(cluster, zk, zk_chroot, kafka_admin, prefix, legacy,
                                                       tmp_path, capsys, monkeypatch):
    victim = legacy["groups"][1]
    consumers = []
    real_commit = KafkaOffsetWriter.commit_many

    def commit_after_a_consumer_joins(self, commits, metadata):
        if victim in commits and not consumers:
            consumer = KafkaConsumer(legacy["topic"], group_id=victim, bootstrap_servers=cluster.bootstrap_server,
                                     enable_auto_commit=False)
            consumers.append(consumer)
            deadline = time.monotonic() + 60
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(timeout_ms=1000)   # a whole join on a loaded host
        return real_commit(self, commits, metadata)

    monkeypatch.setattr(KafkaOffsetWriter, "commit_many", commit_after_a_consumer_joins)
    args = common(cluster, zk_chroot, tmp_path, prefix) + ["--exclude-group", ".*conflict"]
    try:
        code, done, _ = zk2kafka_json("migrate", *args, "--execute")
    finally:
        for consumer in consumers:
            consumer.close()
    assert code == 1
    assert set(done["failed"]) == {victim} and "UnknownMemberId" in done["failed"][victim]
    assert done["groups"]["verified"] == 2 and done["state"] == "incomplete"
    # The failed group is untouched in ZooKeeper; the others are complete in both stores.
    assert zk.get(f"/consumers/{victim}/offsets/{legacy['topic']}/0")[1].version == 0
    other = legacy["groups"][2]
    assert kafka_offsets(kafka_admin, [other])[other][(legacy["topic"], 0)][0] == 30


@pytest.mark.parametrize("partition", [2, 0], ids=["fenced", "rewritten"])
@pytest.mark.parametrize("moved", ["before-the-kafka-commit", "after-the-kafka-commit"])
def test_a_znode_moved_by_a_live_old_consumer_is_never_overwritten(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                   legacy, tmp_path, capsys, monkeypatch, partition,
                                                                   moved):
    """Whether the run rewrites the znode (conditioned on its version) or fences it (reads it again after the
    Kafka commit), an old consumer's write after the run's first read fails the group and puts Kafka back."""
    victim, topic = legacy["groups"][0], legacy["topic"]
    assert ((victim, topic, partition) == legacy["padded"]) == (partition == 0)
    real_commit = KafkaOffsetWriter.commit_many

    def commit_while_an_old_consumer_moves_on(self, commits, metadata):
        if victim in commits and moved == "before-the-kafka-commit":
            zk.set(f"/consumers/{victim}/offsets/{topic}/{partition}", b"45")
        sent = real_commit(self, commits, metadata)
        if victim in commits and moved == "after-the-kafka-commit":
            zk.set(f"/consumers/{victim}/offsets/{topic}/{partition}", b"45")
        return sent

    monkeypatch.setattr(KafkaOffsetWriter, "commit_many", commit_while_an_old_consumer_moves_on)
    args = common(cluster, zk_chroot, tmp_path, prefix) + ["--exclude-group", ".*conflict"]
    code, done, _ = zk2kafka_json("migrate", *args, "--execute")
    assert code == 1 and set(done["failed"]) == {victim}
    assert "changed since the scan" in done["failed"][victim] and "put back" in done["failed"][victim]
    assert zk.get(f"/consumers/{victim}/offsets/{topic}/{partition}")[0] == b"45"   # the consumer's value stands
    assert zk.get(f"/consumers/{victim}/offsets/{topic}/1")[1].version == 0          # the rest as it was
    assert kafka_offsets(kafka_admin, [victim])[victim] == {}                         # Kafka put back: no half group


def test_rollback_restores_both_stores_exactly(cluster, zk, zk_chroot, kafka_admin, prefix, legacy, tmp_path,
                                               capsys):
    args = common(cluster, zk_chroot, tmp_path, prefix)
    everyone = legacy["groups"] + [legacy["conflict"]]
    before = (zk_tree(zk), kafka_offsets(kafka_admin, everyone))
    code, done, _ = zk2kafka_json("migrate", *args, "--execute", "--on-conflict", "zk")
    # CONFLICT stays a blocker (docs/design.md), resolved by policy.
    assert code == 3 and done["groups"]["verified"] == 4
    assert kafka_offsets(kafka_admin, [legacy["conflict"]])[legacy["conflict"]][(legacy["topic"], 0)][0] == 30

    code, dry, _ = zk2kafka_json("rollback", done["run"], "--state-dir", str(tmp_path))
    assert code == 0 and dry["dry_run"] and dry["offsets"] == 10
    assert (zk_tree(zk), kafka_offsets(kafka_admin, everyone)) != before

    # Another cluster (the session's KRaft one) is refused, naming both cluster ids; nothing is written.
    elsewhere = ["--zookeeper", zk_chroot, "--bootstrap-server", cluster.kraft_bootstrap_server,
                 "--state-dir", str(tmp_path)]
    assert cli.main(["rollback", done["run"], *elsewhere, "--execute", "-q"]) == 1
    err = capsys.readouterr().err
    assert re.search(rf"cannot roll back {done['run']}: it wrote to other stores than these \(Kafka cluster \S+ then "
                     rf"\(--bootstrap-server '{cluster.bootstrap_server}'\), \S+ now", err), err
    # The same cluster at another address is the same store.
    same = cluster.bootstrap_server.replace("127.0.0.1", "localhost")
    assert same != cluster.bootstrap_server
    conn = ["--zookeeper", zk_chroot, "--bootstrap-server", same, "--state-dir", str(tmp_path)]
    code, rolled, _ = zk2kafka_json("rollback", done["run"], *conn, "--execute")
    assert code == 0 and rolled["state"] == "done" and rolled["rolls_back"] == done["run"]
    assert (zk_tree(zk), kafka_offsets(kafka_admin, everyone)) == before   # values and metadata, byte for byte
    code, status, _ = zk2kafka_json("status", "--state-dir", str(tmp_path))
    assert [(r["kind"], r["offsets"]) for r in status["runs"]] == [("migrate", 10), ("rollback", 10)]
    assert cli.main(["rollback", done["run"], *conn, "--execute", "-q"]) == 1   # once is enough
    assert f"already rolled back by {rolled['run']}" in capsys.readouterr().err


@pytest.mark.skipif(backend() != "local", reason="restarts a broker JVM of its own")
def test_a_broker_restart_mid_run_is_survived(tmp_path_factory, tmp_path, capsys, monkeypatch):
    from kafka.admin import KafkaAdminClient
    from kazoo.client import KazooClient

    own = LocalCluster(tmp_path_factory.mktemp("restart"), CACHE_DIR, attached=True)
    endpoints = own.start()
    broker = next(s for s in own.servers if s.name == "kafka")
    admin = KafkaAdminClient(bootstrap_servers=endpoints.bootstrap_server)
    zk = KazooClient(hosts=endpoints.zookeeper)
    zk.start(timeout=15)
    try:
        make_topic(admin, endpoints.bootstrap_server, "orders", 4, 20)
        groups = [f"restart-{i}" for i in range(8)]
        for i, group in enumerate(groups):
            for p in range(4):
                put(zk, f"/consumers/{group}/offsets/orders/{p}", str(i + p).encode())

        real_commit = KafkaOffsetWriter.commit_many
        restarts = []

        def restart_in_the_middle(self, commits, metadata):
            if groups[3] in commits and not restarts:
                def bounce():
                    broker.stop()
                    time.sleep(2)
                    # Not attached: PR_SET_PDEATHSIG fires when the starting *thread* ends. own.stop() ends it.
                    broker.start(attached=False)
                restarts.append(threading.Thread(target=bounce))
                restarts[0].start()
                time.sleep(1)   # the commits below go to a broker on its way down
            return real_commit(self, commits, metadata)

        monkeypatch.setattr(KafkaOffsetWriter, "commit_many", restart_in_the_middle)
        args = ["--zookeeper", endpoints.zookeeper, "--bootstrap-server", endpoints.bootstrap_server,
                "--state-dir", str(tmp_path), "--parallelism", "2"]
        code, done, _ = zk2kafka_json("migrate", *args, "--execute")
        restarts[0].join()
        assert code == 0, (done.get("failed"), done.get("state"))
        assert done["groups"]["verified"] == 8 and not done["failed"]
        assert "kafka" in {s.name for s in own.servers} and broker.alive()
        # The test's own client lived through the restart too: let it reconnect before reading back.
        deadline = time.monotonic() + 60
        while True:
            try:
                in_kafka = kafka_offsets(admin, groups)
                break
            except NodeNotReadyError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert all(in_kafka[g][("orders", p)][0] == i + p for i, g in enumerate(groups) for p in range(4))
    finally:
        zk.stop()
        admin.close()
        own.stop()
