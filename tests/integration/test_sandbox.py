"""The sandbox is real: offsets round-trip through a real broker with kafka-python and znodes through kazoo."""

from __future__ import annotations

import json

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata

from migrate.sandbox.cluster import BROKER_CHROOT, Endpoints


def _topic_with_messages(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1}}, wait_for_metadata=True)
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for p in range(partitions):
        for i in range(per_partition):
            producer.send(topic, value=f"{p}:{i}".encode(), partition=p)
    producer.flush()
    producer.close()


def _commit_and_consume(bootstrap: str, prefix: str) -> None:
    topic, group = prefix + "orders", prefix + "billing"
    _topic_with_messages(bootstrap, topic, partitions=2, per_partition=20)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        errors = admin.alter_group_offsets(group, {
            TopicPartition(topic, 0): OffsetAndMetadata(7, "zk2kafka-test", -1),
            TopicPartition(topic, 1): OffsetAndMetadata(13, "zk2kafka-test", -1),
        })
        assert {tp.partition: e.__name__ for tp, e in errors.items()} == {0: "NoError", 1: "NoError"}
        committed = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in committed.items()} == {0: 7, 1: 13}
        assert committed[TopicPartition(topic, 0)].metadata == "zk2kafka-test"
    finally:
        admin.close()

    # A real consumer joining the group starts exactly at the committed positions.
    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=15000)
    try:
        first = {}
        for message in consumer:
            first.setdefault(message.partition, message)
            if len(first) == 2:
                break
    finally:
        consumer.close()
    assert {p: (m.offset, m.value.decode()) for p, m in first.items()} == {0: (7, "0:7"), 1: (13, "1:13")}


def test_committed_offset_round_trips_through_zookeeper_mode_broker(cluster: Endpoints, prefix: str):
    _commit_and_consume(cluster.bootstrap_server, prefix)


def test_committed_offset_round_trips_through_kraft_target(cluster: Endpoints, prefix: str):
    assert cluster.kraft_bootstrap_server and cluster.kraft_bootstrap_server != cluster.bootstrap_server
    _commit_and_consume(cluster.kraft_bootstrap_server, prefix)


def test_legacy_offset_znode_round_trips_through_kazoo(zk, prefix: str):
    path = f"/consumers/{prefix}billing/offsets/orders/0"
    zk.create(path, b"1234\n", makepath=True)
    data, stat = zk.get(path)
    assert (data, stat.version) == (b"1234\n", 0)
    zk.set(path, b"1300", version=0)
    assert zk.get(path)[0] == b"1300"
    assert zk.get_children(f"/consumers/{prefix}billing/offsets/orders") == ["0"]


def test_chroot_isolates_each_test(zk, zk_chroot: str, cluster: Endpoints):
    zk.create("/marker", b"x")
    from kazoo.client import KazooClient

    root = KazooClient(hosts=cluster.zk_server)
    root.start(timeout=15)
    try:
        chroot = zk_chroot[len(cluster.zk_server):]
        assert root.get(chroot + "/marker")[0] == b"x"
        assert not root.exists("/marker")
    finally:
        root.stop()
        root.close()


def test_broker_lives_under_its_chroot_like_a_real_cluster(cluster: Endpoints):
    from kazoo.client import KazooClient

    assert cluster.zookeeper == cluster.zk_server + BROKER_CHROOT
    zk = KazooClient(hosts=cluster.zookeeper)
    zk.start(timeout=15)
    try:
        registration = json.loads(zk.get("/brokers/ids/0")[0])
        assert registration["endpoints"] == [f"PLAINTEXT://{cluster.bootstrap_server}"]
    finally:
        zk.stop()
        zk.close()
