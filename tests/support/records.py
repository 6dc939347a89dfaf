"""Records of __consumer_offsets as the coordinator writes them, built from Kafka's schemas for the unit tests
of their reader (migrate/kafka/offsets_log/: schema.py, group.py, partition.py, records.py): keys and values of
every version, and record batches around them built by kafka-python's own builders; and `read_groups`, a read of
some groups' records on a real cluster for the integration tests."""

from __future__ import annotations

import struct

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafka.admin import KafkaAdminClient

from migrate.kafka.offsets_log import GroupLog, OffsetsLog, Unreadable


def read_groups(admin: KafkaAdminClient, groups, budget: float = 300.0) -> tuple[dict[str, GroupLog], str | None]:
    """`groups`' records read once to the end of their partitions, and why they could not be (then none is
    given)."""
    reader = OffsetsLog(admin)
    try:
        reader.follow(groups)
    except Unreadable as exc:
        return {}, str(exc)
    why = reader.read(budget)
    return ({} if why else dict(reader.groups)), why


def string(text: str | None, compact: bool = False) -> bytes:
    if text is None:
        return b"\x00" if compact else struct.pack(">h", -1)
    raw = text.encode()
    return bytes([len(raw) + 1]) + raw if compact else struct.pack(">h", len(raw)) + raw


def blob(data: bytes, compact: bool = False) -> bytes:
    return bytes([len(data) + 1]) + data if compact else struct.pack(">i", len(data)) + data


def offset_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return struct.pack(">h", version) + string(group) + string(topic) + struct.pack(">i", partition)


def group_key(group: str, kind: int = 2) -> bytes:
    return struct.pack(">h", kind) + string(group)


def member_key(group: str, member: str) -> bytes:
    return struct.pack(">h", 5) + string(group) + string(member)


def commit_value(offset: int, commit_ms: int, metadata: str = "", version: int = 3,
                 expire_ms: int = -1) -> bytes:
    compact = version >= 4
    out = struct.pack(">hq", version, offset)
    if version >= 3:
        out += struct.pack(">i", -1)
    out += string(metadata, compact) + struct.pack(">q", commit_ms)
    if version == 1:
        out += struct.pack(">q", expire_ms)
    return out + (b"\x00" if compact else b"")


def assignment(partitions: dict[str, list[int]]) -> bytes:
    """A ConsumerProtocol assignment (version 0): the topics and their partitions, no user data."""
    out = struct.pack(">hi", 0, len(partitions))
    for topic, numbers in partitions.items():
        out += string(topic) + struct.pack(">i", len(numbers)) + b"".join(struct.pack(">i", p) for p in numbers)
    return out + struct.pack(">i", -1)


def group_value(generation: int, members: list[tuple[str, dict[str, list[int]]]], protocol_type="consumer",
                state_ms: int = -1, version: int = 3) -> bytes:
    """A GroupMetadataValue of `version` with `members`: (member id, its assigned partitions by topic)."""
    compact = version >= 4
    out = struct.pack(">h", version) + string(protocol_type, compact) + struct.pack(">i", generation)
    out += string("range", compact) + string(members[0][0] if members else None, compact)
    if version >= 2:
        out += struct.pack(">q", state_ms)
    out += bytes([len(members) + 1]) if compact else struct.pack(">i", len(members))
    for member_id, assigned in members:
        out += string(member_id, compact)
        if version >= 3:
            out += string(None, compact)
        out += string("client-" + member_id, compact) + string("/127.0.0.1", compact)
        out += struct.pack(">i" if version == 0 else ">ii", *((30000,) if version == 0 else (60000, 30000)))
        out += blob(b"", compact) + blob(assignment(assigned), compact)
        if compact:
            out += b"\x00"
    return out + (b"\x00" if compact else b"")


def member_value(client_id: str = "cli") -> bytes:
    """A KIP-848 ConsumerGroupMemberMetadataValue (flexible): instance id, rack, client id and host, the rest."""
    return (struct.pack(">h", 0) + string(None, True) + string(None, True) + string(client_id, True)
            + string("/127.0.0.1", True) + b"\x01" + string(None, True) + struct.pack(">i", 60000)
            + string(None, True) + b"\x00")


def marker(commit: bool) -> tuple[bytes, bytes]:
    """A transaction marker's key and value (ControlRecordType, EndTransactionMarker v0)."""
    return struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, 0)


def batch(records: list[tuple[bytes | None, bytes | None]], base_offset: int = 0, timestamp: int = 0,
          producer_id: int = -1, transactional: bool = False, control: bool = False,
          compression: int = 0) -> bytes:
    """A record batch (magic 2) of `records` (key, value), as kafka-python builds one."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                        base_sequence=0 if producer_id >= 0 else -1, batch_size=1 << 24)
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp=timestamp, key=key, value=value, headers=[])
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    if control:   # kafka-python builds no control batch: set the attribute, then the CRC again
        attributes = struct.unpack_from(">h", data, 21)[0] | 0x20
        struct.pack_into(">h", data, 21, attributes)
        from crc32c import crc32c
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def messages(records: list[tuple[bytes | None, bytes | None]], base_offset: int = 0, timestamp: int = 0,
             magic: int = 1, compression: int = 0) -> bytes:
    """A message set (magic 0 or 1) of `records`, as Kafka 0.10.2 writes __consumer_offsets."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression, batch_size=1 << 24)
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp=timestamp if magic else None, key=key, value=value)
    data = bytearray(builder.build())
    if compression:   # the wrapper's offset is the last inner one's
        struct.pack_into(">q", data, 0, base_offset + len(records) - 1)
    else:
        at = 0
        for i in range(len(records)):
            struct.pack_into(">q", data, at, base_offset + i)
            at += 12 + struct.unpack_from(">i", data, at + 8)[0]
    return bytes(data)


def group_log(name: str, empty_since: int | None = None, commits: list[int] = (),
              protocol_type: str = "consumer") -> GroupLog:
    """A GroupLog as its records build it: an Empty group's metadata record (2.1+) when `empty_since`, and a
    commit of partition i of topic `t` at each of `commits` (ms)."""
    log = GroupLog(name)
    if empty_since is not None:
        log.group_record(group_value(3, [], protocol_type, state_ms=empty_since))
    for i, at in enumerate(commits):
        log.commit(offset_key(name, "t", i), 100 + i, commit_value(7, at), during_watch=False)
    return log


def held(name: str, commits: dict[tuple[str, int], tuple[int, float]], by: str = "member",
         watched: dict[tuple[str, int], list[int]] | None = None) -> GroupLog:
    """A GroupLog whose records committed each key's (offset, at seconds) `by` a member of a consumer group
    assigned it ("member"), while the consumer group was Empty ("empty") or before any consumer joined ("never");
    `watched`: offsets committed during the watch before that last commit."""
    log = GroupLog(name)
    if by == "member":
        topics: dict[str, list[int]] = {}
        for topic, partition in commits:
            topics.setdefault(topic, []).append(partition)
        log.group_record(group_value(4, [("m-1", topics)]))
    elif by == "empty":
        log.group_record(group_value(5, [], state_ms=0))
    at = 10
    for key, offsets in (watched or {}).items():
        for offset in offsets:
            log.commit(offset_key(name, *key), at, commit_value(offset, 0), during_watch=True)
            at += 1
    for key, (offset, seconds) in commits.items():
        log.commit(offset_key(name, *key), at, commit_value(offset, int(seconds * 1000)),
                   during_watch=key in (watched or {}))
        at += 1
    return log
