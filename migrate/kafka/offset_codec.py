"""OffsetCommit (API key 8) and OffsetFetch (API key 9): the two requests sync sends for every
group it mirrors, encoded and their answers decoded here, and sent on kafka-python's own
connection (as consumer_groups.py sends ConsumerGroupDescribe).

kafka-python builds each request and answer as generic protocol objects, a Python object per
field, topic and partition, and that was the largest share of sync's CPU left (py-spy,
docs/performance.md). Here a request is packed from zk2kafka's own {(topic, partition): offset}
and an answer read straight into {(topic, partition): Committed}.

Written from the schemas of Kafka's OffsetCommitRequest/Response and OffsetFetchRequest/Response.
The versions are those kafka-python's admin negotiates, so that the bytes on the wire are the
same as before (tests/unit/test_offset_codec.py compares them byte for byte): each request asks
for the highest version both ends know, at most v8 (kafka-python's own cap; v9 names topics by
id), at least v2 (the first OffsetFetch that asks for "every partition", Kafka 0.10.2's highest).
The supported releases land on: 0.10.2 commit v2 / fetch v2, 1.1 v3 / v3, 2.4 v8 / v6,
2.8 v8 / v7, 3.9 and 4.1 v8 / v8 (v8: one fetch for many groups, KIP-709).

Request header v1 (v2, with tagged fields, when flexible); answer header: the correlation id (and
tagged fields). Flexible versions (commit v8, fetch v6+) write strings and arrays compactly (varint
length + 1, 0 for null) and end each struct with tagged fields (none here); the others an int16-
length string and an int32-length array (-1 for null).

- OffsetCommit: group, generation -1, member "", v7+ group instance null, v2-v4 retention -1,
  topics [name, partitions [index, offset, v6+ leader epoch -1, metadata]]. Answer: v3+ throttle
  time, topics [name, partitions [index, error]].
- OffsetFetch v2-v7: group, topics null (every partition), v7 require_stable false. Answer: v3+
  throttle time, topics [name, partitions [index, offset, v5+ leader epoch, metadata, error]],
  error. v8: groups [group, topics null], require_stable false; answer: throttle time, groups
  [group, topics [...as v7], error].
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from migrate.kafka.offset_answers import (COMMIT_FLEXIBLE, FETCH_FLEXIBLE, Committed,
                                          FetchedGroup, Key, Reader, decode_commit, decode_fetch)

__all__ = ["COMMIT", "FETCH", "HIGHEST", "LOWEST", "CommitRequest", "Committed", "FetchRequest",
           "FetchedGroup", "Key", "decode_commit", "decode_fetch", "encode_commit", "encode_fetch",
           "flexible"]

COMMIT = 8
FETCH = 9
LOWEST = 2
HIGHEST = 8

_h, _i, _q, _hhi = (struct.Struct(f">{f}") for f in ("h", "i", "q", "hhi"))
_iq = struct.Struct(">iq")
_MINUS_ONE_I, _MINUS_ONE_Q = _i.pack(-1), _q.pack(-1)


def flexible(api: int, version: int) -> bool:
    return version >= (COMMIT_FLEXIBLE if api == COMMIT else FETCH_FLEXIBLE)

def _uvarint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(value: str | None, compact: bool) -> bytes:
    if value is None:
        return b"\x00" if compact else b"\xff\xff"
    data = value.encode()
    return (_uvarint(len(data) + 1) if compact else _h.pack(len(data))) + data


def _count(n: int, compact: bool) -> bytes:
    return _uvarint(n + 1) if compact else _i.pack(n)


def _header(api: int, version: int, correlation_id: int, client_id: str) -> bytes:
    # The header's client id is an int16-length string even in a flexible request (header v2).
    head = _hhi.pack(api, version, correlation_id) + _string(client_id, compact=False)
    return head + b"\x00" if flexible(api, version) else head


def _check(version: int) -> None:
    if not LOWEST <= version <= HIGHEST:
        raise ValueError(f"version {version}: this codec writes v{LOWEST}-v{HIGHEST}")


def _framed(parts: list[bytes]) -> bytes:
    body = b"".join(parts)
    return _i.pack(len(body)) + body


def encode_commit(version: int, correlation_id: int, client_id: str, group: str,
                  offsets: Mapping[Key, int], metadata: str) -> bytes:
    """A framed OffsetCommit request: `offsets` of `group` from outside the group (generation
    -1, no member id), each with `metadata`; topics in the order they first appear."""
    _check(version)
    compact = version >= COMMIT_FLEXIBLE
    tags = b"\x00" if compact else b""
    parts = [_header(COMMIT, version, correlation_id, client_id), _string(group, compact),
             _MINUS_ONE_I, _string("", compact)]
    if version >= 7:
        parts.append(_string(None, compact))     # GroupInstanceId
    if 2 <= version <= 4:
        parts.append(_MINUS_ONE_Q)                # RetentionTimeMs: the broker's setting
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append((partition, offset))
    tail = _string(metadata, compact) + tags
    if version >= 6:
        tail = _MINUS_ONE_I + tail                # CommittedLeaderEpoch: none known
    parts.append(_count(len(by_topic), compact))
    pack = _iq.pack
    for topic, partitions in by_topic.items():
        parts.append(_string(topic, compact))
        parts.append(_count(len(partitions), compact))
        parts.extend(pack(partition, offset) + tail for partition, offset in partitions)
        parts.append(tags)
    parts.append(tags)
    return _framed(parts)


def encode_fetch(version: int, correlation_id: int, client_id: str,
                 groups: Iterable[str]) -> bytes:
    """A framed OffsetFetch request for every partition of `groups` (one group below v8)."""
    _check(version)
    compact = version >= FETCH_FLEXIBLE
    tags = b"\x00" if compact else b""
    groups = list(groups)
    parts = [_header(FETCH, version, correlation_id, client_id)]
    if version >= 8:
        parts.append(_count(len(groups), compact))
        for group in groups:
            parts += [_string(group, compact), b"\x00", tags]   # Topics: null, every partition
    else:
        if len(groups) != 1:
            raise ValueError(f"OffsetFetch v{version} asks for one group, not {len(groups)}")
        parts += [_string(groups[0], compact), b"\x00" if compact else b"\xff\xff\xff\xff"]
    if version >= 7:
        parts.append(b"\x00")                     # RequireStable: false
    parts.append(tags)
    return _framed(parts)

class _Request:
    """A request as kafka-python's connection sends one: it picks API_VERSION from the broker's
    ApiVersions answer within [min_version, max_version] (as it does for its own requests),
    frames it with `encode`, and decodes the answer with what `header.get_response_class()`
    gives."""

    min_version = LOWEST
    max_version = HIGHEST
    _min_version = None
    _max_version = None

    def __init__(self):
        self.API_VERSION: int | None = None
        self.header: _Header | None = None

    def with_header(self, correlation_id: int = 0, client_id: str = "zk2kafka") -> None:
        self.header = _Header(correlation_id, client_id, self.API_KEY, self.API_VERSION, self)

    def expect_response(self) -> bool:
        return True

    def encode(self, framed: bool = True, header: bool = True) -> bytes:
        assert framed and header and self.header is not None, "sent only by a connection"
        return self._encode(self.API_VERSION, self.header.correlation_id, self.header.client_id)

    def _encode(self, version: int, correlation_id: int, client_id: str) -> bytes:
        raise NotImplementedError

    def decode(self, version: int, body: bytes):
        raise NotImplementedError


class CommitRequest(_Request):
    """OffsetCommit of one group's offsets; its answer: {(topic, partition): error code}."""

    API_KEY = COMMIT
    name = "OffsetCommit"

    def __init__(self, group: str, offsets: Mapping[Key, int], metadata: str):
        super().__init__()
        self.group, self.offsets, self.metadata = group, offsets, metadata

    def _encode(self, version: int, correlation_id: int, client_id: str) -> bytes:
        return encode_commit(version, correlation_id, client_id, self.group, self.offsets,
                             self.metadata)

    def decode(self, version: int, body: bytes) -> dict[Key, int]:
        return decode_commit(version, body)

    def __str__(self) -> str:
        return f"OffsetCommitRequest_v{self.API_VERSION}(group_id={self.group!r}, " \
               f"{len(self.offsets)} offsets)"


