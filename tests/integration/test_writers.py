"""The two halves of the dual commit against real servers: Kafka OffsetCommit and conditional ZooKeeper writes."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer

from migrate.kafka.retry import RetryPolicy
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter
from migrate.zk.writer import ZkChanged, ZkOffsetWriter, encode


@pytest.fixture
def topic(kafka_admin, prefix):
    name = f"{prefix}w"
    kafka_admin.create_topics({name: {"num_partitions": 3, "replication_factor": 1}}, wait_for_metadata=True)
    return name


def test_commit_read_back_and_delete(kafka_admin, topic, prefix):
    writer = KafkaOffsetWriter(kafka_admin)
    group = f"{prefix}g"
    writer.commit(group, {(topic, 0): 5, (topic, 1): 7}, "zk2kafka run r1")
    assert writer.committed(group) == {(topic, 0): (5, "zk2kafka run r1"), (topic, 1): (7, "zk2kafka run r1")}
    writer.commit(group, {(topic, 0): 5, (topic, 1): 7}, "zk2kafka run r1")  # idempotent
    writer.delete(group, [(topic, 1)])
    assert writer.committed(group) == {(topic, 0): (5, "zk2kafka run r1")}


def test_commit_to_an_active_group_is_rejected_with_kafkas_reason(cluster, kafka_admin, topic, prefix):
    group = f"{prefix}active"
    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=cluster.bootstrap_server)
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=500)
    try:
        with pytest.raises(GroupRejected) as err:
            KafkaOffsetWriter(kafka_admin, RetryPolicy(deadline=5)).commit(group, {(topic, 0): 1}, "")
        assert "UnknownMemberId" in err.value.reason or "RebalanceInProgress" in err.value.reason
    finally:
        consumer.close()


def test_metadata_over_the_broker_limit_is_rejected(kafka_admin, topic, prefix):
    with pytest.raises(GroupRejected) as err:
        KafkaOffsetWriter(kafka_admin).commit(f"{prefix}big", {(topic, 0): 1}, "x" * 5000)  # limit 4096
    assert "OffsetMetadataTooLarge" in err.value.reason


def test_zk_write_is_conditional_and_atomic_per_group(zk):
    for p, value in enumerate([b"10", b" 11\n"]):
        zk.create(f"/consumers/g/offsets/t/{p}", value, makepath=True)
    writer = ZkOffsetWriter(zk)
    paths = [f"/consumers/g/offsets/t/{p}" for p in range(2)]
    now = writer.read(paths + ["/consumers/g/offsets/t/9"])
    assert now["/consumers/g/offsets/t/9"].value is None
    versions = writer.write("g", {p: (b"20", now[p].version) for p in paths})
    assert versions == {p: 1 for p in paths}
    assert [zk.get(p)[0] for p in paths] == [b"20", b"20"]

    zk.set(paths[1], b"99")  # an old consumer moves partition 1 meanwhile
    with pytest.raises(ZkChanged) as err:
        writer.write("g", {paths[0]: (b"30", 1), paths[1]: (b"30", 1)})
    assert err.value.paths == [paths[1]]
    assert [zk.get(p)[0] for p in paths] == [b"20", b"99"]  # neither written: the group is all or nothing


def test_values_keep_the_znodes_own_form():
    assert encode(b" 41\n", 42, "standard", "next") == b"42"
    assert encode(b"41", 42, "standard", "last") == b"41"
    storm = b'{"topology":{"id":"t1"},"offset":10,"partition":0,"topic":"x"}'
    assert encode(storm, 42, "storm", "next") == b'{"topology":{"id":"t1"},"offset":42,"partition":0,"topic":"x"}'


def test_coordinator_is_looked_up_again_after_a_retry(kafka_admin, topic, prefix):
    writer = KafkaOffsetWriter(kafka_admin)
    group = f"{prefix}moved"
    writer.commit(group, {(topic, 0): 1}, "")
    cluster_meta = kafka_admin._manager.cluster
    assert any(k[1] == group for k in cluster_meta._coordinators)
    writer._forget([group])
    assert not any(k[1] == group for k in cluster_meta._coordinators)
    writer.commit(group, {(topic, 0): 2}, "")  # found again
    assert writer.committed(group)[(topic, 0)][0] == 2
