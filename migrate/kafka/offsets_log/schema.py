"""What a record of `__consumer_offsets` means: its key's type and group, an offset commit's value,
a group's metadata (its members and what each is assigned), a transaction's marker. Pure: bytes in,
values out; partition.py and group.py apply them in log order.

Every key starts with an int16 type (its "version") and the group id as an int16-length string:
- 0 and 1: an offset commit (group, topic, partition); the value, OffsetCommitValue v0-v4: offset,
  v3+ leader epoch, metadata, commit timestamp, v1 only the expiry the broker went by (v4 is
  flexible: a compact metadata string);
- 2: a classic group's metadata; the value, GroupMetadataValue v0-v4: protocol type, generation,
  protocol, leader, v2+ (Kafka 2.1) the current state's timestamp, and the members, each with its
  id, v3+ instance id, client id and host, v1+ rebalance timeout, session timeout, subscription
  and assignment (v4 flexible: compact strings, bytes and arrays, tagged fields after each
  struct). Under protocol type `consumer` an assignment is the ConsumerProtocol's (version, then
  the topics and their partitions), which every version of it starts with;
- 3: a KIP-848 consumer group's metadata (Kafka 4.0+): a tombstone deletes the group;
- 5: a KIP-848 group's member (group, member id): present while the member is, a tombstone when it
  leaves; its value (flexible) starts with the instance id, rack id, client id and host;
- 4, 6, 7, 8 and higher: the rest of a KIP-848, share or streams group's state, not read here.
A value of None is a tombstone. A transaction's marker (a control record) has a key of version
and type: 0 ABORT, 1 COMMIT.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from migrate.kafka.values import Key
from migrate.kafka.wire.consumer_groups import classic_assignment
from migrate.kafka.wire.primitives import INT16, INT32, INT64, Reader, uvarint_at

OFFSET_KEYS = (0, 1)
GROUP_METADATA = 2
CONSUMER_GROUP_METADATA = 3    # KIP-848 (Kafka 4.0+)
CONSUMER_GROUP_MEMBER = 5
ABORT, COMMIT = 0, 1

UNREADABLE = (struct.error, IndexError, UnicodeDecodeError)   # bytes shorter than their fields


class CommitValue(NamedTuple):
    """An OffsetCommitValue: the offset committed, its metadata, when the coordinator took it
    (its clock, ms) and, v1 only, the expiry the broker went by (ms, else None)."""

    offset: int
    metadata: str
    commit_ms: int
    expire_ms: int | None


class Member(NamedTuple):
    """A member of a group as its metadata record names it; `assigned`: the partitions of its
    assignment, None where the record does not tell them (another protocol type than
    `consumer`, or a KIP-848 member, whose assignment names topics by id)."""

    member_id: str
    client_id: str
    client_host: str
    assigned: frozenset[Key] | None


class GroupMetadata(NamedTuple):
    """A GroupMetadataValue: protocol type ("" for none), generation, the state's timestamp (ms,
    2.1+; else None) and the members at that generation."""

    protocol_type: str
    generation: int
    state_ms: int | None
    members: tuple[Member, ...]


def group_of(key: bytes) -> bytes:
    """The group id's UTF-8 bytes every key carries after its int16 type (the reader's hot loops,
    records.py and partition.py, slice it inline the same way)."""
    return key[4:4 + ((key[2] << 8) | key[3])]


def offset_key(key: bytes) -> tuple[str, str, int]:
    """(group, topic, partition) of an offset commit's key (type 0 or 1), read straight from its
    bytes (a million of them a read)."""
    at = 4 + ((key[2] << 8) | key[3])                   # group_of, inline: a million calls a read
    m = (key[at] << 8) | key[at + 1]
    return (key[4:at].decode("utf-8"), key[at + 2:at + 2 + m].decode("utf-8"),
            INT32.unpack_from(key, at + 2 + m)[0])


def member_key(key: bytes) -> tuple[str, str]:
    """(group, member id) of a KIP-848 member record's key (type 5)."""
    group = group_of(key)
    r = Reader(key, compact=False)
    r.at = 4 + len(group)
    return group.decode("utf-8"), r.string() or ""


