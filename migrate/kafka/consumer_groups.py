"""ConsumerGroupDescribe (API key 69, Kafka 4.0+, KIP-848) and the classic ConsumerProtocol
assignment: the two wire formats that tell which partitions a live group's members hold.

A group whose consumers use the new rebalance protocol (`group.protocol=consumer`) is a
`consumer`-type group: the classic DescribeGroups answers it as Dead with no members (v0-v5) or
GROUP_ID_NOT_FOUND (v6), and only ConsumerGroupDescribe tells its state, members and their
assignments. kafka-python 3.0 has no class for it, so the request is encoded here, by the schema
of Kafka's ConsumerGroupDescribeRequest/Response v0 as released in 4.x (an Assignment is its
topic-partitions and tagged fields), and sent on kafka-python's own connection.

Flexible encoding throughout: compact strings and arrays (unsigned varint length + 1), UUIDs as
16 bytes, and an (empty here) tagged-field section after each struct and the headers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

API_KEY = 69
VERSION = 0
Key = tuple[str, int]


class _Out:
    """Bytes of a flexible message, written field by field."""

    def __init__(self):
        self.parts: list[bytes] = []

    def fixed(self, fmt: str, *values) -> None:
        self.parts.append(struct.pack(">" + fmt, *values))

    def varint(self, value: int) -> None:
        out = bytearray()
        while value > 0x7F:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
        self.parts.append(bytes(out))

    def string(self, value: str | None) -> None:
        """A compact (nullable) string."""
        if value is None:
            self.varint(0)
            return
        data = value.encode()
        self.varint(len(data) + 1)
        self.parts.append(data)

    def raw(self, data: bytes) -> None:
        self.parts.append(data)

    def no_tags(self) -> None:
        self.varint(0)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class WireReader:
    """Reads a Kafka message field by field (flexible or not); a short buffer raises struct.error.
    Also what group_records.py reads `__consumer_offsets` records with."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def fixed(self, fmt: str):
        values = struct.unpack_from(">" + fmt, self.data, self.at)
        self.at += struct.calcsize(">" + fmt)
        return values[0] if len(values) == 1 else values

    def varint(self) -> int:
        value = shift = 0
        while True:
            if self.at >= len(self.data):
                raise struct.error("varint runs past the end of the answer")
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

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

    def string(self, compact: bool = True) -> str | None:
        """A compact string (varint length + 1), else a classic one (int16 length); -1: null."""
        n = self.varint() - 1 if compact else self.fixed("h")
        return None if n < 0 else self.take(n).decode()

    def count(self) -> int:
        """A compact array's length (a null array reads as empty)."""
        return max(0, self.varint() - 1)

    def tags(self) -> None:
        """Skip a tagged-field section: zk2kafka reads none of them."""
        for _ in range(self.varint()):
            self.varint()
            self.take(self.varint())


@dataclass
class DescribedMember:
    member_id: str
    client_id: str
    client_host: str
    assigned: list[Key] = field(default_factory=list)


@dataclass
class DescribedGroup:
    """One group of a ConsumerGroupDescribe answer."""

    group_id: str
    error_code: int
    error_message: str | None
    state: str
    members: list[DescribedMember] = field(default_factory=list)


def encode_request(group_ids: list[str], correlation_id: int, client_id: str) -> bytes:
    """A framed ConsumerGroupDescribe v0 request (request header v2)."""
    out = _Out()
    out.fixed("hhi", API_KEY, VERSION, correlation_id)
    data = client_id.encode()
    out.fixed("h", len(data))   # the header's client id is a classic (int16-length) string
    out.raw(data)
    out.no_tags()
    out.varint(len(group_ids) + 1)
    for group in group_ids:
        out.string(group)
    out.fixed("?", False)       # IncludeAuthorizedOperations
    out.no_tags()
    body = out.bytes()
    return struct.pack(">i", len(body)) + body


