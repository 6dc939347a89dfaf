"""OffsetSyncsReader: MirrorMaker 2's offset syncs, read from `mm2-offset-syncs.<target>.internal`.

It reads only.

MirrorSourceTask writes one OffsetSync record each time a replicated partition's downstream offset
drifts from the upstream one by more than `offset.lag.max` (and on other occasions: a task's start,
an upstream offset that went back). Each says: the record at `upstream_offset` of the source
partition is at `downstream_offset` of its copy on the target. The topic lives on the source
cluster by default, on the target with `offset-syncs.topic.location=target`; it is compacted, keyed
by source partition, so only the newest syncs of each partition may be left.

The record format is Kafka's protocol types (OffsetSync.java, connect/mirror-client), big-endian:
  key:   topic STRING (int16 length, then UTF-8), partition INT32
  value: upstreamOffset INT64, offset (the downstream one) INT64
"""

from __future__ import annotations

import logging
import re
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from migrate.errors import ConfigError, OffsetSyncsUnavailable

log = logging.getLogger(__name__)

# One row per sync, in the syncs topic's order: `sync_partition`, `sync_offset` place it there (a
# later sync of a source partition may invalidate earlier ones; see migrate/diff/translate.py).
SYNCS_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()),
    ("upstream_offset", pa.int64()), ("downstream_offset", pa.int64()),
    ("sync_partition", pa.int32()), ("sync_offset", pa.int64()),
])
_INT16, _INT32, _INT64X2 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">qq")


# MirrorMaker 2's replication policies: how a source topic's copy on the target is named.
DEFAULT, IDENTITY = "default", "identity"
REPLICATION_POLICIES = (DEFAULT, IDENTITY)
SEPARATOR = "."   # DefaultReplicationPolicy's replication.policy.separator default


def remote_name(topic: str, source_alias: str, policy: str) -> str:
    """The name MirrorMaker 2 gives `topic`'s copy on the target: `<source alias>.<topic>` under
    DefaultReplicationPolicy, `topic` under IdentityReplicationPolicy."""
    if policy not in REPLICATION_POLICIES:
        raise ValueError(f"unknown replication policy {policy!r}")
    return topic if policy == IDENTITY else f"{source_alias}{SEPARATOR}{topic}"


def upstream_name(remote: str, source_alias: str, policy: str) -> str | None:
    """The source topic whose copy `remote` is, or None when `remote` is no copy from
    `source_alias` under `policy`."""
    if policy == IDENTITY:
        return remote
    prefix = f"{source_alias}{SEPARATOR}"
    return remote[len(prefix):] if remote.startswith(prefix) and len(remote) > len(prefix) else None


class OffsetSync(NamedTuple):
    """One decoded sync: source `topic`/`partition`, its record at `upstream_offset` is at
    `downstream_offset` on the target."""

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int


def syncs_topic(target_alias: str) -> str:
    """The syncs topic MirrorMaker 2 names for a target cluster alias (DefaultReplicationPolicy's
    offsetSyncsTopic, which IdentityReplicationPolicy inherits)."""
    return f"mm2-offset-syncs.{target_alias}.internal"


_SYNCS_TOPIC = re.compile(r"^mm2-offset-syncs\.(.+)\.internal$")


def target_aliases(topics: Iterable[str]) -> list[str]:
    """The target cluster aliases whose syncs topics are among `topics`, sorted."""
    return sorted(m[1] for t in topics if (m := _SYNCS_TOPIC.match(t)))


def find_target_alias(consumer_config: dict) -> str:
    """The target alias of the one syncs topic on the cluster `consumer_config` reaches.

    Raises OffsetSyncsUnavailable when there is none or the cluster cannot be read, ConfigError
    (naming them) when there are several.
    """
    server = _server(consumer_config)
    try:
        consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, **consumer_config)
        try:
            aliases = target_aliases(consumer.topics())
        finally:
            consumer.close()
    except KafkaError as exc:
        raise OffsetSyncsUnavailable(syncs_topic("<alias>"), server, f"cannot list topics: {exc}") \
            from exc
    if not aliases:
        raise OffsetSyncsUnavailable(
            syncs_topic("<alias>"), server, "no such topic: is MirrorMaker 2 running, and is "
            "--offset-syncs-bootstrap-server the cluster that holds its offset syncs?")
    if len(aliases) > 1:
        raise ConfigError(f"--mm2-target-alias is needed: {server} holds the offset syncs of "
                          f"{len(aliases)} MirrorMaker 2 targets: {', '.join(aliases)}")
    return aliases[0]


