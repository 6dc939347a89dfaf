"""The OffsetCommit and OffsetFetch codecs (migrate/kafka/wire/) against kafka-python's own encoding: every request
byte for byte, every answer that kafka-python's response classes build read back, at each version the supported
releases negotiate, through kafka-python's own protocol parser (the real brokers: the compat and sync integration
tests)."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaProtocolError
from kafka.protocol.api_key import ApiKey
from kafka.protocol.broker_version_data import BrokerVersionData
from kafka.protocol.consumer.group import OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse
from kafka.protocol.parser import KafkaProtocol
from kafka.structs import OffsetAndMetadata, TopicPartition

from migrate.kafka.values import Committed
from migrate.kafka.wire import offset_commit, offset_fetch
from migrate.kafka.wire.offset_commit import OffsetCommitRequest, encode_commit
from migrate.kafka.wire.offset_fetch import OffsetFetchRequest as OurFetchRequest, encode_fetch

VERSIONS = range(offset_commit.LOWEST, offset_commit.HIGHEST + 1)
# What each supported release announces for OffsetCommit and OffsetFetch (ApiVersions), and the
# versions kafka-python's admin then sends: 0.10.2, 1.1, 2.4, 2.8, 3.9 (ZooKeeper mode), 4.1 (KRaft).
RELEASES = {
    "0.10.2": ({8: (0, 2), 9: (0, 2)}, (2, 2)),
    "1.1": ({8: (0, 3), 9: (0, 3)}, (3, 3)),
    "2.4": ({8: (0, 8), 9: (0, 6)}, (8, 6)),
    "2.8": ({8: (0, 8), 9: (0, 7)}, (8, 7)),
    "3.9": ({8: (0, 9), 9: (0, 9)}, (8, 8)),
    "4.1": ({8: (2, 10), 9: (1, 10)}, (8, 8)),
}
# A group name past 127 bytes: its compact length takes two varint bytes.
LONG = "g" * 200
OFFSETS = {("orders", 0): 12, ("orders", 3): 2**40, ("päyments", 1): 0, (LONG, 7): 5}


def kafka_python_commit(version: int, group: str, offsets: dict, metadata: str) -> bytes:
    """The request kafka-python's admin sends for alter_group_offsets, at `version`."""
    request = KafkaAdminClient._alter_group_offsets_request(
        group, {TopicPartition(t, p): OffsetAndMetadata(o, metadata, -1) for (t, p), o in offsets.items()})
    request.API_VERSION = version
    request.with_header(correlation_id=41, client_id="zk2kafka")
    return request.encode(framed=True, header=True)


def kafka_python_fetch(version: int, groups: list[str]) -> list[bytes]:
    """The requests kafka-python's admin sends for list_group_offsets({g: None, ...}) to a broker
    whose highest OffsetFetch is `version`."""
    admin = SimpleNamespace(_manager=SimpleNamespace(broker_version_data=BrokerVersionData(
        broker_version=(3, 0), api_versions={int(ApiKey.OffsetFetch): (0, version)})))
    out = []
    for _, request in KafkaAdminClient._list_group_offsets_requests(admin, {g: None for g in groups}):
        request.API_VERSION = version
        request.with_header(correlation_id=41, client_id="zk2kafka")
        out.append(request.encode(framed=True, header=True))
    return out


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("metadata", ["", "zk2kafka run 1f2e", "ü" * 300])
def test_offset_commit_is_kafka_pythons_byte_for_byte(version, metadata):
    for group in ("group-a", LONG):
        assert encode_commit(version, 41, "zk2kafka", group, OFFSETS, metadata) == \
            kafka_python_commit(version, group, OFFSETS, metadata)


@pytest.mark.parametrize("version", VERSIONS)
def test_offset_fetch_is_kafka_pythons_byte_for_byte(version):
    groups = ["group-a", LONG, "c"] if version >= 8 else ["group-a"]
    ours = [encode_fetch(version, 41, "zk2kafka", groups)] if version >= 8 else \
        [encode_fetch(version, 41, "zk2kafka", [g]) for g in groups]
    assert ours == kafka_python_fetch(version, groups)
    if version < 8:
        with pytest.raises(ValueError, match="asks for one group"):
            encode_fetch(version, 41, "zk2kafka", ["a", "b"])


def test_versions_outside_those_negotiated_are_refused():
    for version in (0, 1, 9):
        with pytest.raises(ValueError, match="writes v2-v8"):
            encode_commit(version, 1, "x", "g", OFFSETS, "")
        with pytest.raises(ValueError, match="writes v2-v8"):
            encode_fetch(version, 1, "x", ["g"])


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_negotiates_the_version_kafka_python_would(release):
    announced, (commit, fetch) = RELEASES[release]
    versions = BrokerVersionData(broker_version=(3, 0), api_versions=announced)
    theirs_commit = KafkaAdminClient._alter_group_offsets_request(
        "g", {TopicPartition("t", 0): OffsetAndMetadata(1, "", -1)})
    theirs_fetch = OffsetFetchRequest(group_id="g", topics=None, min_version=2, max_version=8)
    assert versions.api_version(OffsetCommitRequest("g", {("t", 0): 1}, "")) == \
        versions.api_version(theirs_commit) == commit
    assert versions.api_version(OurFetchRequest(["g"])) == versions.api_version(theirs_fetch) == fetch


