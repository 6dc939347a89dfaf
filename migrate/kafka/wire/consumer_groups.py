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

from dataclasses import dataclass, field

from migrate.kafka.values import Key
from migrate.kafka.wire.primitives import NO_TAGS, Reader, count, string
from migrate.kafka.wire.request import Request

API_KEY = 69
VERSION = 0


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


class DescribeRequest(Request):
    """ConsumerGroupDescribe v0 of `group_ids`; its answer: [DescribedGroup]."""

    API_KEY = API_KEY
    name = "ConsumerGroupDescribe"
    min_version = max_version = flexible_from = VERSION

    def __init__(self, group_ids: list[str]):
        super().__init__(VERSION)
        self.group_ids = list(group_ids)

    def body(self, version: int) -> list[bytes]:
        return [count(len(self.group_ids), True), *(string(g, True) for g in self.group_ids),
                b"\x00", NO_TAGS]                 # IncludeAuthorizedOperations: false

    def decode(self, version: int, body: bytes) -> list[DescribedGroup]:
        return decode_response(body)

    def described(self) -> str:
        return f"group_ids={self.group_ids}"


def encode_request(group_ids: list[str], correlation_id: int, client_id: str) -> bytes:
    """A framed ConsumerGroupDescribe v0 request (request header v2)."""
    return DescribeRequest(group_ids).encoded(VERSION, correlation_id, client_id)


def decode_response(data: bytes) -> list[DescribedGroup]:
    """The groups of a ConsumerGroupDescribe v0 answer body (after the response header)."""
    src = Reader(data)
    src.int32()   # ThrottleTimeMs
    groups = []
    for _ in range(src.count()):
        error_code, error_message = src.int16(), src.string()
        group_id, state = src.string(), src.string()
        src.take(8)              # GroupEpoch, AssignmentEpoch
        src.string()             # AssignorName
        members = [_member(src) for _ in range(src.count())]
        src.int32()              # AuthorizedOperations
        src.tags()
        groups.append(DescribedGroup(group_id or "", error_code, error_message, state or "",
                                     members))
    src.tags()
    return groups


def _member(src: Reader) -> DescribedMember:
    member_id = src.string() or ""
    src.string()                     # InstanceId
    src.string()                     # RackId
    src.int32()                      # MemberEpoch
    client_id, client_host = src.string() or "", src.string() or ""
    for _ in range(src.count()):     # SubscribedTopicNames
        src.string()
    src.string()                     # SubscribedTopicRegex
    assigned = _assignment(src)
    _assignment(src)                 # TargetAssignment: not yet the member's
    src.tags()
    return DescribedMember(member_id, client_id, client_host, assigned)


def _assignment(src: Reader) -> list[Key]:
    keys = []
    for _ in range(src.count()):
        src.take(16)                 # TopicId
        topic = src.string() or ""
        keys.extend((topic, src.int32()) for _ in range(src.count()))
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
    src = Reader(data, compact=False)
    src.int16()
    keys = []
    for _ in range(src.count()):
        topic = src.string() or ""
        keys.extend((topic, p) for p in src.int32s(src.count()))
    return keys
