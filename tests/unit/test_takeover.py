"""The takeover rule (migrate/kafka/takeover.py): a value Kafka holds supersedes ZooKeeper's only where
__consumer_offsets shows a consumer there, a member at the moment of the commit or a client seen consuming
during the watch, after ZooKeeper's last write by more than the margin in force; and the diff's Spark twin of
it (migrate/diff/judge.py) gives every row the same verdict and the same words."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from migrate.diff import schema as s
from migrate.diff.offset_diff import Policy
from migrate.kafka import takeover as t
from migrate.kafka import values
from migrate.kafka.offsets_log.group import Commit, Membership, Watched
from migrate.kafka.offsets_log.schema import Member

from support.frames import (EMPTY_AT, MEMBER_AT, NEVER_JOINED, T0, commit_time, committed, group, partition,
                            plan, zk_row)

Z = T0.timestamp()   # ZooKeeper's last write of the znode
UNTOLD = Membership(3, 7, "connect", None, None)                                      # assignment not told
ELSEWHERE = Membership(1, 4, "consumer", None, False)                                 # assigned, not this one


def commit(seconds: float, by: Membership = MEMBER_AT, offset: int = 45) -> Commit:
    return Commit(offset, "", int((Z + seconds) * 1000), None, 10, by)


def judge(seconds, by=MEMBER_AT, watched=None, watching=False, margin=60.0, **kw):
    seen = t.Seen(None if seconds is None else commit(seconds, by), watched, kw.pop("unknown", None))
    return t.judge(zk_written=Z, seen=seen, margin=margin, watching=watching, **kw)


def test_a_members_commit_after_zookeeper_took_over_and_names_the_member():
    found = judge(+300)
    assert found.taken_over and found.writer == t.MEMBER
    assert found.words == ("committed by a new consumer 2026-01-01T00:05:00Z, by member m-1 of generation 4, "
                           "assigned it (protocol type consumer), after ZooKeeper's last write 2026-01-01T00:00:00Z "
                           "(clock margin 60s)")
    untold = judge(+300, UNTOLD)
    assert untold.taken_over and "by a member of the group (3 member(s) at generation 7; protocol type connect)" \
        in untold.words


@pytest.mark.parametrize("seconds, why", [
    (-300, "before ZooKeeper's last write 2026-01-01T00:00:00Z: the old consumers committed after it"),
    (-30, "within the clock margin 60s"),
    (+30, "within the clock margin 60s"),
])
def test_a_members_commit_not_shown_to_be_last_differs(seconds, why):
    # A canary that committed and left, then the old consumers went on in ZooKeeper: not a takeover.
    found = judge(seconds)
    assert not found.taken_over and found.writer == t.MEMBER and why in found.words


def test_a_commit_made_while_the_group_had_no_member_is_from_outside_whatever_its_protocol_type():
    # An admin's reset of an Empty consumer group: the group keeps protocol type `consumer`, but its records show
    # no member at the moment of the commit.
    for seconds in (-300, +300, +86400):
        found = judge(seconds, EMPTY_AT)
        assert not found.taken_over and found.writer == t.OUTSIDE
        assert "from outside: the group had no member then (protocol type consumer, Empty)" in found.words
        never = judge(seconds, NEVER_JOINED)
        assert not never.taken_over and "from outside: no consumer had joined the group then" in never.words


def test_a_commit_of_a_partition_no_member_was_assigned_is_not_a_members():
    found = judge(+300, ELSEWHERE)
    assert not found.taken_over and found.writer == t.UNASSIGNED
    assert "while the group had 1 member(s) at generation 4, none of them assigned it" in found.words


def test_a_client_of_no_group_seen_consuming_during_the_watch_took_over():
    # Flink or Spark assign partitions themselves: no member, but committing again and again, moving forward.
    moving = Watched(3, 40, 45)
    found = judge(+300, NEVER_JOINED, moving, watching=True)
    assert found.taken_over and found.writer == t.WATCHED
    assert "by a client of no consumer group seen consuming: 3 commits during the watch, 40 to 45" in found.words
    # A diff watches nothing: the same commits show no consumer there.
    assert not judge(+300, NEVER_JOINED, moving, watching=False).taken_over


@pytest.mark.parametrize("watched, words", [
    (Watched(1, 45, 45), "one commit during the watch: not shown to be a consumer"),
    (Watched(4, 45, 45), "4 commits during the watch that did not move forward (45 to 45): not shown to be a "
                         "consumer"),
    (Watched(2, 50, 45), "2 commits during the watch that did not move forward (50 to 45)"),
])
def test_commits_during_the_watch_that_show_no_consumer_say_so_and_block(watched, words):
    # One admin reset during the watch, or commits that do not move: no consumer is shown.
    found = judge(+300, NEVER_JOINED, watched, watching=True)
    assert not found.taken_over and found.writer == t.OUTSIDE and words in found.words


def test_zk2kafka_values_and_unknown_records_are_never_a_takeover():
    assert judge(+300, zk2kafka="zk2kafka migrate r1").writer == t.ZK2KAFKA
    unknown = judge(None, unknown="reading __consumer_offsets took longer than its budget")
    assert not unknown.taken_over and "took longer than its budget" in unknown.words
    assert not t.judge(zk_written=None, seen=t.Seen(commit(0))).taken_over


def test_a_value_is_dated_by_the_record_that_wrote_it_never_by_a_newer_one_of_another_value():
    from support.records import commit_value, group_log, offset_key

    log = group_log("g", commits=[])
    log.commit(offset_key("g", "t", 0), 5, commit_value(45, int(Z * 1000)), during_watch=False)
    assert t.seen(log, ("t", 0), 45, None).commit.offset == 45
    other = t.seen(log, ("t", 0), 60, None)
    assert other.commit is None and other.unknown == "the newest commit record read holds 45, not Kafka's 60"
    assert t.seen(log, ("t", 9), 45, None).unknown == t.NO_RECORD
    assert t.seen(None, ("t", 0), 45, "not allowed").unknown == "not allowed"


def test_named_run_reads_zk2kafka_default_metadata_only():
    assert values.named_run("zk2kafka migrate 20260101-abc") == "20260101-abc"
    assert values.named_run("zk2kafka sync r") == "r"
    assert values.named_run("") is values.named_run(None) is values.named_run("my app") is None


def test_the_diff_judges_every_case_as_the_rule_does(spark):
    """Each case of the rule through Spark: TAKEN_OVER exactly where takeover.judge says taken over, and the
    CONFLICT reason carries the rule's own words."""
    offsets = (-300, -30, +30, +300)
    members = (MEMBER_AT, EMPTY_AT, NEVER_JOINED, ELSEWHERE, UNTOLD)
    metadata = ("", "zk2kafka migrate r1")
    cases = list(itertools.product(offsets, members, metadata))
    zk, kafka = [], [partition("t", 0, start=0, end=1000)]
    for i, (seconds, by, meta) in enumerate(cases):
        name = f"g{i}"
        zk.append(zk_row(name, "t", 0, 40))
        kafka += [committed(name, "t", 0, 45, meta), group(name, "Empty", 0, by.protocol_type or None),
                  commit_time(name, "t", 0, T0 + dt.timedelta(seconds=seconds), by=by)]
    rows = plan(spark, zk, kafka, Policy())
    for i, (seconds, by, meta) in enumerate(cases):
        found = judge(seconds, by, zk2kafka=meta or None)
        row = rows[(f"g{i}", "t", 0)]
        assert row["status"] == (s.TAKEN_OVER if found.taken_over else s.CONFLICT), (seconds, by, meta)
        assert f"({found.words})" in row["reason"], (row["reason"], found.words)