def exchange(request, response, version: int):
    """`request` sent through kafka-python's protocol parser, and `response` (a kafka-python
    response object) received for it: what the parser hands the connection's future."""
    parser = KafkaProtocol(client_id="zk2kafka")
    request.API_VERSION = version
    correlation_id = parser.send_request(request)
    sent = parser.send_bytes()
    assert struct.unpack(">hhi", sent[4:12]) == (request.API_KEY, version, correlation_id)
    response.with_header(correlation_id=correlation_id)
    ((got_id, answer),) = parser.receive_bytes(response.encode(header=True, framed=True))
    assert got_id == correlation_id
    return answer


@pytest.mark.parametrize("version", VERSIONS)
def test_offset_commit_answers_read_back(version):
    P = OffsetCommitResponse.OffsetCommitResponseTopic.OffsetCommitResponsePartition
    T = OffsetCommitResponse.OffsetCommitResponseTopic
    response = OffsetCommitResponse(throttle_time_ms=250, topics=[
        T(name="orders", partitions=[P(partition_index=0, error_code=0), P(partition_index=3, error_code=25)]),
        T(name=LONG, partitions=[P(partition_index=7, error_code=0)])], version=version)
    answer = exchange(OffsetCommitRequest("g", OFFSETS, ""), response, version)
    assert answer.value == {("orders", 0): 0, ("orders", 3): 25, (LONG, 7): 0}
    assert answer.throttle_time_ms == (250 if version >= 3 else 0)


def fetch_topics(cls, epochs: bool):
    P = getattr(cls, [n for n in dir(cls) if n.startswith("OffsetFetchResponsePartition")][0])
    return [cls(name="orders", partitions=[
                P(partition_index=0, committed_offset=12, committed_leader_epoch=4 if epochs else -1,
                  metadata="zk2kafka", error_code=0),
                P(partition_index=3, committed_offset=2**40, committed_leader_epoch=-1, metadata=None,
                  error_code=0)]),
            cls(name="päyments", partitions=[
                P(partition_index=1, committed_offset=-1, committed_leader_epoch=-1, metadata="ü" * 300,
                  error_code=0)])]


EXPECTED = {("orders", 0): (12, "zk2kafka"), ("orders", 3): (2**40, None), ("päyments", 1): (-1, "ü" * 300)}


@pytest.mark.parametrize("version", range(offset_fetch.LOWEST, 8))
def test_offset_fetch_answers_of_one_group_read_back(version):
    topics = fetch_topics(OffsetFetchResponse.OffsetFetchResponseTopic, version >= 5)
    answer = exchange(OurFetchRequest(["g"]),
                      OffsetFetchResponse(throttle_time_ms=9, topics=topics, error_code=0, version=version), version)
    assert answer.value == {"g": (0, None, EXPECTED)}
    assert all(isinstance(held, Committed) for held in answer.value["g"].offsets.values())
    # The group's error, or else its first refused partition's, with the partition named.
    refused = OffsetFetchResponse(throttle_time_ms=0, topics=[], error_code=16, version=version)
    assert exchange(OurFetchRequest(["g"]), refused, version).value == {"g": (16, None, {})}
    topics[1].partitions[0].error_code = 29
    partly = OffsetFetchResponse(throttle_time_ms=0, topics=topics, error_code=0, version=version)
    assert exchange(OurFetchRequest(["g"]), partly, version).value["g"][:2] == (29, ("päyments", 1))


def test_offset_fetch_answers_of_many_groups_read_back():
    G = OffsetFetchResponse.OffsetFetchResponseGroup
    topics = fetch_topics(G.OffsetFetchResponseTopics, True)
    refused = fetch_topics(G.OffsetFetchResponseTopics, True)
    refused[0].partitions[1].error_code = 86
    response = OffsetFetchResponse(throttle_time_ms=3, groups=[
        G(group_id="a", topics=topics, error_code=0), G(group_id=LONG, topics=[], error_code=15),
        G(group_id="c", topics=refused, error_code=0), G(group_id="empty", topics=[], error_code=0)], version=8)
    answer = exchange(OurFetchRequest(["a", LONG, "c", "empty"]), response, 8)
    assert answer.value == {"a": (0, None, EXPECTED), LONG: (15, None, {}),
                            "c": (86, ("orders", 3), EXPECTED), "empty": (0, None, {})}
    assert answer.throttle_time_ms == 3


def test_a_short_answer_is_kafka_pythons_protocol_error():
    parser = KafkaProtocol(client_id="zk2kafka")
    request = OurFetchRequest(["g"])
    request.API_VERSION = 8
    correlation_id = parser.send_request(request)
    response = OffsetFetchResponse(throttle_time_ms=0, groups=[OffsetFetchResponse.OffsetFetchResponseGroup(
        group_id="g", topics=fetch_topics(OffsetFetchResponse.OffsetFetchResponseGroup.OffsetFetchResponseTopics,
                                          True), error_code=0)], version=8)
    response.with_header(correlation_id=correlation_id)
    data = response.encode(header=True, framed=False)[:-9]
    with pytest.raises(KafkaProtocolError):
        parser.receive_bytes(struct.pack(">i", len(data)) + data)
