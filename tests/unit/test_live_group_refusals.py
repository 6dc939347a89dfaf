"""A commit from outside a group refused because the group has members is read as "the group is live": never
retried, and the group's GroupRejected says so (writer.LIVE_GROUP_ERRORS), for both rebalance protocols."""

from __future__ import annotations

from types import SimpleNamespace

import kafka.errors as Errors
import pytest

from migrate.kafka.retry import RetryPolicy, is_retriable
from migrate.kafka.writer import LIVE_GROUP_ERRORS, GroupRejected, KafkaOffsetWriter


class Admin:
    """What the writer asks of kafka-python's admin for one commit: each partition answered `error`."""

    def __init__(self, error):
        self.error, self.sent = error, 0
        self._manager = SimpleNamespace(broker_version_data=None)

    def alter_group_offsets(self, group, request):
        self.sent += 1
        return dict.fromkeys(request, self.error)


@pytest.mark.parametrize("error", LIVE_GROUP_ERRORS)
def test_a_live_groups_refusal_is_sent_once_and_named_live(error):
    admin = Admin(error)
    with pytest.raises(GroupRejected) as refused:
        KafkaOffsetWriter(admin, RetryPolicy(sleep=lambda s: None)).commit("g", {("orders", 0): 5}, "m")
    assert admin.sent == 1 and refused.value.live
    assert "the group is live in Kafka" in refused.value.reason and error.__name__ in refused.value.reason


def test_other_refusals_are_not_live_and_retriable_ones_are_retried():
    admin = Admin(Errors.GroupAuthorizationFailedError)
    with pytest.raises(GroupRejected) as refused:
        KafkaOffsetWriter(admin, RetryPolicy(sleep=lambda s: None)).commit("g", {("orders", 0): 5}, "m")
    assert not refused.value.live and admin.sent == 1
    assert is_retriable(Errors.CoordinatorLoadInProgressError())


def test_a_live_group_code_is_never_retriable_whatever_the_library_flags():
    class Flagged(Errors.StaleMemberEpochError):
        retriable = True

    assert not is_retriable(Flagged()) and not is_retriable(Errors.UnknownMemberIdError())