def commit_value(value: bytes) -> CommitValue | None:
    """An OffsetCommitValue, v0 to v4, read straight from its bytes (a million of them a read);
    None for a version this does not know. Raises struct.error on bytes shorter than their
    fields."""
    version = (value[0] << 8) | value[1]
    if version > 4:
        return None
    offset = INT64.unpack_from(value, 2)[0]
    at, length = _metadata_span(value, version)
    metadata = value[at:at + length].decode("utf-8")
    at += length
    commit = INT64.unpack_from(value, at)[0]
    expire = INT64.unpack_from(value, at + 8)[0] if version == 1 else -1
    return CommitValue(offset, metadata, commit, expire if expire >= 0 else None)


def commit_offset(value: bytes) -> int | None:
    """The offset an OffsetCommitValue, v0 to v4, holds, read without the rest of it; None for a
    version this does not know. Raises struct.error on bytes shorter than the field."""
    return INT64.unpack_from(value, 2)[0] if ((value[0] << 8) | value[1]) <= 4 else None


def commit_clock(value: bytes) -> tuple[int, int | None] | None:
    """(commit ms, v1's expire ms or None) of an OffsetCommitValue, v0 to v4, read straight from
    its bytes (the retention clocks of a million offsets); None for a version this does not
    know."""
    version = (value[0] << 8) | value[1]
    if version > 4:
        return None
    at, length = _metadata_span(value, version)
    at += length
    commit = INT64.unpack_from(value, at)[0]
    expire = INT64.unpack_from(value, at + 8)[0] if version == 1 else -1
    return commit, expire if expire >= 0 else None


def _metadata_span(value: bytes, version: int) -> tuple[int, int]:
    """Where an OffsetCommitValue's metadata string starts, and its length."""
    at = 10 if version < 3 else 14                       # version, offset (, leader epoch)
    if version == 4:                                     # compact string: varint length + 1
        n, at = uvarint_at(value, at)
        return at, max(n - 1, 0)
    return at + 2, max(INT16.unpack_from(value, at)[0], 0)


def group_metadata(value: bytes) -> GroupMetadata | None:
    """A GroupMetadataValue, v0 to v4, with its members; None for a version this does not know.
    Raises struct.error on bytes shorter than their fields."""
    version = INT16.unpack_from(value)[0]
    if not 0 <= version <= 4:
        return None
    r = Reader(value, compact=version >= 4)
    r.at = 2
    protocol_type = r.string() or ""
    generation = r.int32()
    r.string()                        # protocol
    r.string()                        # leader
    stamp = r.int64() if version >= 2 else -1
    members = []
    for _ in range(r.count()):
        member_id = r.string() or ""
        if version >= 3:
            r.string()                # group instance id
        client_id, client_host = r.string() or "", r.string() or ""
        r.take(4 if version == 0 else 8)   # (rebalance timeout,) session timeout
        r.bytes()                     # subscription
        assignment = r.bytes()
        r.tags()
        assigned = _assigned(assignment) if protocol_type == "consumer" else None
        members.append(Member(member_id, client_id, client_host, assigned))
    return GroupMetadata(protocol_type, generation, stamp if stamp >= 0 else None, tuple(members))


def member_value(member_id: str, value: bytes) -> Member:
    """A KIP-848 member (type 5) as a Member: its client id and host; its assignment untold."""
    r = Reader(value)
    r.int16()                         # version
    r.string()                        # instance id
    r.string()                        # rack id
    return Member(member_id, r.string() or "", r.string() or "", None)


def marker(key: bytes) -> int | None:
    """A control record's type: ABORT or COMMIT; None for another."""
    if key is None or len(key) < 4:
        return None
    version, kind = struct.unpack_from(">hh", key)
    return kind if version == 0 and kind in (ABORT, COMMIT) else None


def _assigned(assignment: bytes | None) -> frozenset[Key] | None:
    try:
        return frozenset(classic_assignment(assignment or b""))
    except (struct.error, UnicodeDecodeError):
        return None       # not the ConsumerProtocol's after all: the assignment is untold
