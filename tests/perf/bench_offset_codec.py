"""Benchmark: the CPU of the two requests sync sends per group and pass, OffsetCommit and
OffsetFetch, built, framed, and their answers read, by kafka-python's protocol objects (its admin's
own calls) and by zk2kafka's own codecs (migrate/kafka/wire/offset_commit.py, offset_fetch.py).

    python tests/perf/bench_offset_codec.py                     # v8, 10 partitions a group
    python tests/perf/bench_offset_codec.py --version 3 --partitions 100

Each round goes through kafka-python's own protocol parser (KafkaProtocol: the request queued
and framed, the answer's frame read and matched to it), as on a connection, without the network:
the answer is built and encoded once, beforehand, by kafka-python's response classes. CPU time (time.process_time), so a
busy machine slows it less than wall time would; the best of `--repeat` runs. Prints µs per group.
"""

from __future__ import annotations

import argparse
import sys
import time
from types import SimpleNamespace

from kafka.admin import KafkaAdminClient
from kafka.protocol.api_key import ApiKey
from kafka.protocol.broker_version_data import BrokerVersionData
from kafka.protocol.consumer.group import OffsetCommitResponse, OffsetFetchResponse
from kafka.protocol.parser import KafkaProtocol
from kafka.structs import OffsetAndMetadata, TopicPartition

from migrate.kafka.values import Committed
from migrate.kafka.wire.offset_commit import OffsetCommitRequest
from migrate.kafka.wire.offset_fetch import OffsetFetchRequest as OurFetchRequest


def by_key(offsets: dict) -> dict:
    """kafka-python's {TopicPartition: OffsetAndMetadata} as the codec's {(topic, partition): Committed}."""
    return {(tp.topic, tp.partition): Committed(om.offset, om.metadata) for tp, om in offsets.items()}


def commit_answer(version: int, offsets: dict) -> OffsetCommitResponse:
    T = OffsetCommitResponse.OffsetCommitResponseTopic
    by_topic: dict = {}
    for topic, partition in offsets:
        by_topic.setdefault(topic, []).append(T.OffsetCommitResponsePartition(partition_index=partition,
                                                                             error_code=0))
    return OffsetCommitResponse(throttle_time_ms=0, topics=[T(name=t, partitions=p) for t, p in by_topic.items()],
                                version=version)


def fetch_answer(version: int, group: str, offsets: dict) -> OffsetFetchResponse:
    if version >= 8:
        G = OffsetFetchResponse.OffsetFetchResponseGroup
        T, P = G.OffsetFetchResponseTopics, G.OffsetFetchResponseTopics.OffsetFetchResponsePartitions
    else:
        T = OffsetFetchResponse.OffsetFetchResponseTopic
        P = T.OffsetFetchResponsePartition
    by_topic: dict = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(P(partition_index=partition, committed_offset=offset,
                                                committed_leader_epoch=-1, metadata="zk2kafka run", error_code=0))
    topics = [T(name=t, partitions=p) for t, p in by_topic.items()]
    if version >= 8:
        return OffsetFetchResponse(throttle_time_ms=0, groups=[G(group_id=group, topics=topics, error_code=0)],
                                   version=version)
    return OffsetFetchResponse(throttle_time_ms=0, topics=topics, error_code=0, version=version)


CORRELATION_ID = 7


def framed(answer) -> bytes:
    answer.with_header(correlation_id=CORRELATION_ID)
    return answer.encode(header=True, framed=True)


def roundtrip(parser: KafkaProtocol, request, version: int, answer: bytes) -> object:
    """`request` queued and framed, and `answer` read back for it, as a connection does."""
    request.API_VERSION = version
    parser.send_request(request, correlation_id=CORRELATION_ID)
    parser.send_bytes()
    ((_, response),) = parser.receive_bytes(answer)
    return response


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", type=int, default=8, help="the version both requests are sent at (2-8)")
    ap.add_argument("--partitions", type=int, default=10, help="offsets a group commits and reads back")
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    group, metadata = "sync-group-00042", "zk2kafka run"
    offsets = {(f"topic-{p % 2}", p): 1000 + p for p in range(args.partitions)}
    tps = {TopicPartition(t, p): OffsetAndMetadata(o, metadata, -1) for (t, p), o in offsets.items()}
    commit_bytes = framed(commit_answer(args.version, offsets))
    fetch_bytes = framed(fetch_answer(args.version, group, offsets))
    admin = SimpleNamespace(_manager=SimpleNamespace(broker_version_data=BrokerVersionData(
        broker_version=(3, 0), api_versions={int(ApiKey.OffsetFetch): (0, args.version)})))

    def library_commit(parser):
        request = KafkaAdminClient._alter_group_offsets_request(group, tps)
        response = roundtrip(parser, request, args.version, commit_bytes)
        return KafkaAdminClient._alter_group_offsets_process_response(response)

    def library_fetch(parser):
        ((_, request),) = KafkaAdminClient._list_group_offsets_requests(admin, {group: None})
        response = roundtrip(parser, request, args.version, fetch_bytes)
        answer = response.groups[0] if args.version >= 8 else response
        return by_key(KafkaAdminClient._parse_group_offsets(answer))

    def codec_commit(parser):
        return roundtrip(parser, OffsetCommitRequest(group, offsets, metadata), args.version, commit_bytes).value

    def codec_fetch(parser):
        return roundtrip(parser, OurFetchRequest([group]), args.version, fetch_bytes).value[group].offsets

    # The same answers either way, before anything is timed.
    parser = KafkaProtocol(client_id="zk2kafka")
    assert library_fetch(parser) == codec_fetch(parser)
    assert {(tp.topic, tp.partition) for tp, err in library_commit(parser).items() if err.errno == 0} \
        == {k for k, err in codec_commit(parser).items() if err == 0} == set(offsets)

    figures = {"version": args.version, "partitions": args.partitions, "rounds": args.rounds}
    for name, fn in (("kafka-python OffsetCommit", library_commit), ("codec OffsetCommit", codec_commit),
                     ("kafka-python OffsetFetch", library_fetch), ("codec OffsetFetch", codec_fetch)):
        best = float("inf")
        for _ in range(args.repeat):
            parser = KafkaProtocol(client_id="zk2kafka")
            start = time.process_time()
            for _ in range(args.rounds):
                fn(parser)
            best = min(best, time.process_time() - start)
        figures[name] = round(1e6 * best / args.rounds, 1)
    print(f"\nv{args.version}, {args.partitions} partitions a group, best of {args.repeat} x {args.rounds:,} rounds: "
          "CPU µs per group\n\n| request | µs |\n| --- | ---: |")
    for name, value in figures.items():
        if name not in ("version", "partitions", "rounds"):
            print(f"| {name} | {value} |")
    return figures


if __name__ == "__main__":
    main()
    sys.exit(0)
