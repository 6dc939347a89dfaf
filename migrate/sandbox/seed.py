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

With `bulk_groups` N (`sandbox seed --groups N --partitions P`) it also creates the groups
`bulk-00001` ... `bulk-N`, each with a valid offset on every partition of the topic `bulk` (P
partitions, 200 messages each), written in ZooKeeper transactions kept in flight together: 10,000
groups in seconds rather than minutes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.security import make_digest_acl

from migrate.errors import SandboxError

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
BULK_TOPIC = "bulk"
TX_OPS = 500        # znodes per ZooKeeper transaction
IN_FLIGHT = 32      # transactions sent before the oldest answer is awaited


@dataclass
class SeedResult:
    topics: dict[str, int] = field(default_factory=dict)
    messages: int = 0
    znodes: int = 0
    groups: list[str] = field(default_factory=list)
    bulk_groups: int = 0           # the bulk-* groups among `znodes`' owners


def seed(zookeeper: str, kafka_options: dict, zk_root: str = "/consumers", bulk_groups: int = 0,
         bulk_partitions: int = 4) -> SeedResult:
    """Create topics with messages, legacy offsets under `zk_root` and earlier Kafka commits;
    with `bulk_groups`, that many more groups on a topic of `bulk_partitions` partitions.

    Raises SandboxError when the bulk topic exists with another partition count.
    """
    result = SeedResult()
    topics = {**TOPICS, BULK_TOPIC: bulk_partitions} if bulk_groups else TOPICS
    _seed_kafka(kafka_options, result, topics)
    _seed_zookeeper(zookeeper, zk_root, result)
    if bulk_groups:
        result.znodes += _seed_bulk(zookeeper, zk_root, bulk_groups, bulk_partitions)
        result.bulk_groups = bulk_groups
    return result


def bulk_name(i: int, groups: int) -> str:
    """The name of bulk group `i` (1-based): zero-padded, so the names sort as numbered."""
    return f"bulk-{i:0{max(5, len(str(groups)))}d}"


def bulk_offset(i: int, partition: int) -> int:
    """Bulk group `i`'s offset on `partition`: spread over the log, never past its end."""
    return (i * 7 + partition * 13) % (MESSAGES_PER_PARTITION + 1)


def _seed_kafka(kafka_options: dict, result: SeedResult, topics: dict[str, int]) -> None:
    from kafka import KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata

    admin = KafkaAdminClient(client_id="zk2kafka-seed", **kafka_options)
    try:
        existing = set(admin.list_topics())
        if BULK_TOPIC in topics and BULK_TOPIC in existing:
            described = admin.describe_topics([BULK_TOPIC])[0]["partitions"]
            if len(described) != topics[BULK_TOPIC]:
                raise SandboxError(f"topic {BULK_TOPIC} already has {len(described)} partitions: "
                                   f"seed with --partitions {len(described)}, or a fresh sandbox")
        new = {t: {"num_partitions": n, "replication_factor": 1}
               for t, n in topics.items() if t not in existing}
        if new:
            admin.create_topics(new, wait_for_metadata=True)
        producer = KafkaProducer(client_id="zk2kafka-seed", linger_ms=5, **kafka_options)
        try:
            for topic in new:
                for partition in range(topics[topic]):
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
    result.topics = dict(topics)


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


def _seed_bulk(zookeeper: str, zk_root: str, groups: int, partitions: int) -> int:
    """The bulk groups' offset znodes: new groups created in transactions, several in flight;
    groups a former seed made get their values again. Returns the znodes written."""
    zk = KazooClient(hosts=zookeeper, timeout=30)
    zk.start(timeout=15)
    try:
        zk.ensure_path(zk_root)
        existing = set(zk.get_children(zk_root))
        names = [bulk_name(i, groups) for i in range(1, groups + 1)]
        pending, tx, ops = [], zk.transaction(), 0
        rewrites = []
        for i, name in enumerate(names, 1):
            offsets = {p: str(bulk_offset(i, p)).encode() for p in range(partitions)}
            base = f"{zk_root}/{name}/offsets/{BULK_TOPIC}"
            if name in existing:
                rewrites += [(f"{base}/{p}", value) for p, value in offsets.items()]
                continue
            for path in (f"{zk_root}/{name}", f"{zk_root}/{name}/offsets", base):
                tx.create(path)
            for p, value in offsets.items():
                tx.create(f"{base}/{p}", value)
            ops += 3 + partitions
            if ops >= TX_OPS:
                pending.append(tx.commit_async())
                tx, ops = zk.transaction(), 0
                if len(pending) >= IN_FLIGHT:
                    _settle(pending[:IN_FLIGHT // 2])
                    del pending[:IN_FLIGHT // 2]
        if ops:
            pending.append(tx.commit_async())
        _settle(pending)
        _rewrite(zk, rewrites)
    finally:
        zk.stop()
        zk.close()
    return groups * partitions


def _settle(transactions) -> None:
    for answer in transactions:
        for result in answer.get(timeout=60):
            if isinstance(result, Exception):
                raise SandboxError(f"seeding the bulk groups failed: {type(result).__name__}")


def _rewrite(zk: KazooClient, znodes: list[tuple[str, bytes]]) -> None:
    """Set each znode again, in transactions several in flight; a transaction that fails (a znode
    missing: another --partitions before) is done again znode by znode, creating what is missing."""
    pending = []
    for start in range(0, len(znodes), TX_OPS):
        batch = znodes[start:start + TX_OPS]
        tx = zk.transaction()
        for path, value in batch:
            tx.set_data(path, value)
        pending.append((batch, tx.commit_async()))
    for batch, answer in pending:
        if not any(isinstance(r, Exception) for r in answer.get(timeout=60)):
            continue
        for path, value in batch:
            try:
                zk.set(path, value)
            except NoNodeError:
                zk.ensure_path(path.rsplit("/", 1)[0])
                zk.create(path, value)
