"""When did an Empty consumer group become Empty, and when was each of a group's offsets committed?
The one place the broker says it is __consumer_offsets.

From Kafka 2.1 (KIP-211) the offsets of an Empty group that has a protocol type expire
offsets.retention.minutes after it became Empty. No admin API carries that moment
(DescribeGroups and ListGroups have no timestamp), but the group's metadata record in
__consumer_offsets does: GroupMetadataValue v2+ (written from 2.1) holds
`current_state_timestamp`, set when the group changed state. A group without a protocol type (one
only ever committed to from outside, as a migration does), and every group before 2.1, loses each
offset by its own commit: the OffsetCommitValue records carry `commit_timestamp` (and, v1 only,
before 2.1, the `expire_timestamp` the broker goes by). This reads the latest records of each
asked group from the partition that holds it (the same `abs(hashCode) % partitions` the
coordinator uses), within a time budget. It reads only; a group it cannot tell is left out,
with the reason.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterable
from typing import NamedTuple

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from migrate.kafka.consumer_groups import WireReader

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
GROUP_METADATA_KEY = 2   # key version of a group metadata record (0 and 1 are offset commits)
# A KIP-848 group's metadata record (Kafka 4.0+, ConsumerGroupMetadataKey): a consumer group.
CONSUMER_GROUP_METADATA_KEY = 3
_CONSUMER_KEYS = ("bootstrap_servers", "client_id", "request_timeout_ms", "security_protocol",
                  "ssl_context", "ssl_check_hostname", "ssl_cafile", "ssl_certfile", "ssl_keyfile",
                  "ssl_password", "ssl_crlfile", "ssl_ciphers",
                  "sasl_mechanism", "sasl_plain_username", "sasl_plain_password",
                  "sasl_kerberos_name", "sasl_kerberos_service_name", "sasl_kerberos_domain_name",
                  "sasl_oauth_token_provider", "proxy_url", "api_version")


class OffsetClock(NamedTuple):
    """When an offset Kafka holds was committed, and the expiry a v1 record set (or None)."""

    commit_ms: int
    expire_ms: int | None


class GroupClock(NamedTuple):
    """What __consumer_offsets says of a group's clocks."""

    empty_since: int | None           # ms; its last state change, when it has no members (2.1+)
    commits: tuple[OffsetClock, ...]  # the latest commit of each partition it still holds
    # the same by (topic, partition): when Kafka's value of each was committed (takeover.py)
    partitions: dict[tuple[str, int], OffsetClock] = {}
    # its latest metadata record's protocol type ("" for a group only ever committed to from
    # outside; "consumer" for a KIP-848 group's); None: no such record read
    protocol_type: str | None = None


class GroupMetadata(NamedTuple):
    """What a GroupMetadataValue record says of its group, as far as this module needs."""

    protocol_type: str
    state_timestamp: int | None  # ms since the epoch of its last state change; None before 2.1
    members: int


def partition_for(group: str, partitions: int) -> int:
    """The __consumer_offsets partition of `group`, as Kafka picks it:
    Utils.abs(groupId.hashCode()) % partitions.
    """
    h = 0
    utf16 = group.encode("utf-16-be")
    for unit in struct.unpack(f">{len(utf16) // 2}H", utf16):
        h = (31 * h + unit) & 0xFFFFFFFF
    h = h - (1 << 32) if h & 0x80000000 else h
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def parse_key(key: bytes | None, version: int = GROUP_METADATA_KEY) -> str | None:
    """The group of a group metadata record's key (of `version`); None for other keys."""
    if not key or len(key) < 4 or struct.unpack_from(">h", key)[0] != version:
        return None
    (n,) = struct.unpack_from(">h", key, 2)
    return key[4:4 + n].decode("utf-8")


def parse_offset_key(key: bytes | None) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an offset commit record's key (key v0 or v1), else None."""
    if not key or len(key) < 2 or struct.unpack_from(">h", key)[0] not in (0, 1):
        return None
    r = WireReader(key)
    r.fixed("h")
    group, topic = r.string(False), r.string(False)
    return (group or "", topic or "", r.fixed("i"))


def parse_offset_clock(value: bytes) -> OffsetClock | None:
    """commit_timestamp (and v1's expire_timestamp) of an OffsetCommitValue, v0 to v4; None for
    a version this does not know."""
    r = WireReader(value)
    version = r.fixed("h")
    if version < 0 or version > 4:
        return None
    r.fixed("q")                 # offset
    if version >= 3:
        r.fixed("i")             # leader epoch
    r.string(version >= 4)    # metadata
    commit = r.fixed("q")
    expire = r.fixed("q") if version == 1 else -1
    return OffsetClock(commit, expire if expire >= 0 else None)


def parse_state_timestamp(value: bytes) -> GroupMetadata | None:
    """Protocol type, current_state_timestamp (or None) and member count of a GroupMetadataValue.

    v0-v1 (before 2.1) carry no timestamp; v2-v3 do; v4 (flexible, compact strings) too.
    Returns None for a version this does not know.
    """
    r = WireReader(value)
    version = r.fixed("h")
    if version < 0 or version > 4:
        return None
    compact = version >= 4
    protocol_type = r.string(compact) or ""
    r.fixed("i")              # generation
    r.string(compact)         # protocol
    r.string(compact)         # leader
    stamp = r.fixed("q") if version >= 2 else None
    members = (r.varint() - 1) if compact else r.fixed("i")
    return GroupMetadata(protocol_type, None if stamp is None or stamp < 0 else stamp,
                         max(members, 0))


