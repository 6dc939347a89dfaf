"""Fetch (API key 1), encoded here and sent on kafka-python's own connection (request.py), for
the one reader of `__consumer_offsets` (offsets_log/reader.py).

kafka-python's consumer decodes every record it fetches into a Python object before anything can
look at it, which is most of what reading ten million records cost (docs/performance.md); this
request gives back each partition's records as the bytes the broker sent, for
offsets_log/records.py.

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
from typing import NamedTuple

from migrate.kafka.wire.primitives import INT16, INT32, INT64, string
from migrate.kafka.wire.request import Request

API_KEY = 1
LOWEST, HIGHEST = 3, 11


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


def decode_answer(version: int, data: bytes) -> tuple[int, list[PartitionData]]:
    """A Fetch answer body (after its header): its top-level error code (0 before v7) and every
    partition. Raises struct.error on an answer shorter than its fields."""
    at = 4 if version >= 1 else 0                    # throttle time
    error = 0
    if version >= 7:
        error = INT16.unpack_from(data, at)[0]
        at += 6                                      # error code, session id
    out = []
    (topics,) = INT32.unpack_from(data, at)
    at += 4
    for _ in range(topics):
        (n,) = INT16.unpack_from(data, at)
        at += 2 + n
        (count,) = INT32.unpack_from(data, at)
        at += 4
        for _ in range(count):
            partition, code, watermark = struct.unpack_from(">ihq", data, at)
            at += 14
            log_start = -1
            if version >= 4:
                at += 8                              # last stable offset
            if version >= 5:
                (log_start,) = INT64.unpack_from(data, at)
                at += 8
            if version >= 4:
                (aborted,) = INT32.unpack_from(data, at)
                at += 4 + 16 * max(aborted, 0)       # resolved by their markers instead
            if version >= 11:
                at += 4                              # preferred read replica
            (size,) = INT32.unpack_from(data, at)
            at += 4
            if size > 0 and at + size > len(data):
                raise struct.error("a partition's records run past the end of the answer")
            out.append(PartitionData(partition, code, watermark, log_start,
                                     data[at:at + size] if size > 0 else b""))
            at += max(size, 0)
    return error, out


class FetchRequest(Request):
    """A Fetch of `positions` ({partition: fetch offset}) of one topic, answered at once (max wait
    0), at the version the caller chose; its answer: (top-level error code, [PartitionData])."""

    API_KEY = API_KEY
    name = "Fetch"
    min_version, max_version = LOWEST, HIGHEST

    def __init__(self, version: int, topic: str, positions: dict[int, int],
                 partition_bytes: int, max_bytes: int):
        super().__init__(version)
        self.topic, self.positions = topic, dict(positions)
        self.partition_bytes, self.max_bytes = partition_bytes, max_bytes

    def body(self, version: int) -> list[bytes]:
        out = [struct.pack(">iii", -1, 0, 1), INT32.pack(self.max_bytes)]
        if version >= 4:
            out.append(b"\x00")                     # isolation level: every record
        if version >= 7:
            out.append(struct.pack(">ii", 0, -1))    # no fetch session
        out += [INT32.pack(1), string(self.topic, False), INT32.pack(len(self.positions))]
        for partition, offset in sorted(self.positions.items()):
            out.append(INT32.pack(partition))
            if version >= 9:
                out.append(INT32.pack(-1))
            out.append(INT64.pack(offset))
            if version >= 5:
                out.append(INT64.pack(-1))
            out.append(INT32.pack(self.partition_bytes))
        if version >= 7:
            out.append(INT32.pack(0))
        if version >= 11:
            out.append(string("", False))
        return out

    def decode(self, version: int, body: bytes) -> tuple[int, list[PartitionData]]:
        return decode_answer(version, body)

    def described(self) -> str:
        return f"topic={self.topic}, partitions={len(self.positions)}"