def _server(config: dict) -> str:
    servers = config.get("bootstrap_servers")
    return ",".join(servers) if isinstance(servers, list) else str(servers)


def decode(key: bytes, value: bytes) -> OffsetSync:
    """The sync in one record; raises ValueError when the bytes are not an OffsetSync."""
    if key is None or value is None:
        raise ValueError("an OffsetSync record has a key and a value")
    if len(key) < _INT16.size:
        raise ValueError(f"key of {len(key)} byte(s) is too short for a topic name")
    (length,) = _INT16.unpack_from(key, 0)
    if length < 0 or len(key) != _INT16.size + length + _INT32.size:
        raise ValueError(f"key of {len(key)} byte(s) does not hold a {length}-byte topic name "
                         "and a partition")
    topic = key[_INT16.size:_INT16.size + length].decode("utf-8")
    (partition,) = _INT32.unpack_from(key, _INT16.size + length)
    if len(value) != _INT64X2.size:
        raise ValueError(f"value of {len(value)} byte(s), not 16 (two INT64 offsets)")
    upstream, downstream = _INT64X2.unpack(value)
    return OffsetSync(topic, partition, upstream, downstream)


@dataclass(frozen=True)
class SyncsInfo:
    """What the syncs snapshot holds, for the summary."""

    path: Path
    topic: str
    bootstrap_server: str
    syncs: int
    partitions: int        # source partitions with at least one sync
    skipped: int           # records that were not OffsetSyncs (logged)
    seconds: float

    @property
    def alias(self) -> str:
        """The target cluster alias the syncs topic is named after."""
        return target_aliases([self.topic])[0]


class OffsetSyncsReader:
    """Reads a syncs topic from its beginning to the end it had when the read began."""

    def __init__(self, consumer_config: dict, topic: str, *, timeout: float = 60.0):
        self.config = consumer_config
        self.topic = topic
        self.timeout = timeout

    def write(self, path: Path, upstream_topics: set[str] | None = None) -> SyncsInfo:
        """Every sync (of `upstream_topics` only, when given) into `path` (SYNCS_SCHEMA).

        Raises OffsetSyncsUnavailable when the topic is missing or cannot be read to its end.
        """
        started = time.monotonic()
        server = _server(self.config)
        try:
            consumer = KafkaConsumer(enable_auto_commit=False, group_id=None, **self.config)
        except KafkaError as exc:
            raise OffsetSyncsUnavailable(self.topic, server, f"cannot connect: {exc}") from exc
        try:
            rows, skipped = self._read(consumer, server, upstream_topics)
        finally:
            consumer.close()
        pq.write_table(pa.Table.from_pylist(rows, schema=SYNCS_SCHEMA), path)
        return SyncsInfo(path=path, topic=self.topic, bootstrap_server=server, syncs=len(rows),
                         partitions=len({(r["topic"], r["partition"]) for r in rows}),
                         skipped=skipped, seconds=round(time.monotonic() - started, 3))

    def _read(self, consumer: KafkaConsumer, server: str,
              upstream_topics: set[str] | None) -> tuple[list[dict], int]:
        try:
            numbers = consumer.partitions_for_topic(self.topic)
        except KafkaError as exc:
            raise OffsetSyncsUnavailable(self.topic, server, str(exc)) from exc
        if not numbers:
            raise OffsetSyncsUnavailable(
                self.topic, server, "no such topic (is MirrorMaker 2 running with this target "
                "alias, and is --offset-syncs-bootstrap-server the cluster that holds it?)")
        partitions = [TopicPartition(self.topic, p) for p in sorted(numbers)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        # The end as it is now: syncs written after the read began are not waited for.
        ends = consumer.end_offsets(partitions)
        rows, skipped = [], 0
        deadline = time.monotonic() + self.timeout
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            if time.monotonic() > deadline:
                behind = {tp.partition: end - consumer.position(tp) for tp, end in ends.items()}
                raise OffsetSyncsUnavailable(
                    self.topic, server, f"not read to its end within {self.timeout:.0f}s "
                    f"(records left per partition: {behind})")
            for tp, records in consumer.poll(timeout_ms=1000).items():
                for record in records:
                    if record.offset >= ends[tp]:
                        continue
                    try:
                        sync = decode(record.key, record.value)
                    except ValueError as exc:
                        skipped += 1
                        log.warning("%s partition %d offset %d is not an OffsetSync: %s",
                                    self.topic, tp.partition, record.offset, exc)
                        continue
                    if upstream_topics is None or sync.topic in upstream_topics:
                        rows.append({**sync._asdict(), "sync_partition": tp.partition,
                                     "sync_offset": record.offset})
        return rows, skipped
