"""Onto a cluster copied by MirrorMaker 2, all real: the sandbox's ZooKeeper-mode 3.9 broker, its KRaft
broker, and MirrorMaker 2 3.9 (dedicated mode) copying one to the other after DeleteRecords moved the
source's log start, so every offset differs between the clusters. ZooKeeper holds old-style offsets for
two groups; zk2kafka translates them through MM2's offset syncs and commits them to the KRaft cluster
only. A real consumer then joins each group there: it must read every message the old consumer had not
read, and what it reads a second time must be within the window the plan reported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter

import pyarrow.parquet as pq
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from migrate import cli
from migrate.journal.journal import Journal
from migrate.diff import schema as s
from migrate.sandbox.mirrormaker import MirrorMaker

from support.cli import zk2kafka_json
from support.seeding import kafka_offsets, put, zk_tree
from support.servers import CACHE_DIR, backend

pytestmark = pytest.mark.skipif(backend() != "local", reason="MirrorMaker 2 runs as a local JVM")

SOURCE, TARGET = "zkold", "kraftnew"      # MM2's cluster aliases
MESSAGES = 250                             # per partition
BEFORE_MM2 = 60                            # of them written before MM2 starts, and before the deletion
LOG_START = {0: 50, 1: 30}                 # DeleteRecords, before MM2 starts


@pytest.fixture
def mirrored(cluster, kafka_admin, prefix, tmp_path):
    """`<prefix>orders` on the ZooKeeper-mode broker, its log start moved, copied by a running MM2 while
    producers go on writing."""
    topic = f"{prefix}orders"
    kafka_admin.create_topics({topic: {"num_partitions": 2, "replication_factor": 1}}, wait_for_metadata=True)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_server, acks="all")

    def produce(first: int, last: int) -> None:
        for p in LOG_START:
            for i in range(first, last):
                producer.send(topic, value=f"{p}-{i}".encode(), partition=p)   # the value is its source offset
        producer.flush()

    produce(0, BEFORE_MM2)
    kafka_admin.delete_records({TopicPartition(topic, p): start for p, start in LOG_START.items()})
    mm2 = MirrorMaker(tmp_path / "mm2", CACHE_DIR, cluster.bootstrap_server, cluster.kraft_bootstrap_server,
                      topic.replace(".", r"\."), source_alias=SOURCE, target_alias=TARGET, offset_lag_max=10)
    mm2.start()
    try:
        remote = f"{SOURCE}.{topic}"
        mm2.wait_copied(remote, {p: BEFORE_MM2 - start for p, start in LOG_START.items()})
        # The rest as a live topic receives it, a few records at a time. MM2 has at most 10 syncs in flight
        # and holds one pending sync per partition, replaced by each newer one: a partition copied in one
        # rush (all 250 records before the first sync was acknowledged) was left with a single sync, at
        # its end, and every older offset UNTRANSLATABLE (a run of this test found it).
        for first in range(BEFORE_MM2, MESSAGES, 5):
            produce(first, min(first + 5, MESSAGES))
            time.sleep(0.1)
        producer.close()
        mm2.wait_copied(remote, {p: MESSAGES - start for p, start in LOG_START.items()})
        # The syncs lag the copy (up to a commit): translating before they arrive is safe (older syncs:
        # larger windows, or UNTRANSLATABLE) but not this test.
        mm2.wait_synced(topic, {p: MESSAGES for p in LOG_START})
        yield topic, remote
    finally:
        mm2.stop()


def consume(bootstrap: str, topic: str, group: str) -> dict[int, list[int]]:
    """A real consumer joins `group` and reads from its committed offsets (none committed: it fails, it
    does not fall back to a reset) until 10 s pass without a message; the source offsets it read, per
    partition."""
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="none", consumer_timeout_ms=10_000)
    read: dict[int, list[int]] = {}
    try:
        for record in consumer:
            p, i = record.value.decode().split("-")
            assert int(p) == record.partition
            read.setdefault(record.partition, []).append(int(i))
    finally:
        consumer.close()
    return read


def test_zookeeper_offsets_translated_through_mm2_onto_kraft(cluster, zk, zk_chroot, prefix, mirrored, tmp_path,
                                                              capsys):
    topic, remote = mirrored
    # The old consumers' next offsets on the source; B's partition 1 read everything. None near the log
    # start: MM2 may replace a partition's first syncs by later ones while its sync producer is busy (it
    # keeps one pending sync per partition), and an offset below the first sync left is UNTRANSLATABLE.
    zk_offsets = {f"{prefix}a": {0: 137, 1: 130}, f"{prefix}b": {0: 200, 1: MESSAGES}}
    for group, offsets in zk_offsets.items():
        for p, offset in offsets.items():
            put(zk, f"/consumers/{group}/offsets/{topic}/{p}", str(offset).encode())
    before_zk = zk_tree(zk)
    stores = ["--zookeeper", zk_chroot, "--bootstrap-server", cluster.kraft_bootstrap_server,
              "--state-dir", str(tmp_path / "state"), "--translate-via-mm2", SOURCE, "--mm2-target-alias", TARGET,
              "--offset-syncs-bootstrap-server", cluster.bootstrap_server]
    args = [*stores, "--group", f"{prefix}[ab]"]

    # The target alias is found: the syncs cluster holds one mm2-offset-syncs.<alias>.internal topic.
    found = [a for a in args if a not in ("--mm2-target-alias", TARGET)]
    code, diff, _ = zk2kafka_json("diff", *found)
    assert diff["inputs"]["translation"]["mm2_target_alias"] == TARGET
    plan = {(r["group"], r["partition"]): r for r in pq.read_table(diff["files"]["plan"]).to_pylist()}
    assert code == 0, (diff["counts"], list(plan.values()))
    assert set(plan) == {(g, p) for g, offsets in zk_offsets.items() for p in offsets}
    for (group, p), row in plan.items():
        assert row["status"] == s.MIGRATE and row["topic"] == remote and row["upstream_topic"] == topic
        assert row["upstream_offset"] == zk_offsets[group][p]
        # The copy starts at the source's log start: every offset differs between the clusters.
        assert row["planned_offset"] == row["zk_offset"] < row["upstream_offset"]
        assert row["sync_upstream"] <= row["upstream_offset"]
    assert diff["inputs"]["translation"]["syncs"] > 0
    windows = [r["redelivery_window"] for r in plan.values()]
    assert diff["redelivery"] == {"reread_at_most": sum(windows), "widest_window": max(windows)}

    code, done, _ = zk2kafka_json("migrate", *args, "--execute")
    assert code == 0 and done["state"] == "done" and not done["failed"], done
    assert zk_tree(zk) == before_zk, "ZooKeeper was written"
    code, verified, _ = zk2kafka_json("verify", *args)
    assert code == 0 and verified["verified"], verified

    rereads = {}
    for group, offsets in zk_offsets.items():
        read = consume(cluster.kraft_bootstrap_server, remote, group)
        for p, offset in offsets.items():
            got = Counter(read.get(p, []))
            unread = set(range(offset, MESSAGES))
            assert unread <= set(got), f"{group} partition {p} skipped {sorted(unread - set(got))[:10]}"
            assert max(got.values(), default=1) == 1          # MM2 ran once: no duplicates in the copy
            again = [i for i in got if i < offset]            # what the old consumer had read already
            window = plan[(group, p)]["redelivery_window"]
            assert len(again) <= window, (group, p, len(again), window, plan[(group, p)])
            # Re-read: exactly the records after the sync used, as the source partition was copied without
            # gaps; so the window is exact here (elsewhere filtered records make it an upper bound).
            assert sorted(again) == list(range(plan[(group, p)]["sync_upstream"] + 1, offset))
            rereads[(group, p)] = len(again)
    assert rereads == {key: plan[key]["redelivery_window"] for key in plan}

    # Rollback as usual: the offsets the run created on the KRaft cluster go, ZooKeeper stays as it was.
    conn = ["--zookeeper", zk_chroot, "--bootstrap-server", cluster.kraft_bootstrap_server,
            "--state-dir", str(tmp_path / "state")]
    code, rolled, _ = zk2kafka_json("rollback", done["run"], *conn, "--execute")
    assert code == 0 and rolled["state"] == "done" and rolled["rolls_back"] == done["run"], rolled
    admin = KafkaAdminClient(bootstrap_servers=cluster.kraft_bootstrap_server)
    try:
        assert kafka_offsets(admin, list(zk_offsets)) == {g: {} for g in zk_offsets}
    finally:
        admin.close()
    assert zk_tree(zk) == before_zk
    assert any(rereads.values()), f"no offset fell between two syncs: {rereads}"

    # The reviewed-plan path, killed after its first Kafka commit, then resumed: the translated offsets,
    # the KRaft cluster only, as the plan said.
    code, reviewed, _ = zk2kafka_json("diff", *args)
    assert code == 0, reviewed["counts"]
    planned = {(r["group"], r["partition"]): r["planned_offset"]
               for r in pq.read_table(reviewed["files"]["plan"]).to_pylist()}
    assert planned == {key: row["planned_offset"] for key, row in plan.items()}
    killed = subprocess.run([sys.executable, "-m", "migrate", "migrate", *args, "--execute", "--plan",
                             reviewed["run"], "--parallelism", "1", "-q"],
                            env={**os.environ, "ZK2KAFKA_CRASH_AT": "after-kafka-commit"},
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    with Journal.open(tmp_path / "state") as journal:
        run = next(r for r in journal.runs() if r.state == "running")
    code, resumed, _ = zk2kafka_json("migrate", *args, "--execute", "--resume", run.run_id)
    assert code == 0 and resumed["state"] == "done" and resumed["groups"]["verified"] == 2, resumed
    code, checked, _ = zk2kafka_json("verify", *args, "--run", run.run_id)
    assert code == 0 and checked["verified"] and checked["checked"] == 4, checked
    admin = KafkaAdminClient(bootstrap_servers=cluster.kraft_bootstrap_server)
    try:
        held = kafka_offsets(admin, list(zk_offsets))
    finally:
        admin.close()
    assert {(g, p): v[0] for g, offsets in held.items() for (_, p), v in offsets.items()} == planned
    assert zk_tree(zk) == before_zk, "ZooKeeper was written"

    # An offset older than the partition's first sync has no translation: a blocker, nothing planned.
    put(zk, f"/consumers/{prefix}old/offsets/{topic}/0", b"10")     # below the source's log start, too
    code, diff, _ = zk2kafka_json("diff", *stores, "--group", f"{prefix}old")
    assert code == 3 and diff["counts"][s.UNTRANSLATABLE] == 1, diff
    (row,) = pq.read_table(diff["files"]["plan"]).to_pylist()
    assert (row["topic"], row["upstream_offset"], row["planned_offset"]) == (remote, 10, None)
    assert "older than the first MirrorMaker 2 offset sync" in row["reason"]

    # With the syncs of two targets on one cluster, the alias is asked for, naming both.
    other = "mm2-offset-syncs.zz-elsewhere.internal"
    source_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_server)
    try:
        source_admin.create_topics({other: {"num_partitions": 1, "replication_factor": 1}}, wait_for_metadata=True)
        assert cli.main(["diff", *[a for a in stores if a not in ("--mm2-target-alias", TARGET)],
                         "--group", f"{prefix}[ab]", "-q"]) == 2
        assert (f"--mm2-target-alias is needed: {cluster.bootstrap_server} holds the offset syncs of 2 MirrorMaker 2 "
                f"targets: {TARGET}, zz-elsewhere") in capsys.readouterr().err
    finally:
        source_admin.delete_topics([other])
        source_admin.close()
