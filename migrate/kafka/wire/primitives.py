"""The bytes of Kafka's protocol, once: the compiled structs, one reader, the unsigned varint both
ways, and a string and an array's length as each encoding writes them. Every codec of `wire/` and
the record schema of `offsets_log/` read and write with these.

Two encodings run through the protocol. Classic: an int16-length string and an int32-length
array (-1: null). Flexible (KIP-482): a compact string or array, its length + 1 as an unsigned
varint (0: null), and a tagged-field section (a count, then each tag and its bytes) after each
struct and header. The reader and the writing functions are told which of the two they speak.
"""

from __future__ import annotations

import struct

INT16, INT32, INT64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
NO_TAGS = b"\x00"    # an empty tagged-field section


def uvarint(value: int) -> bytes:
    """`value` as an unsigned varint (seven bits a byte, low bits first)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def uvarint_at(data: bytes, at: int) -> tuple[int, int]:
    """The unsigned varint at `at` in `data`, and where the next field starts. Raises struct.error
    on one that runs past the end."""
    value = shift = 0
    while at < len(data):
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
    raise struct.error("varint runs past the end of the answer")


class Reader:
    """A message read field by field, classic or flexible (`compact`); a short buffer raises
    struct.error."""

    __slots__ = ("data", "at", "compact")

    def __init__(self, data: bytes, compact: bool = True):
        self.data, self.at, self.compact = data, 0, compact

    def uvarint(self) -> int:
        value, self.at = uvarint_at(self.data, self.at)
        return value

    def fixed(self, form: struct.Struct) -> tuple:
        """The fields of `form` (a compiled struct) at the reader's position."""
        values = form.unpack_from(self.data, self.at)
        self.at += form.size
        return values

    def int16(self) -> int:
        return self.fixed(INT16)[0]

    def int32(self) -> int:
        return self.fixed(INT32)[0]

    def int64(self) -> int:
        return self.fixed(INT64)[0]

    def int32s(self, n: int) -> tuple[int, ...]:
        """`n` int32s in a row, in one unpack (an assignment's partitions: a hundred or more)."""
        values = struct.unpack_from(f">{n}i", self.data, self.at)
        self.at += 4 * n
        return values

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise struct.error(f"{n} bytes run past the end of the answer")
        self.at += n
        return self.data[self.at - n:self.at]

    def _length(self) -> int:
        return self.uvarint() - 1 if self.compact else self.int16()

    def string(self) -> str | None:
        """A string of the reader's encoding; None for null."""
        n = self._length()
        return None if n < 0 else self.take(n).decode()

    def bytes(self) -> bytes | None:
        """Bytes of the reader's encoding (an int32 length when classic); None for null."""
        n = self.uvarint() - 1 if self.compact else self.int32()
        return None if n < 0 else self.take(n)

    def count(self) -> int:
        """An array's length (a null array reads as empty)."""
        return max(0, self.uvarint() - 1 if self.compact else self.int32())

    def tags(self) -> None:
        """Skip a tagged-field section (flexible only): zk2kafka reads none of them."""
        if self.compact:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.take(self.uvarint())


def string(value: str | None, compact: bool) -> bytes:
    """A string as `compact` (flexible) or classic encoding writes it."""
    if value is None:
        return b"\x00" if compact else b"\xff\xff"
    data = value.encode()
    return (uvarint(len(data) + 1) if compact else INT16.pack(len(data))) + data


def count(n: int, compact: bool) -> bytes:
    """An array's length as `compact` (flexible) or classic encoding writes it."""
    return uvarint(n + 1) if compact else INT32.pack(n)
