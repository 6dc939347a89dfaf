"""The writer's checks on zk2kafka's own codec (migrate/kafka/wire/): every partition of a commit must be accepted, a
live group's refusal is named live and never retried, retriable errors are retried, and a group Kafka refuses to
show is that group's error alone; answers built by kafka-python's response classes (the real brokers: the sync,
legacy-broker and compat tests)."""

from __future__ import annotations

import pytest

from migrate.kafka.retry import RetryPolicy
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter

from support.kafka_answers import CodecAdmin, commit_answer, fetch_answer

UNKNOWN_MEMBER_ID, NOT_COORDINATOR, GROUP_AUTHORIZATION_FAILED = 25, 16, 30
UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED, UNSTABLE_OFFSET_COMMIT = 3, 29, 88


def writer(admin) -> KafkaOffsetWriter:
    return KafkaOffsetWriter(admin, RetryPolicy(deadline=5, sleep=lambda s: None))


def test_commit_many_accepts_a_group_only_when_every_partition_is_accepted():
    def answer(request):
        if request.group == "live":
            return commit_answer(request, UNKNOWN_MEMBER_ID)
        response = commit_answer(request)
        if request.group == "half":   # one partition refused, the other written
            response.topics[0].partitions[0].error_code = UNKNOWN_TOPIC_OR_PARTITION
        return response

    admin = CodecAdmin(answer)
    results = writer(admin).commit_many({"ok": {("t", 0): 1, ("u", 2): 3}, "live": {("t", 0): 1},
                                         "half": {("t", 0): 1, ("t", 1): 2}}, "zk2kafka run")
    assert results["ok"] is None
    assert isinstance(results["live"], GroupRejected) and results["live"].live
    assert isinstance(results["half"], GroupRejected) and not results["half"].live
    assert "1 of 2 partition(s) refused (UnknownTopicOrPartitionError, e.g. t-0); the others were written" \
        in results["half"].reason
    # the live group was sent twice (the pipelined try, then commit()'s), never retried past that
    assert [r.group for r in admin.sent].count("live") == 2
    assert {r.API_VERSION for r in admin.sent} == {8}


def test_a_retriable_refusal_is_retried_until_accepted():
    tries = []

    def answer(request):
        tries.append(request.group)
        return commit_answer(request, NOT_COORDINATOR if len(tries) < 3 else 0)

    assert writer(CodecAdmin(answer)).commit_many({"g": {("t", 0): 7}}, "m") == {"g": None}
    assert tries == ["g", "g", "g"]


@pytest.mark.parametrize("version", [8, 7, 3])
def test_committed_many_reads_each_group_and_a_refusal_is_that_groups_alone(version):
    held = {"a": {("t", 0): (5, "m", 0), ("t", 1): (6, None, 0)}, "b": {("t", 0): (1, "", 0)},
            "c": {("t", 0): (1, "", 0), ("u", 3): (2, "", TOPIC_AUTHORIZATION_FAILED)}}
    admin = CodecAdmin(lambda request: fetch_answer(request, held, {"b": GROUP_AUTHORIZATION_FAILED}), version)
    read = writer(admin).committed_many(["a", "b", "c", "none"])
    assert read["a"] == {("t", 0): (5, "m"), ("t", 1): (6, None)} and read["none"] == {}
    assert isinstance(read["b"], GroupRejected) and "GroupAuthorizationFailedError" in read["b"].reason
    assert isinstance(read["c"], GroupRejected) and "partition u-3" in read["c"].reason
    # one request for every group from v8 (Kafka 3.0+), one a group before
    assert [r.groups for r in admin.sent] == ([["a", "b", "c", "none"]] if version >= 8 else
                                              [["a"], ["b"], ["c"], ["none"]])


@pytest.mark.parametrize("version", [8, 6])
def test_a_retriable_refusal_of_a_read_sends_the_round_again(version):
    rounds = []

    def answer(request):
        rounds.append(request.groups)
        error = UNSTABLE_OFFSET_COMMIT if len(rounds) == 1 else 0
        return fetch_answer(request, {"a": {("t", 0): (5, "m", error)}})

    assert writer(CodecAdmin(answer, version)).committed_many(["a"]) == {"a": {("t", 0): (5, "m")}}
    assert rounds == [["a"], ["a"]]
