"""The records of one partition of a Fetch answer, as the bytes on the wire hold them: record
batches (magic 2, every release since 0.11) and message sets (magic 0 and 1, which Kafka 0.10.2
writes), each checked by its CRC and decompressed where it is compressed.

This is the hot loop of reading `__consumer_offsets`: ten million records a read is ordinary on a
cluster that still runs ZooKeeper-era consumers (docs/performance.md). kafka-python's consumer
builds a Python object per record before any of it can be looked at; here a record is sliced
out of the answer, and only when its key names a group asked for (`groups`: every key of that
topic starts with a version and a group id, docs/design.md), so a record of another group costs
the few varints that step over it.

Written from Kafka's record formats: a batch is base offset int64, length int32, partition
leader epoch int32, magic int8, CRC-32C uint32 (over the rest), attributes int16 (codec in bits
0-2, transactional bit 4, control bit 5), last offset delta int32, base and max timestamps int64,
producer id int64, producer epoch int16, base sequence int32, record count int32, then the
records (compressed as one block when the codec says so): length, attributes int8, timestamp
delta, offset delta, key length, key, value length, value, header count, headers, every number
a zigzag varint and -1 a null. A message (magic 0/1) is offset int64, size int32, CRC-32 uint32,
magic int8, attributes int8, v1 timestamp int64, key and value as int32-length bytes; a
compressed one wraps a message set (magic 1: inner offsets relative, the wrapper's the last).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import NamedTuple

from kafka import codec

from migrate.errors import MigrateError
from migrate.kafka.offsets_log.schema import group_of

try:                                  # the C CRC-32C kafka-python's crc32c extra brings
    from crc32c import crc32c as _crc32c
except ImportError:                   # pragma: no cover - pyproject.toml depends on it
    from kafka.record.util import calc_crc32c as _crc32c

# (offset, key, value): a record kept; key and value are None for a null
Record = tuple[int, "bytes | None", "bytes | None"]

_BATCH = struct.Struct(">qiibIhiqqqhii")
BATCH_HEADER = _BATCH.size            # 61
_MESSAGE = struct.Struct(">qiIbb")     # offset, size, crc, magic, attributes
_LENGTH = struct.Struct(">i")
TRANSACTIONAL, CONTROL = 0x10, 0x20
CODEC_MASK = 0x07
CODECS = {1: ("gzip", codec.has_gzip, codec.gzip_decode),
          2: ("snappy", codec.has_snappy, codec.snappy_decode),
          3: ("lz4", codec.has_lz4, codec.lz4_decode),
          4: ("zstd", codec.has_zstd, codec.zstd_decode)}


class CorruptRecords(MigrateError):
    """Bytes that are not what a batch or message says they are: a CRC that does not match, a
    length past the end, a compression codec this Python cannot undo. Carries the offset."""

    def __init__(self, offset: int, why: str):
        super().__init__(f"at offset {offset}: {why}")
        self.offset = offset


class Batch(NamedTuple):
    """One record batch (or message) as the reader needs it: where it starts and ends in the
    log, its newest timestamp (the appending broker's clock for `__consumer_offsets`, ms; -1
    none), its producer (-1 none), whether it is transactional or a control batch (a
    transaction's marker), the records kept of it, and how many records it holds: the log
    cleaner keeps a batch's offsets and removes records from it, so fewer than its offsets span
    tell a compacted log."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    producer_id: int
    transactional: bool
    control: bool
    records: list[Record]
    count: int = 1


def batches(data: bytes, groups: frozenset[bytes] | None = None) -> Iterator[Batch]:
    """The whole batches (and messages) of `data`, a Fetch answer's records of one partition, in
    log order. Only the records whose key names one of `groups` (a group id's UTF-8 bytes; None:
    every record) are kept; a control batch's records always are. A batch cut off at the end of
    `data` (the answer's size limit) is left for the next fetch.

    Raises CorruptRecords.
    """
    pos, end = 0, len(data)
    while pos + 17 <= end:
        length = _LENGTH.unpack_from(data, pos + 8)[0]
        stop = pos + 12 + length
        if stop > end:
            return
        magic = data[pos + 16]
        if magic == 2:
            yield _batch(data, pos, stop, groups)
        elif magic in (0, 1):
            yield from _messages(data, pos, stop, groups)
        else:
            raise CorruptRecords(_offset(data, pos), f"unknown magic {magic}")
        pos = stop


def _offset(data, pos: int) -> int:
    return struct.unpack_from(">q", data, pos)[0]


def _batch(data, pos: int, stop: int, groups: frozenset[bytes] | None) -> Batch:
    (base, _, _, _, crc, attributes, last_delta, _, max_ts, producer, _, _,
     count) = _BATCH.unpack_from(data, pos)
    if stop - pos < BATCH_HEADER:
        raise CorruptRecords(base, "a record batch shorter than its header")
    if _crc32c(memoryview(data)[pos + 21:stop]) != crc:
        raise CorruptRecords(base, "the record batch's CRC-32C does not match its bytes")
    control = bool(attributes & CONTROL)
    body, at = data, pos + BATCH_HEADER
    if attributes & CODEC_MASK:
        body, at = _decompress(attributes & CODEC_MASK, data[at:stop], base), 0
        stop = len(body)
    records = _records(body, at, stop, base, count, None if control else groups)
    return Batch(base, base + last_delta, max_ts, producer, bool(attributes & TRANSACTIONAL),
                 control, records, count)


def _records(data, p: int, stop: int, base: int, count: int,
             groups: frozenset[bytes] | None) -> list[Record]:
    """The kept records of a batch's (uncompressed) record bytes from `p`. Inlined varints: this
    loop is where a read of `__consumer_offsets` spends its time."""
    kept: list[Record] = []
    try:
        for _ in range(count):
            # length (zigzag varint)
            b = data[p]
            p += 1
            if b < 0x80:
                n = b
            else:
                n, shift = b & 0x7F, 7
                while True:
                    b = data[p]
                    p += 1
                    n |= (b & 0x7F) << shift
                    if b < 0x80:
                        break
                    shift += 7
            following = p + (n >> 1)
            q = p + 1                               # past the attributes
            while data[q] & 0x80:                   # timestamp delta
                q += 1
            q += 1
            b = data[q]                             # offset delta
            q += 1
            if b < 0x80:
                delta = b
            else:
                delta, shift = b & 0x7F, 7
                while True:
                    b = data[q]
                    q += 1
                    delta |= (b & 0x7F) << shift
                    if b < 0x80:
                        break
                    shift += 7
            b = data[q]                             # key length
            q += 1
            if b < 0x80:
                n = b
            else:
                n, shift = b & 0x7F, 7
                while True:
                    b = data[q]
                    q += 1
                    n |= (b & 0x7F) << shift
                    if b < 0x80:
                        break
                    shift += 7
            if n & 1:                               # -1: a null key, which no group names
                key = None
                if groups is not None:
                    p = following
                    continue
            else:
                n >>= 1
                # the key's group id, sliced as schema.group_of slices it (inline: the hot loop)
                if groups is not None and data[q + 4:q + 4 + (
                        (data[q + 2] << 8) | data[q + 3])] not in groups:
                    p = following
                    continue
                key = data[q:q + n]
                q += n
            b = data[q]                             # value length
            q += 1
            if b < 0x80:
                n = b
            else:
                n, shift = b & 0x7F, 7
                while True:
                    b = data[q]
                    q += 1
                    n |= (b & 0x7F) << shift
                    if b < 0x80:
                        break
                    shift += 7
            value = None if n & 1 else data[q:q + (n >> 1)]
            kept.append((base + (delta >> 1), key, value))
            p = following
    except IndexError:
        raise CorruptRecords(base, "a record runs past the end of its batch") from None
    if p > stop:
        raise CorruptRecords(base, "a record runs past the end of its batch")
    return kept


def _messages(data, pos: int, stop: int, groups: frozenset[bytes] | None,
              depth: int = 0) -> Iterator[Batch]:
    """A message (magic 0 or 1) as a batch of one, or the messages a compressed one wraps."""
    offset, _, crc, magic, attributes = _MESSAGE.unpack_from(data, pos)
    if zlib.crc32(memoryview(data)[pos + 16:stop]) != crc:
        raise CorruptRecords(offset, "the message's CRC-32 does not match its bytes")
    at = pos + 18
    timestamp = -1
    if magic == 1:
        timestamp = struct.unpack_from(">q", data, at)[0]
        at += 8
    key, at = _sized(data, at, offset)
    value, at = _sized(data, at, offset)
    if not attributes & CODEC_MASK:
        kept = groups is None or (key is not None and len(key) >= 4 and group_of(key) in groups)
        yield Batch(offset, offset, timestamp, -1, False, False,
                    [(offset, key, value)] if kept else [])
        return
    if depth or value is None:
        raise CorruptRecords(offset, "a compressed message inside a compressed message")
    inner = _decompress(attributes & CODEC_MASK, value, offset)
    wrapped = []
    at = 0
    while at + 12 <= len(inner):
        size = _LENGTH.unpack_from(inner, at + 8)[0]
        wrapped.extend(_messages(inner, at, at + 12 + size, groups, depth + 1))
        at += 12 + size
    # magic 1: inner offsets count from 0, the wrapper carries the last one's
    shift = offset - wrapped[-1].last_offset if magic == 1 and wrapped else 0
    for b in wrapped:
        yield b._replace(base_offset=b.base_offset + shift, last_offset=b.last_offset + shift,
                         records=[(o + shift, k, v) for o, k, v in b.records],
                         max_timestamp=b.max_timestamp if b.max_timestamp >= 0 else timestamp)


def _sized(data, at: int, offset: int) -> tuple[bytes | None, int]:
    n = _LENGTH.unpack_from(data, at)[0]
    at += 4
    if n < 0:
        return None, at
    if at + n > len(data):
        raise CorruptRecords(offset, "a message's key or value runs past its end")
    return data[at:at + n], at + n


def _decompress(codec_id: int, payload: bytes, offset: int) -> bytes:
    name, available, decode = CODECS.get(codec_id, (f"codec {codec_id}", lambda: False, None))
    if not available():
        raise CorruptRecords(offset, f"compressed with {name}, which this Python cannot "
                                     f"decompress (install kafka-python's {name} extra)")
    return decode(payload)
