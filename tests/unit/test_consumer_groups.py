"""The wire formats of consumer_groups.py against bytes built here field by field from Kafka's schemas:
ConsumerGroupDescribeRequest/Response v0 (flexible: compact strings and arrays, tagged fields) and the
classic ConsumerProtocol assignment (int16 version, [topic, [int32]], user data)."""

from __future__ import annotations

import struct
import uuid

import pytest

from migrate.kafka.members import _assignment
from migrate.kafka.wire import consumer_groups as cg
from migrate.kafka.wire.request import Answer


def compact(text: str | None) -> bytes:
    return b"\x00" if text is None else bytes([len(text.encode()) + 1]) + text.encode()


def array(items: list[bytes]) -> bytes:
    return bytes([len(items) + 1]) + b"".join(items)


NO_TAGS = b"\x00"


def assignment(topics: dict[str, list[int]]) -> bytes:
    parts = [uuid.uuid4().bytes + compact(t) + array([struct.pack(">i", p) for p in ps]) + NO_TAGS
             for t, ps in topics.items()]
    return array(parts) + NO_TAGS


def member(member_id: str, assigned: dict[str, list[int]], target: dict[str, list[int]]) -> bytes:
    return (compact(member_id) + compact(None) + compact("rack-1") + struct.pack(">i", 5)
            + compact("console-consumer") + compact("/127.0.0.1") + array([compact(t) for t in assigned])
            + compact(None) + assignment(assigned) + assignment(target) + NO_TAGS)


def group(group_id: str, state: str, members: list[bytes], error: int = 0, message: str | None = None) -> bytes:
    return (struct.pack(">h", error) + compact(message) + compact(group_id) + compact(state)
            + struct.pack(">ii", 7, 7) + compact("uniform") + array(members) + struct.pack(">i", -2**31) + NO_TAGS)


def test_a_request_is_framed_with_header_v2_and_the_group_ids():
    sent = cg.encode_request(["g1", "g2"], correlation_id=42, client_id="zk2kafka")
    body = (struct.pack(">hhi", 69, 0, 42) + struct.pack(">h", 8) + b"zk2kafka" + NO_TAGS
            + array([compact("g1"), compact("g2")]) + b"\x00" + NO_TAGS)
    assert sent == struct.pack(">i", len(body)) + body


def test_an_answer_gives_each_groups_state_members_and_current_assignment():
    answer = (struct.pack(">i", 0) + array([
        group("live", "Stable", [member("m-1", {"orders": [0, 2]}, {"orders": [0, 2, 4]}),
                                 member("m-2", {"orders": [1], "refunds": [0]}, {})]),
        group("gone", "Dead", [], error=69, message="not a consumer group")]) + NO_TAGS)
    live, gone = cg.decode_response(answer)
    assert (live.group_id, live.state, live.error_code) == ("live", "Stable", 0)
    assert [(m.member_id, m.client_id, m.assigned) for m in live.members] == [
        ("m-1", "console-consumer", [("orders", 0), ("orders", 2)]),      # the target is not the assignment yet
        ("m-2", "console-consumer", [("orders", 1), ("refunds", 0)])]
    assert (gone.error_code, gone.error_message, gone.members) == (69, "not a consumer group", [])


def test_tagged_fields_are_skipped_and_a_short_answer_is_an_error():
    tagged = b"\x01" + b"\x05" + b"\x02" + b"ab"   # one tagged field: tag 5, two bytes
    answer = struct.pack(">i", 0) + array([group("g", "Empty", [])[:-1] + tagged]) + NO_TAGS
    assert [g.state for g in cg.decode_response(answer)] == ["Empty"]
    with pytest.raises(struct.error):
        cg.decode_response(answer[:-6])


