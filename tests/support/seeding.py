"""Helpers that put legacy offsets into a real ZooKeeper and messages into a real Kafka, and read both back."""

from __future__ import annotations

from kafka import KafkaProducer, TopicPartition


def put(zk, path: str, value: bytes, acl=None) -> None:
    zk.ensure_path(path.rsplit("/", 1)[0])
    zk.create(path, value, acl=acl)


def make_topic(admin, bootstrap: str, name: str, partitions: int, messages: int, replicas: int = 1) -> None:
    admin.create_topics({name: {"num_partitions": partitions, "replication_factor": replicas}},
                        wait_for_metadata=True)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for p in range(partitions):
        for i in range(messages):
            producer.send(name, value=f"{p}-{i}".encode(), partition=p)
    producer.flush()
    producer.close()


def zk_tree(zk) -> dict[str, bytes]:
    """Every znode's value under the client's chroot (NoAuthError for one it may not read)."""
    out = {}

    def walk(path):
        for child in zk.get_children(path):
            sub = f"{path.rstrip('/')}/{child}"
            try:
                out[sub] = zk.get(sub)[0]
            except Exception as exc:  # noqa: BLE001 - an ACL-protected node: record that it could not be read
                out[sub] = type(exc).__name__.encode()
            walk(sub) if out[sub] != b"NoAuthError" else None
    walk("/")
    return out


def expire_session(client, hosts: str) -> None:
    """Expire `client`'s session the way ZooKeeper does: another connection with its id and password closes it."""
    from kazoo.client import KazooClient

    if client.client_id is None:  # already between sessions
        return
    session_id, password = client.client_id
    other = KazooClient(hosts=hosts, client_id=(session_id, password))
    other.start(timeout=15)
    other.stop()
    other.close()


def kafka_offsets(admin, groups) -> dict[str, dict[tuple[str, int], tuple[int, str]]]:
    """{group: {(topic, partition): (offset, metadata)}} as Kafka holds them."""
    answer = admin.list_group_offsets({g: None for g in groups})
    return {g: {(tp.topic, tp.partition): (om.offset, om.metadata) for tp, om in answer.get(g, {}).items()}
            for g in groups}


__all__ = ["put", "make_topic", "zk_tree", "expire_session", "kafka_offsets", "TopicPartition"]
