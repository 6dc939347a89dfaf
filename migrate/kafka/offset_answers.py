"""The answers to OffsetCommit and OffsetFetch read straight into zk2kafka's own values
(`{(topic, partition): error code}`, `{group: FetchedGroup}`), for offset_codec.py, which sends the
requests: the schemas and the versions are described there.

An OffsetFetch answer holds a partition for each offset sync mirrors, so its partitions are read in
one loop over the bytes rather than a call per field.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

Key = tuple[str, int]

COMMIT_FLEXIBLE = 8   # the first flexible versions (compact strings, tagged fields)
FETCH_FLEXIBLE = 6
_h, _i, _ih = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">ih")
_iqi, _iq = struct.Struct(">iqi"), struct.Struct(">iq")


class Committed(NamedTuple):
    """What Kafka holds for one partition of a group."""

    offset: int
    metadata: str | None


class FetchedGroup(NamedTuple):
    """One group of an OffsetFetch answer: Kafka's error for it (the group's, else the first
    partition's; 0 for none), the partition that error came from, and its offsets."""

    error: int
    failed_partition: Key | None
    offsets: dict[Key, Committed]


class Reader:
    """A Kafka answer read field by field; a short buffer raises struct.error."""

    __slots__ = ("data", "at", "compact")

    def __init__(self, data: bytes, compact: bool):
        self.data, self.at, self.compact = data, 0, compact

    def uvarint(self) -> int:
        data, at = self.data, self.at
        value = shift = 0
        while at < len(data):
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.at = at
                return value
            shift += 7
        raise struct.error("varint runs past the end of the answer")

    def fixed(self, form: struct.Struct):
        values = form.unpack_from(self.data, self.at)
        self.at += form.size
        return values

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.compact else self.fixed(_h)[0]
        if n < 0:
            return None
        end = self.at + n
        if end > len(self.data):
            raise struct.error(f"{n} bytes run past the end of the answer")
        value = self.data[self.at:end].decode()
        self.at = end
        return value

    def count(self) -> int:
        return max(0, self.uvarint() - 1 if self.compact else self.fixed(_i)[0])

    def tags(self) -> None:
        if self.compact:
            for _ in range(self.uvarint()):
                self.uvarint()
                size = self.uvarint()
                self.at += size


def decode_commit(version: int, body: bytes) -> dict[Key, int]:
    """An OffsetCommit answer (after its header): each partition's error code."""
    src = Reader(body, version >= COMMIT_FLEXIBLE)
    if version >= 3:
        src.fixed(_i)                             # ThrottleTimeMs
    out = {}
    for _ in range(src.count()):
        topic = src.string() or ""
        for _ in range(src.count()):
            partition, error = src.fixed(_ih)
            out[topic, partition] = error
            src.tags()
        src.tags()
    src.tags()
    return out


def decode_fetch(version: int, body: bytes, group: str | None = None) -> dict[str, FetchedGroup]:
    """An OffsetFetch answer (after its header), by group; below v8 the answer names no group,
    so `group` is the one asked for."""
    src = Reader(body, version >= FETCH_FLEXIBLE)
    if version >= 3:
        src.fixed(_i)                             # ThrottleTimeMs
    if version >= 8:
        out = {}
        for _ in range(src.count()):
            name = src.string() or ""
            offsets, failed = _topics(src, True)
            error = src.fixed(_h)[0]
            src.tags()
            out[name] = _fetched(error, failed, offsets)
        src.tags()
        return out
    offsets, failed = _topics(src, version >= 5)
    error = src.fixed(_h)[0]
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
    call per field (sync decodes one an offset it mirrors: a third less time); an unusual field
    (a long varint, a tagged field) goes through `src`."""
    data, at, compact = src.data, src.at, src.compact
    head = _iqi if epochs else _iq
    step, unpack, short = head.size, head.unpack_from, _h.unpack_from
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