def test_a_response_header_v1_is_read_before_the_body():
    class Buffer:   # what kafka-python hands the response class: KafkaBytes' read/seek/tell
        def __init__(self, data):
            self.data, self.at = data, 0

        def read(self, n=None):
            n = len(self.data) - self.at if n is None else n
            self.at += n
            return self.data[self.at - n:self.at]

        def seek(self, at):
            self.at = at

        def tell(self):
            return self.at

    body = struct.pack(">i", 0) + array([group("g", "Assigning", [member("m", {"t": [3]}, {})])]) + NO_TAGS
    buffer = Buffer(struct.pack(">i", 9) + NO_TAGS + body)
    request = cg.DescribeRequest(["g"])
    request.with_header(9)
    answer = request.header.get_response_class()
    assert answer.parse_header(buffer).correlation_id == 9
    (g,) = answer.decode(buffer).value
    assert (g.state, g.members[0].assigned) == ("Assigning", [("t", 3)])


def test_a_classic_assignment_names_its_partitions_whatever_its_version():
    def classic(version: int, topics: dict[str, list[int]], user_data: bytes = b"") -> bytes:
        out = struct.pack(">hi", version, len(topics))
        for t, ps in topics.items():
            out += struct.pack(">h", len(t)) + t.encode()
            out += struct.pack(">i", len(ps)) + struct.pack(f">{len(ps)}i", *ps)
        return out + struct.pack(">i", len(user_data)) + user_data

    raw = classic(3, {"orders": [0, 1], "refunds": [2]}, b"sticky")
    assert cg.classic_assignment(raw) == [("orders", 0), ("orders", 1), ("refunds", 2)]
    assert cg.classic_assignment(b"") == []
    assert _assignment(raw) == _assignment(bytearray(raw)) == cg.classic_assignment(raw)


def test_kafka_pythons_decoded_assignment_is_read_as_the_raw_bytes_are():
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    raw = struct.pack(">hi", 0, 1) + struct.pack(">h", 1) + b"a" + struct.pack(">iii", 2, 0, 3) + struct.pack(">i", -1)
    assert _assignment(ConsumerProtocolAssignment.decode(raw)) == _assignment(raw) == [("a", 0), ("a", 3)]


def test_each_group_is_described_by_the_protocol_that_knows_it(monkeypatch):
    from migrate.kafka import members
    from migrate.kafka.compat import BrokerFeatures

    assignment = struct.pack(">hi", 0, 1) + struct.pack(">h", 1) + b"a" + struct.pack(">iii", 1, 2, -1)
    classic = {"old": {"group_state": "Stable", "protocol_type": "consumer",
                       "members": [{"member_id": "m", "member_assignment": assignment}]},
               "untyped": {"group_state": "Dead", "protocol_type": "", "members": []}}
    asked = []

    def consumer_answer(admin, groups, request_of):
        asked.append(sorted(groups))
        body = struct.pack(">i", 0) + array([group(g, "Reconciling", [member("m", {"b": [0]}, {})]) for g in groups])
        return [Answer(cg.decode_response(body + NO_TAGS))]

    monkeypatch.setattr(members, "describe_groups", lambda admin, features, groups, call: {
        g: classic[g] for g in groups})
    monkeypatch.setattr(members.lib, "send_to_coordinators", consumer_answer)
    kafka4 = BrokerFeatures((4, 1), {cg.API_KEY: (0, 1)})
    found = members.describe(None, kafka4, ["old", "new", "untyped"], {"new": "consumer", "old": "classic"})
    assert found["old"] == members.Members("Stable", 1, {("a", 2): "m"})
    assert found["new"] == members.Members("Reconciling", 1, {("b", 0): "m"}, "consumer")
    # listed without a type (ListGroups before v5) and empty to DescribeGroups: asked again, and live
    assert found["untyped"].live and asked == [["new", "untyped"]]
    # a ZooKeeper-mode 3.9 broker lists the API and answers each group UNSUPPORTED_VERSION: not a consumer group
    monkeypatch.setattr(members.lib, "send_to_coordinators", lambda admin, groups, request_of: [
        Answer(cg.decode_response(struct.pack(">i", 0) + array([group(g, "", [], error=35) for g in groups])
                                  + NO_TAGS))])
    assert members.describe(None, kafka4, ["untyped"])["untyped"] == members.Members("Dead", 0)
    # a broker without ConsumerGroupDescribe is never sent one
    found = members.describe(None, BrokerFeatures((3, 9), {}), ["untyped"])
    assert found["untyped"] == members.Members("Dead", 0) and asked == [["new", "untyped"]]
