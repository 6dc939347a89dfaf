"""OffsetFetch (API key 9): the request that reads what Kafka holds for every partition of a group,
encoded here and its answer decoded here, sent on kafka-python's own connection (request.py).
Every read of committed offsets goes through it: the snapshot, the writers' read-backs, sync's
every pass, the gate.

An answer holds a partition for each offset, so its partitions are read in one loop over the bytes
rather than a call per field (docs/performance.md).

Written from the schemas of Kafka's OffsetFetchRequest/Response; the versions are those
kafka-python's admin negotiates (tests/unit/test_offset_codec.py compares the bytes): the highest
both ends know, at most v8, at least v2 (the first that asks for "every partition", Kafka 0.10.2's
highest). The supported releases land on: 0.10.2 v2, 1.1 v3, 2.4 v6, 2.8 v7, 3.0 and later v8
(one request for many groups, KIP-709). v6 and later are flexible.

- v2-v7: group, topics null (every partition), v7 require_stable false. Answer: v3+ throttle
  time, topics [name, partitions [index, offset, v5+ leader epoch, metadata, error]], error.
- v8: groups [group, topics null], require_stable false; answer: throttle time, groups
  [group, topics [...as v7], error].
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

from migrate.kafka.values import Committed, Key
from migrate.kafka.wire.primitives import INT16, Reader, count, string
from migrate.kafka.wire.request import Request

API_KEY = 9
LOWEST, HIGHEST = 2, 8
FLEXIBLE = 6    # the first flexible version (compact strings, tagged fields)

_iqi, _iq = struct.Struct(">iqi"), struct.Struct(">iq")


class FetchedGroup(NamedTuple):
    """One group of an OffsetFetch answer: Kafka's error for it (the group's, else the first
    partition's; 0 for none), the partition that error came from, and its offsets."""

    error: int
    failed_partition: Key | None
    offsets: dict[Key, Committed]


class OffsetFetchRequest(Request):
    """OffsetFetch of every partition of `groups` (one group unless the broker answers v8); its
    answer: {group: FetchedGroup}."""

    API_KEY = API_KEY
    name = "OffsetFetch"
    min_version, max_version, flexible_from = LOWEST, HIGHEST, FLEXIBLE
    throttle_from = 3

    def __init__(self, groups: Iterable[str]):
        super().__init__()
        self.groups = list(groups)

    def body(self, version: int) -> list[bytes]:
        compact = self.flexible(version)
        tags = b"\x00" if compact else b""
        parts = []
        if version >= 8:
            parts.append(count(len(self.groups), compact))
            for group in self.groups:
                parts += [string(group, compact), b"\x00", tags]   # Topics: null, every one
        else:
            if len(self.groups) != 1:
                raise ValueError(f"OffsetFetch v{version} asks for one group, "
                                 f"not {len(self.groups)}")
            parts += [string(self.groups[0], compact),
                      b"\x00" if compact else b"\xff\xff\xff\xff"]
        if version >= 7:
            parts.append(b"\x00")                     # RequireStable: false
        parts.append(tags)
        return parts

    def decode(self, version: int, body: bytes) -> dict[str, FetchedGroup]:
        return decode_fetch(version, body, self.groups[0] if len(self.groups) == 1 else None)

    def described(self) -> str:
        return f"groups={self.groups}"


def encode_fetch(version: int, correlation_id: int, client_id: str,
                 groups: Iterable[str]) -> bytes:
    """A framed OffsetFetch request of `version` for every partition of `groups`."""
    return OffsetFetchRequest(groups).encoded(version, correlation_id, client_id)


def decode_fetch(version: int, body: bytes, group: str | None = None) -> dict[str, FetchedGroup]:
    """An OffsetFetch answer (after its header), by group; below v8 the answer names no group,
    so `group` is the one asked for."""
    src = Reader(body, version >= FLEXIBLE)
    if version >= 3:
        src.int32()                             # ThrottleTimeMs
    if version >= 8:
        out = {}
        for _ in range(src.count()):
            name = src.string() or ""
            offsets, failed = _topics(src, True)
            error = src.int16()
            src.tags()
            out[name] = _fetched(error, failed, offsets)
        src.tags()
        return out
    offsets, failed = _topics(src, version >= 5)
    error = src.int16()
    src.tags()
    return {group or "": _fetched(error, failed, offsets)}


def _fetched(error: int, failed: tuple[Key, int] | None,
             offsets: dict[Key, Committed]) -> FetchedGroup:
    if error:
        return FetchedGroup(error, None, offsets)
    if failed is not None:
        return FetchedGroup(failed[1], failed[0], offsets)
    return FetchedGroup(0, None, offsets)


def _topics(src: Reader, epochs: bool) -> tuple[dict[Key, Committed], tuple[Key, int] | None]:
    """The topics of one group: its offsets, and the first partition Kafka refused (with the
    error code)."""
    offsets: dict[Key, Committed] = {}
    failed = None
    for _ in range(src.count()):
        topic = src.string() or ""
        try:
            failed = _partitions(src, topic, src.count(), epochs, offsets, failed)
        except IndexError as exc:   # a byte read past the end
            raise struct.error("a partition runs past the end of the answer") from exc
        src.tags()
    return offsets, failed


def _partitions(src: Reader, topic: str, n: int, epochs: bool, offsets: dict[Key, Committed],
                failed: tuple[Key, int] | None) -> tuple[Key, int] | None:
    """`n` partitions of `topic` into `offsets`, read in one loop over the bytes rather than a
    call per field (sync decodes one an offset it mirrors; docs/performance.md); an unusual field
    (a long varint, a tagged field) goes through `src`."""
    data, at, compact = src.data, src.at, src.compact
    head = _iqi if epochs else _iq
    step, unpack, short = head.size, head.unpack_from, INT16.unpack_from
    new = tuple.__new__   # a namedtuple's own constructor is a Python call per offset
    for _ in range(n):
        partition, offset = unpack(data, at)[:2]
        at += step
        if not compact:
            size = short(data, at)[0]
            at += 2
        elif data[at] < 0x80:
            size = data[at] - 1
            at += 1
        else:
            src.at = at
            size = src.uvarint() - 1
            at = src.at
        if size < 0:
            metadata = None
        else:
            end = at + size
            if end > len(data):
                raise struct.error(f"{size} bytes run past the end of the answer")
            metadata = data[at:end].decode()
            at = end
        error = short(data, at)[0]
        at += 2
        if compact:
            if data[at]:
                src.at = at
                src.tags()
                at = src.at
            else:
                at += 1
        if error and failed is None:
            failed = ((topic, partition), error)
        offsets[topic, partition] = new(Committed, (offset, metadata))
    src.at = at
    return failed
