"""A commit from outside a group refused because the group has members is read as "the group is live": never
retried, and the group's GroupRejected says so (writer.LIVE_GROUP_ERRORS), for both rebalance protocols."""

from __future__ import annotations

import kafka.errors as Errors
import pytest

from migrate.kafka.retry import RetryPolicy, is_retriable
from migrate.kafka.writer import LIVE_GROUP_ERRORS, GroupRejected, KafkaOffsetWriter

from support.kafka_answers import CodecAdmin, commit_answer


def Admin(error):
    """Each partition of each commit answered `error` (a kafka-python error class)."""
    return CodecAdmin(lambda request: commit_answer(request, error.errno))


@pytest.mark.parametrize("error", LIVE_GROUP_ERRORS)
def test_a_live_groups_refusal_is_sent_once_and_named_live(error):
    admin = Admin(error)
    with pytest.raises(GroupRejected) as refused:
        KafkaOffsetWriter(admin, RetryPolicy(sleep=lambda s: None)).commit("g", {("orders", 0): 5}, "m")
    assert len(admin.sent) == 1 and refused.value.live
    assert "the group is live in Kafka" in refused.value.reason and error.__name__ in refused.value.reason


def test_other_refusals_are_not_live_and_retriable_ones_are_retried():
    admin = Admin(Errors.GroupAuthorizationFailedError)
    with pytest.raises(GroupRejected) as refused:
        KafkaOffsetWriter(admin, RetryPolicy(sleep=lambda s: None)).commit("g", {("orders", 0): 5}, "m")
    assert not refused.value.live and len(admin.sent) == 1
    assert is_retriable(Errors.CoordinatorLoadInProgressError())


def test_a_live_group_code_is_never_retriable_whatever_the_library_flags():
    class Flagged(Errors.StaleMemberEpochError):
        retriable = True

    assert not is_retriable(Flagged()) and not is_retriable(Errors.UnknownMemberIdError())
