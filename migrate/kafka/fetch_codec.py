"""Fetch (API key 1), encoded here and sent on kafka-python's own connection (as
consumer_groups.py sends ConsumerGroupDescribe), for the one reader of `__consumer_offsets`
(offsets_log.py).

kafka-python's consumer decodes every record it fetches into a Python object before anything can
look at it, which is most of what reading ten million records cost (docs/performance.md); this
request gives back each partition's records as the bytes the broker sent, for record_batches.py.

Written from the schemas of Kafka's FetchRequest/Response, versions 3 to 11 (the last that is
not flexible; v12 has tagged fields, v13 names topics by id): 0.10.2 answers v3 at most, every
later release v4 to v11, and Kafka 4 no longer answers v0-v3 (KIP-896). Request header v1,
answer header v0; int16-length strings, int32-length arrays and bytes (-1: null).

- Request: replica id -1, max wait, min bytes, v3+ max bytes, v4+ isolation level (0: every
  record; the reader resolves transactions itself, by their markers), v7+ session id 0 and epoch
  -1 (no fetch session), topics [name, partitions [index, v9+ current leader epoch -1, fetch
  offset, v5+ log start offset -1, partition max bytes]], v7+ forgotten topics [], v11+ rack "".
- Answer: v1+ throttle time, v7+ error code and session id, topics [name, partitions [index,
  error code, high watermark, v4+ last stable offset, v5+ log start offset, v4+ aborted
  transactions (nullable) [producer id, first offset], v11+ preferred read replica, records]].
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

API_KEY = 1
LOWEST, HIGHEST = 3, 11

_h, _i, _q = (struct.Struct(f">{f}") for f in "hiq")


class PartitionData(NamedTuple):
    """One partition of a Fetch answer: its error code, high watermark, log start offset (-1
    before v5) and its records as the broker sent them (b"" for none)."""

    partition: int
    error_code: int
    high_watermark: int
    log_start: int
    records: bytes


def version_for(highest_announced: int | None) -> int | None:
    """The Fetch version to send to a broker announcing `highest_announced`; None: none here."""
    if highest_announced is None or highest_announced < LOWEST:
        return None
    return min(highest_announced, HIGHEST)


def _string(value: str) -> bytes:
    data = value.encode()
    return _h.pack(len(data)) + data


def encode_request(version: int, topic: str, positions: dict[int, int], partition_bytes: int,
                   max_bytes: int, correlation_id: int, client_id: str) -> bytes:
    """A framed Fetch request of `version` for `positions` ({partition: fetch offset}) of one
    topic, answered at once (max wait 0)."""
    out = [_h.pack(API_KEY), _h.pack(version), _i.pack(correlation_id), _string(client_id),
           struct.pack(">iii", -1, 0, 1)]
    out.append(_i.pack(max_bytes))
    if version >= 4:
        out.append(b"\x00")
    if version >= 7:
        out.append(struct.pack(">ii", 0, -1))
    out += [_i.pack(1), _string(topic), _i.pack(len(positions))]
    for partition, offset in sorted(positions.items()):
        out.append(_i.pack(partition))
        if version >= 9:
            out.append(_i.pack(-1))
        out.append(_q.pack(offset))
        if version >= 5:
            out.append(_q.pack(-1))
        out.append(_i.pack(partition_bytes))
    if version >= 7:
        out.append(_i.pack(0))
    if version >= 11:
        out.append(_string(""))
    body = b"".join(out)
    return _i.pack(len(body)) + body


def decode_answer(version: int, data: bytes) -> tuple[int, list[PartitionData]]:
    """A Fetch answer body (after its header): its top-level error code (0 before v7) and every
    partition. Raises struct.error on an answer shorter than its fields."""
    at = 4 if version >= 1 else 0                    # throttle time
    error = 0
    if version >= 7:
        error = _h.unpack_from(data, at)[0]
        at += 6                                      # error code, session id
    out = []
    (topics,) = _i.unpack_from(data, at)
    at += 4
    for _ in range(topics):
        (n,) = _h.unpack_from(data, at)
        at += 2 + n
        (count,) = _i.unpack_from(data, at)
        at += 4
        for _ in range(count):
            partition, code, watermark = struct.unpack_from(">ihq", data, at)
            at += 14
            log_start = -1
            if version >= 4:
                at += 8                              # last stable offset
            if version >= 5:
                (log_start,) = _q.unpack_from(data, at)
                at += 8
            if version >= 4:
                (aborted,) = _i.unpack_from(data, at)
                at += 4 + 16 * max(aborted, 0)       # resolved by their markers instead
            if version >= 11:
                at += 4                              # preferred read replica
            (size,) = _i.unpack_from(data, at)
            at += 4
            if size > 0 and at + size > len(data):
                raise struct.error("a partition's records run past the end of the answer")
            out.append(PartitionData(partition, code, watermark, log_start,
                                     data[at:at + size] if size > 0 else b""))
            at += max(size, 0)
    return error, out


class FetchRequest:
    """A Fetch request as kafka-python's connection sends one: it frames the request with
    `encode`, and decodes the answer with the class `header.get_response_class()` names."""

    API_KEY = API_KEY

    def __init__(self, version: int, topic: str, positions: dict[int, int],
                 partition_bytes: int, max_bytes: int):
        self.API_VERSION = version
        self.topic, self.positions = topic, dict(positions)
        self.partition_bytes, self.max_bytes = partition_bytes, max_bytes
        self.header: _Header | None = None

    def with_header(self, correlation_id: int = 0, client_id: str = "zk2kafka") -> None:
        self.header = _Header(correlation_id, client_id, self.API_VERSION)

    def encode(self, framed: bool = True, header: bool = True) -> bytes:
        assert framed and header and self.header is not None, "sent only by a connection"
        return encode_request(self.API_VERSION, self.topic, self.positions,
                              self.partition_bytes, self.max_bytes,
                              self.header.correlation_id, self.header.client_id)

    def expect_response(self) -> bool:
        return True

    def __str__(self) -> str:
        return (f"FetchRequest_v{self.API_VERSION}(topic={self.topic}, "
                f"partitions={len(self.positions)})")


@dataclass
class _Header:
    correlation_id: int
    client_id: str
    api_version: int
    request_api_key: int = API_KEY
    api_key = API_KEY    # kafka-python logs these two of a header it cannot match

    @property
    def request_api_version(self) -> int:
        return self.api_version

    def get_response_class(self):
        version = self.api_version

        class Answer(FetchResponse):
            @classmethod
            def decode(cls, buffer) -> FetchResponse:
                return cls(*decode_answer(version, buffer.read()))
        return Answer


@dataclass
class _ResponseHeader:
    correlation_id: int


class FetchResponse:
    """The decoded answer: the top-level error code and each partition's PartitionData."""

    def __init__(self, error_code: int, partitions: list[PartitionData]):
        self.error_code, self.partitions = error_code, partitions

    @staticmethod
    def parse_header(buffer) -> _ResponseHeader:
        return _ResponseHeader(_i.unpack(buffer.read(4))[0])
