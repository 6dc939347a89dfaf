"""A stand-in for kafka-python's admin as the writer's codec path uses it (unit tests of pure logic):
each group's coordinator found at once, and each OffsetCommit or OffsetFetch answered with a response
that kafka-python's own classes built, read back through kafka-python's protocol parser and the
request's own decoding, as on a connection."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace

from kafka.protocol.broker_version_data import BrokerVersionData
from kafka.protocol.consumer.group import OffsetCommitResponse, OffsetFetchResponse
from kafka.protocol.parser import KafkaProtocol


class CodecAdmin:
    """`answer(request)` gives the kafka-python response object for each request sent; `version` is the
    highest OffsetCommit and OffsetFetch the broker announces (8: Kafka 3.0+, 7: 2.5-2.8, ...)."""

    def __init__(self, answer: Callable, version: int = 8):
        self.answer, self.sent = answer, []
        versions = BrokerVersionData(broker_version=(3, 9), api_versions={8: (0, 8), 9: (0, version)})
        self._manager = SimpleNamespace(broker_version_data=versions, send=self._send,
                                        cluster=SimpleNamespace(_coordinators={}),
                                        run=lambda coro, *args: asyncio.run(coro(*args)),
                                        call_soon=lambda coro, *args: asyncio.ensure_future(coro(*args)))
        self.config = {"max_in_flight_requests_per_connection": 5}

    async def _find_coordinator_id(self, group):
        return 1

    async def _find_coordinator_ids(self, groups):
        return dict.fromkeys(groups, 1)

    async def _send(self, request, node_id):
        parser = KafkaProtocol(client_id="zk2kafka")
        request.API_VERSION = self._manager.broker_version_data.api_version(request)
        correlation_id = parser.send_request(request)
        self.sent.append(request)
        response = self.answer(request)
        response.with_header(correlation_id=correlation_id)
        ((_, decoded),) = parser.receive_bytes(response.encode(header=True, framed=True))
        return decoded


def commit_answer(request, error: int = 0) -> OffsetCommitResponse:
    """Every partition of an OffsetCommit answered with `error`."""
    T = OffsetCommitResponse.OffsetCommitResponseTopic
    topics: dict[str, list] = {}
    for topic, partition in request.offsets:
        topics.setdefault(topic, []).append(T.OffsetCommitResponsePartition(partition_index=partition,
                                                                           error_code=error))
    return OffsetCommitResponse(throttle_time_ms=0, topics=[T(name=t, partitions=p) for t, p in topics.items()],
                                version=request.API_VERSION)


def fetch_answer(request, held: dict[str, dict], errors: dict[str, int] = {}) -> OffsetFetchResponse:
    """An OffsetFetch answered with `held` ({group: {(topic, partition): (offset, metadata, error)}}) and a
    group-level error where `errors` names one."""
    version = request.API_VERSION
    if version >= 8:
        G = OffsetFetchResponse.OffsetFetchResponseGroup
        T, P = G.OffsetFetchResponseTopics, G.OffsetFetchResponseTopics.OffsetFetchResponsePartitions
    else:
        T = OffsetFetchResponse.OffsetFetchResponseTopic
        P = T.OffsetFetchResponsePartition

    def topics(group):
        by_topic: dict[str, list] = {}
        for (topic, partition), (offset, metadata, error) in held.get(group, {}).items():
            by_topic.setdefault(topic, []).append(P(partition_index=partition, committed_offset=offset,
                                                    committed_leader_epoch=-1, metadata=metadata, error_code=error))
        return [T(name=t, partitions=p) for t, p in by_topic.items()]

    if version >= 8:
        return OffsetFetchResponse(throttle_time_ms=0, version=version, groups=[
            G(group_id=g, topics=topics(g), error_code=errors.get(g, 0)) for g in request.groups])
    (group,) = request.groups
    return OffsetFetchResponse(throttle_time_ms=0, topics=topics(group), error_code=errors.get(group, 0),
                               version=version)