class FetchRequest(_Request):
    """OffsetFetch of every partition of `groups` (one group unless the broker answers v8); its
    answer: {group: FetchedGroup}."""

    API_KEY = FETCH
    name = "OffsetFetch"

    def __init__(self, groups: Iterable[str]):
        super().__init__()
        self.groups = list(groups)

    def _encode(self, version: int, correlation_id: int, client_id: str) -> bytes:
        return encode_fetch(version, correlation_id, client_id, self.groups)

    def decode(self, version: int, body: bytes) -> dict[str, FetchedGroup]:
        return decode_fetch(version, body, self.groups[0] if len(self.groups) == 1 else None)

    def __str__(self) -> str:
        return f"OffsetFetchRequest_v{self.API_VERSION}(groups={self.groups})"


class _Header:
    """What kafka-python's parser keeps of a request in flight, to read its answer."""

    __slots__ = ("correlation_id", "client_id", "api_key", "api_version", "request")

    def __init__(self, correlation_id: int, client_id: str, api_key: int, api_version: int,
                 request: _Request):
        self.correlation_id, self.client_id = correlation_id, client_id
        self.api_key, self.api_version, self.request = api_key, api_version, request

    def get_response_class(self) -> _Answer:
        return _Answer(self.request, self.api_version)


class _ResponseHeader(NamedTuple):
    correlation_id: int


class Answer(NamedTuple):
    """A decoded answer, as the connection's future gives it: `value` is the request's decode."""

    value: object
    throttle_time_ms: int = 0


class _Answer:
    """Reads one answer off kafka-python's receive buffer: the header, then the body."""

    def __init__(self, request: _Request, version: int):
        self.request, self.version = request, version
        self.compact = flexible(request.API_KEY, version)

    def parse_header(self, buffer) -> _ResponseHeader:
        header = _ResponseHeader(_i.unpack(buffer.read(4))[0])
        if self.compact:
            rest = buffer.read()
            src = Reader(rest, True)
            src.tags()
            buffer.seek(buffer.tell() - (len(rest) - src.at))
        return header

    def decode(self, buffer) -> Answer:
        body = buffer.read()
        throttle = _i.unpack_from(body)[0] if self.version >= 3 and len(body) >= 4 else 0
        return Answer(self.request.decode(self.version, body), throttle)