def decode_response(data: bytes) -> list[DescribedGroup]:
    """The groups of a ConsumerGroupDescribe v0 answer body (after the response header)."""
    src = WireReader(data)
    src.fixed("i")   # ThrottleTimeMs
    groups = []
    for _ in range(src.count()):
        error_code, error_message = src.fixed("h"), src.string()
        group_id, state = src.string(), src.string()
        src.fixed("ii")          # GroupEpoch, AssignmentEpoch
        src.string()             # AssignorName
        members = [_member(src) for _ in range(src.count())]
        src.fixed("i")           # AuthorizedOperations
        src.tags()
        groups.append(DescribedGroup(group_id or "", error_code, error_message, state or "",
                                     members))
    src.tags()
    return groups


def _member(src: WireReader) -> DescribedMember:
    member_id = src.string() or ""
    src.string()                     # InstanceId
    src.string()                     # RackId
    src.fixed("i")                   # MemberEpoch
    client_id, client_host = src.string() or "", src.string() or ""
    for _ in range(src.count()):     # SubscribedTopicNames
        src.string()
    src.string()                     # SubscribedTopicRegex
    assigned = _assignment(src)
    _assignment(src)                 # TargetAssignment: not yet the member's
    src.tags()
    return DescribedMember(member_id, client_id, client_host, assigned)


def _assignment(src: WireReader) -> list[Key]:
    keys = []
    for _ in range(src.count()):
        src.take(16)                 # TopicId
        topic = src.string() or ""
        keys.extend((topic, src.fixed("i")) for _ in range(src.count()))
        src.tags()
    src.tags()
    return keys


def classic_assignment(data: bytes) -> list[Key]:
    """The partitions in a classic consumer's assignment (a DescribeGroups member's
    member_assignment under the `consumer` protocol type): version int16, an array of (topic
    string, int32 partition array), user data bytes; every version has that prefix.
    Non-flexible: int16-length strings, int32-length arrays."""
    if not data:
        return []
    src = WireReader(data)
    src.fixed("h")
    keys = []
    for _ in range(max(0, src.fixed("i"))):
        topic = src.string(compact=False) or ""
        keys.extend((topic, p) for p in src.int32s(max(0, src.fixed("i"))))
    return keys


class DescribeRequest:
    """A ConsumerGroupDescribe v0 request as kafka-python's connection sends one: it frames the
    request with `encode`, and decodes the answer with the class `header.get_response_class()`
    names."""

    API_KEY = API_KEY
    API_VERSION = VERSION

    def __init__(self, group_ids: list[str]):
        self.group_ids = list(group_ids)
        self.header: _Header | None = None

    def with_header(self, correlation_id: int = 0, client_id: str = "zk2kafka") -> None:
        self.header = _Header(correlation_id, client_id)

    def encode(self, framed: bool = True, header: bool = True) -> bytes:
        assert framed and header and self.header is not None, "sent only by a connection"
        return encode_request(self.group_ids, self.header.correlation_id, self.header.client_id)

    def expect_response(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"ConsumerGroupDescribeRequest_v0(group_ids={self.group_ids})"


@dataclass
class _Header:
    correlation_id: int
    client_id: str
    request_api_key: int = API_KEY
    request_api_version: int = VERSION

    # kafka-python logs these two of a header it cannot match
    api_key = API_KEY
    api_version = VERSION

    def get_response_class(self):
        return DescribeResponse


@dataclass
class _ResponseHeader:
    correlation_id: int


class DescribeResponse:
    """The decoded answer: `groups`, each a DescribedGroup."""

    def __init__(self, groups: list[DescribedGroup]):
        self.groups = groups

    @staticmethod
    def parse_header(buffer) -> _ResponseHeader:
        head = WireReader(buffer.read(4))
        header = _ResponseHeader(head.fixed("i"))
        tags = WireReader(buffer.read())
        tags.tags()   # response header v1: tagged fields after the correlation id
        buffer.seek(buffer.tell() - (len(tags.data) - tags.at))
        return header

    @classmethod
    def decode(cls, buffer) -> DescribeResponse:
        return cls(decode_response(buffer.read()))
