"""OffsetCommit (API key 8): the request that writes a group's offsets from outside the group,
encoded here and its answer decoded here, sent on kafka-python's own connection (request.py).
Every commit zk2kafka makes goes through it: `migrate`, `sync`, `renew` and `rollback`.

Written from the schemas of Kafka's OffsetCommitRequest/Response. The versions are those
kafka-python's admin negotiates, so that the bytes on the wire are the same as its own
(tests/unit/test_offset_codec.py compares them byte for byte): the highest version both ends
know, at most v8 (kafka-python's own cap; v9 names topics by id), at least v2. The supported
releases land on: 0.10.2 v2, 1.1 v3, 2.4 and later v8. v8 is flexible.

- Request: group, generation -1, member "", v7+ group instance null, v2-v4 retention -1,
  topics [name, partitions [index, offset, v6+ leader epoch -1, metadata]].
- Answer: v3+ throttle time, topics [name, partitions [index, error]].
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from migrate.kafka.values import Key
from migrate.kafka.wire.primitives import INT32, INT64, Reader, count, string
from migrate.kafka.wire.request import Request

API_KEY = 8
LOWEST, HIGHEST = 2, 8
FLEXIBLE = 8    # the first flexible version (compact strings, tagged fields)

_ih, _iq = struct.Struct(">ih"), struct.Struct(">iq")
_MINUS_ONE_I, _MINUS_ONE_Q = INT32.pack(-1), INT64.pack(-1)


class OffsetCommitRequest(Request):
    """OffsetCommit of one group's offsets, each with `metadata`, from outside the group
    (generation -1, no member id); topics in the order they first appear. Its answer:
    {(topic, partition): error code}."""

    API_KEY = API_KEY
    name = "OffsetCommit"
    min_version, max_version, flexible_from = LOWEST, HIGHEST, FLEXIBLE
    throttle_from = 3

    def __init__(self, group: str, offsets: Mapping[Key, int], metadata: str):
        super().__init__()
        self.group, self.offsets, self.metadata = group, offsets, metadata

    def body(self, version: int) -> list[bytes]:
        compact = self.flexible(version)
        tags = b"\x00" if compact else b""
        parts = [string(self.group, compact), _MINUS_ONE_I, string("", compact)]
        if version >= 7:
            parts.append(string(None, compact))      # GroupInstanceId
        if 2 <= version <= 4:
            parts.append(_MINUS_ONE_Q)                # RetentionTimeMs: the broker's setting
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in self.offsets.items():
            by_topic.setdefault(topic, []).append((partition, offset))
        tail = string(self.metadata, compact) + tags
        if version >= 6:
            tail = _MINUS_ONE_I + tail                # CommittedLeaderEpoch: none known
        parts.append(count(len(by_topic), compact))
        pack = _iq.pack
        for topic, partitions in by_topic.items():
            parts.append(string(topic, compact))
            parts.append(count(len(partitions), compact))
            parts.extend(pack(partition, offset) + tail for partition, offset in partitions)
            parts.append(tags)
        parts.append(tags)
        return parts

    def decode(self, version: int, body: bytes) -> dict[Key, int]:
        return decode_commit(version, body)

    def described(self) -> str:
        return f"group_id={self.group!r}, {len(self.offsets)} offsets"


def encode_commit(version: int, correlation_id: int, client_id: str, group: str,
                  offsets: Mapping[Key, int], metadata: str) -> bytes:
    """A framed OffsetCommit request of `version`."""
    return OffsetCommitRequest(group, offsets, metadata).encoded(version, correlation_id,
                                                                 client_id)


def decode_commit(version: int, body: bytes) -> dict[Key, int]:
    """An OffsetCommit answer (after its header): each partition's error code."""
    src = Reader(body, version >= FLEXIBLE)
    if version >= 3:
        src.int32()                               # ThrottleTimeMs
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