def empty_since(admin: KafkaAdminClient, groups: Iterable[str],
                budget: float = 30.0) -> tuple[dict[str, int], str | None]:
    """When each group whose latest record shows no members last changed state, and why some or
    all could not be told (or None).

    Returns ({group: ms since the epoch}, why). Reads each partition involved from its start to
    its end as of now, at most `budget` seconds in all.
    """
    clocks, why = read_clocks(admin, groups, budget)
    found = {g: c.empty_since for g, c in clocks.items() if c.empty_since is not None}
    missing = set(groups) - set(found)
    if missing and why is None:
        why = (f"{len(missing)} group(s) have no state timestamp in {OFFSETS_TOPIC} "
               f"(a record older than Kafka 2.1, or none)")
    return found, why


def read_clocks(admin: KafkaAdminClient, groups: Iterable[str],
                budget: float = 30.0) -> tuple[dict[str, GroupClock], str | None]:
    """Each group's clocks as its latest records in __consumer_offsets hold them, and why none
    could be told (or None).

    Returns ({group: GroupClock}, why): every asked group the partitions were read for (a group
    with no record has neither clock). Reads each partition involved from its start to its end
    as of now, at most `budget` seconds in all; an unfinished read tells nothing.
    """
    wanted = set(groups)
    if not wanted:
        return {}, None
    try:
        topics = admin.describe_topics([OFFSETS_TOPIC])
    except KafkaError as exc:
        return {}, f"could not describe {OFFSETS_TOPIC}: {type(exc).__name__}: {exc}"
    partitions = len(topics[0]["partitions"]) if topics and topics[0]["partitions"] else 0
    if not partitions:
        return {}, (f"{OFFSETS_TOPIC} is not visible to this client "
                    f"(Describe on the topic is needed)")
    by_partition: dict[int, set[str]] = {}
    for group in wanted:
        by_partition.setdefault(partition_for(group, partitions), set()).add(group)
    options = {k: v for k, v in admin.config.items() if k in _CONSUMER_KEYS and v is not None}
    options["client_id"] = f"{options.get('client_id', 'zk2kafka')}-group-clock"
    latest: dict[str, bytes | None] = {}
    commits: dict[str, dict[tuple[str, int], OffsetClock]] = {g: {} for g in wanted}
    consumer_groups: set[str] = set()   # KIP-848 groups: their records say no protocol type
    try:
        consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, **options)
    except KafkaError as exc:
        return {}, f"could not open a reader of {OFFSETS_TOPIC}: {type(exc).__name__}: {exc}"
    deadline = time.monotonic() + budget
    try:
        tps = [TopicPartition(OFFSETS_TOPIC, p) for p in by_partition]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        left = {tp for tp in tps if end[tp] > 0}
        while left and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for record in records:
                    _take(record.key, record.value, wanted, latest, commits, consumer_groups)
            left = {tp for tp in left if consumer.position(tp) < end[tp]}
    except KafkaError as exc:
        return {}, (f"could not read {OFFSETS_TOPIC}: {type(exc).__name__}: {exc} "
                    f"(Read on the topic is needed)")
    finally:
        consumer.close()
    if left:
        # An unfinished partition may still hold a newer record: tell nothing rather than wrong.
        return {}, (f"reading {OFFSETS_TOPIC} took longer than {budget:.0f}s; "
                    f"{len(left)} partition(s) unfinished")
    out = {}
    for group in wanted:
        value = latest.get(group)
        parsed = parse_state_timestamp(value) if value else None
        idle = parsed is not None and parsed.members == 0
        kind = parsed.protocol_type if parsed else None
        if group in consumer_groups:
            kind = "consumer"
        out[group] = GroupClock(parsed.state_timestamp if idle else None,
                                tuple(commits[group].values()), commits[group], kind)
    return out, None


def _take(key: bytes | None, value: bytes | None, wanted: set[str],
          latest: dict[str, bytes | None], commits: dict[str, dict],
          consumer_groups: set[str]) -> None:
    """One record of __consumer_offsets into what is kept of it: later records win; a None value
    is a tombstone (the group, or the offset, deleted)."""
    group = parse_key(key)
    if group is not None:
        if group in wanted:
            latest[group] = value
        return
    group = parse_key(key, CONSUMER_GROUP_METADATA_KEY)
    if group is not None:
        if group in wanted:
            (consumer_groups.add if value else consumer_groups.discard)(group)
        return
    offset_key = parse_offset_key(key)
    if offset_key is None or offset_key[0] not in wanted:
        return
    held = commits[offset_key[0]]
    clock = parse_offset_clock(value) if value else None
    if clock is None:
        held.pop(offset_key[1:], None)
    else:
        held[offset_key[1:]] = clock
