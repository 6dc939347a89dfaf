"""Seed a sandbox with real topics and messages and legacy ZooKeeper offsets, odd cases included.

What it creates (idempotent: a second seed rewrites the same values):

| group | what its ZooKeeper offsets exercise |
| --- | --- |
| billing | plain valid offsets on `orders` and `payments` (one exactly at the log end) |
| analytics | `clicks`: whitespace around a value, `-1`, an E-notation value, one past the log end |
| audit | `orders`: Kafka already holds an equal offset (in sync) and a different one (conflict) |
| reporting | old consumers still registered under `ids/` and `owners/` |
| retired | offsets for a topic that no longer exists in Kafka |
| archiver | Kafka 1.1.0's singular `/offset/` layout |
| secured | an offset znode behind a digest ACL the tool is not given (unreadable) |
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError
from kazoo.security import make_digest_acl

log = logging.getLogger(__name__)

TOPICS = {"orders": 3, "payments": 2, "clicks": 4}
MESSAGES_PER_PARTITION = 200

# group -> list of (layout dir, topic, partition, raw znode value)
ZK_OFFSETS: dict[str, list[tuple[str, str, int, str]]] = {
    "billing": [("offsets", "orders", 0, "120"), ("offsets", "orders", 1, "87"),
                ("offsets", "orders", 2, str(MESSAGES_PER_PARTITION)),
                ("offsets", "payments", 0, "15"), ("offsets", "payments", 1, "199")],
    "analytics": [("offsets", "clicks", 0, " 42\n"), ("offsets", "clicks", 1, "-1"),
                  ("offsets", "clicks", 2, "1.5E2"), ("offsets", "clicks", 3, "99999")],
    "audit": [("offsets", "orders", 0, "50"), ("offsets", "orders", 1, "60")],
    "reporting": [("offsets", "payments", 0, "10"), ("offsets", "payments", 1, "11")],
    "retired": [("offsets", "legacy-events", 0, "5000"), ("offsets", "legacy-events", 1, "5100")],
    "archiver": [("offset", "payments", 0, "33"), ("offset", "payments", 1, "34")],
    "secured": [("offsets", "orders", 0, "77")],
}
# Offsets Kafka already holds, committed before the migration: audit/orders-0 agrees, orders-1
# does not.
KAFKA_OFFSETS = {"audit": {("orders", 0): 50, ("orders", 1): 42}}
LIVE_ZK_CONSUMER = ("reporting", "reporting_host1-1700000000000-abcdef12")
SECURED_ACL_USER = ("sandbox-owner", "sandbox-owner-password")


@dataclass
class SeedResult:
    topics: dict[str, int] = field(default_factory=dict)
    messages: int = 0
    znodes: int = 0
    groups: list[str] = field(default_factory=list)


def seed(zookeeper: str, kafka_options: dict, zk_root: str = "/consumers") -> SeedResult:
    """Create topics with messages, legacy offsets under `zk_root` and earlier Kafka commits."""
    result = SeedResult()
    _seed_kafka(kafka_options, result)
    _seed_zookeeper(zookeeper, zk_root, result)
    return result


def _seed_kafka(kafka_options: dict, result: SeedResult) -> None:
    from kafka import KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata

    admin = KafkaAdminClient(client_id="zk2kafka-seed", **kafka_options)
    try:
        existing = set(admin.list_topics())
        new = {t: {"num_partitions": n, "replication_factor": 1}
               for t, n in TOPICS.items() if t not in existing}
        if new:
            admin.create_topics(new, wait_for_metadata=True)
        producer = KafkaProducer(client_id="zk2kafka-seed", linger_ms=5, **kafka_options)
        try:
            for topic in new:
                for partition in range(TOPICS[topic]):
                    for i in range(MESSAGES_PER_PARTITION):
                        value = f"{topic}-{partition}-{i}".encode()
                        producer.send(topic, value=value, partition=partition)
                        result.messages += 1
            producer.flush()
        finally:
            producer.close()
        for group, offsets in KAFKA_OFFSETS.items():
            commits = {TopicPartition(t, p): OffsetAndMetadata(o, "seeded by zk2kafka sandbox", -1)
                       for (t, p), o in offsets.items()}
            admin.alter_group_offsets(group, commits)
    finally:
        admin.close()
    result.topics = dict(TOPICS)


def _seed_zookeeper(zookeeper: str, zk_root: str, result: SeedResult) -> None:
    zk = KazooClient(hosts=zookeeper, timeout=10)
    zk.start(timeout=15)
    try:
        for group, rows in ZK_OFFSETS.items():
            acl = [make_digest_acl(*SECURED_ACL_USER, all=True)] if group == "secured" else None
            for layout, topic, partition, raw in rows:
                path = f"{zk_root}/{group}/{layout}/{topic}/{partition}"
                _put(zk, path, raw.encode(), acl)
                result.znodes += 1
            result.groups.append(group)
        group, consumer_id = LIVE_ZK_CONSUMER
        registration = {"version": 1, "subscription": {"payments": 1}, "pattern": "static",
                        "timestamp": "1700000000000"}
        _put(zk, f"{zk_root}/{group}/ids/{consumer_id}", json.dumps(registration).encode())
        for partition in range(TOPICS["payments"]):
            _put(zk, f"{zk_root}/{group}/owners/payments/{partition}", f"{consumer_id}-0".encode())
    finally:
        zk.stop()
        zk.close()


def _put(zk: KazooClient, path: str, value: bytes, acl=None) -> None:
    """Create or overwrite a znode; a node behind an ACL we set ourselves is recreated."""
    zk.ensure_path(path.rsplit("/", 1)[0])
    try:
        zk.create(path, value, acl=acl)
    except NodeExistsError:
        if acl:  # we cannot write through the ACL we put there: replace the node
            zk.delete(path)
            zk.create(path, value, acl=acl)
        else:
            zk.set(path, value)