def test_the_diff_dates_kafkas_value_only_by_its_own_record(spark):
    # The newest record read holds another value than Kafka answers with: not dated, so not a takeover.
    rows = plan(spark, [zk_row("g", "t", 0, 40)],
                [partition("t", 0), committed("g", "t", 0, 45), group("g", "Empty", 0, "consumer"),
                 commit_time("g", "t", 0, T0 + dt.timedelta(seconds=300), offset=60)])
    found = judge(None, unknown="the newest commit record read holds 60, not Kafka's 45")
    assert rows[("g", "t", 0)]["status"] == s.CONFLICT
    assert rows[("g", "t", 0)]["reason"] == f"Kafka has 45, ZooKeeper 40 ({found.words})"


def test_the_diff_without_a_commit_time_keeps_a_plain_conflict(spark):
    rows = plan(spark, [zk_row("g", "t", 0, 40)],
                [partition("t", 0), committed("g", "t", 0, 45), group("g", "Empty", 0, "consumer")])
    assert rows[("g", "t", 0)]["status"] == s.CONFLICT
    assert rows[("g", "t", 0)]["reason"] == "Kafka has 45, ZooKeeper 40"


def test_the_diff_takes_the_margin_given(spark):
    # The margin in force: --clock-margin widened by the lead the Kafka snapshot measured.
    zk = [zk_row("g", "t", 0, 40)]
    kafka = [partition("t", 0), committed("g", "t", 0, 45), group("g", "Empty", 0, "consumer"),
             commit_time("g", "t", 0, T0 + dt.timedelta(seconds=90))]
    assert plan(spark, zk, kafka, Policy())[("g", "t", 0)]["status"] == s.TAKEN_OVER
    assert plan(spark, zk, kafka, Policy(clock_margin=120.0))[("g", "t", 0)]["status"] == s.CONFLICT


def test_a_member_named_in_the_words_is_the_one_assigned_the_partition():
    holder = Member("m-2", "app", "/10.0.0.2", frozenset({("t", 1)}))
    by = Membership(2, 9, "consumer", holder, True)
    assert "by member m-2 of generation 9, assigned it" in judge(+300, by).words
