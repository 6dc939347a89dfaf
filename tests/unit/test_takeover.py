"""The takeover rule (migrate/kafka/takeover.py): a value Kafka holds supersedes ZooKeeper's only on
evidence of a new consumer; and the diff's Spark twin of it (migrate/diff/judge.py) gives every row the
same verdict and the same words."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from migrate.diff import schema as s
from migrate.diff.offset_diff import Policy
from migrate.kafka import takeover as t

from support.frames import T0, commit_time, committed, group, partition, plan, zk_row

Z = T0.timestamp()   # ZooKeeper's last write of the znode


def judge(committed, protocol_type="", watched=None, margin=60.0, **kw):
    return t.judge(zk_written=Z, committed=None if committed is None else Z + committed,
                   protocol_type=protocol_type, watched=watched, margin=margin, **kw)


def test_a_consumer_group_committing_after_zookeeper_took_over():
    found = judge(+300, "consumer")
    assert found.taken_over and found.writer == t.MEMBER
    assert found.words.startswith("committed by a new consumer 2026-01-01T00:05:00Z, by a consumer group's member")


@pytest.mark.parametrize("offset, why", [
    (-300, "before ZooKeeper's last write 2026-01-01T00:00:00Z: the old consumers committed after it"),
    (-30, "within the clock margin 60s"),
    (+30, "within the clock margin 60s"),
])
def test_a_consumer_group_not_shown_to_be_last_differs(offset, why):
    # A canary that committed and left, then the old consumers went on in ZooKeeper: not a takeover.
    found = judge(offset, "consumer")
    assert not found.taken_over and found.writer == t.MEMBER and why in found.words


def test_a_commit_from_outside_is_no_consumer_whatever_its_time():
    for offset in (-300, +300, +86400):
        found = judge(offset, "")
        assert not found.taken_over and found.writer == t.OUTSIDE
        assert "from outside (no protocol type: no consumer joined the group)" in found.words


def test_a_client_of_no_group_committing_during_the_watch_took_over():
    # Flink or Spark assign partitions themselves: no protocol type, but seen committing as they go.
    watch = (Z + 100, Z + 400)
    assert judge(+300, "", watched=watch, margin=10).taken_over
    assert judge(+300, "", watched=watch, margin=10).writer == t.WATCHED
    # Its commit before the watch began (beyond the margin) was not seen during it.
    assert not judge(+300, "", watched=(Z + 295, Z + 400), margin=10).taken_over


def test_zk2kafka_values_and_unknown_times_are_never_a_takeover():
    assert judge(+300, "consumer", zk2kafka="zk2kafka migrate r1").writer == t.ZK2KAFKA
    unknown = judge(None, "consumer", clocks_unknown="reading __consumer_offsets took longer than 30s")
    assert not unknown.taken_over and "took longer than 30s" in unknown.words
    assert not t.judge(zk_written=None, committed=Z, protocol_type="consumer", watched=None).taken_over


def test_named_run_reads_zk2kafka_default_metadata_only():
    assert t.named_run("zk2kafka migrate 20260101-abc") == "20260101-abc"
    assert t.named_run("zk2kafka sync r") == "r"
    assert t.named_run("") is t.named_run(None) is t.named_run("my app") is None


def test_the_diff_judges_every_case_as_the_rule_does(spark):
    """Each case of the rule through Spark: TAKEN_OVER exactly where takeover.judge says taken over, and
    the CONFLICT reason carries the rule's own words."""
    offsets = (-300, -30, +30, +300)
    types = ("consumer", "")
    metadata = ("", "zk2kafka migrate r1")
    cases = list(itertools.product(offsets, types, metadata))
    zk, kafka = [], [partition("t", 0, start=0, end=1000)]
    for i, (offset, kind, meta) in enumerate(cases):
        name = f"g{i}"
        zk.append(zk_row(name, "t", 0, 40))
        kafka += [committed(name, "t", 0, 45, meta), group(name, "Empty", 0, kind),
                  commit_time(name, "t", 0, T0 + dt.timedelta(seconds=offset))]
    rows = plan(spark, zk, kafka, Policy())
    for i, (offset, kind, meta) in enumerate(cases):
        found = judge(offset, kind, zk2kafka=meta or None)
        row = rows[(f"g{i}", "t", 0)]
        assert row["status"] == (s.TAKEN_OVER if found.taken_over else s.CONFLICT), (offset, kind, meta)
        assert f"({found.words})" in row["reason"], (row["reason"], found.words)


def test_the_diff_without_a_commit_time_keeps_a_plain_conflict(spark):
    rows = plan(spark, [zk_row("g", "t", 0, 40)],
                [partition("t", 0), committed("g", "t", 0, 45), group("g", "Empty", 0, "consumer")])
    assert rows[("g", "t", 0)]["status"] == s.CONFLICT
    assert rows[("g", "t", 0)]["reason"] == "Kafka has 45, ZooKeeper 40"


def test_the_diff_takes_the_margin_given(spark):
    zk = [zk_row("g", "t", 0, 40)]
    kafka = [partition("t", 0), committed("g", "t", 0, 45), group("g", "Empty", 0, "consumer"),
             commit_time("g", "t", 0, T0 + dt.timedelta(seconds=90))]
    assert plan(spark, zk, kafka, Policy())[("g", "t", 0)]["status"] == s.TAKEN_OVER
    assert plan(spark, zk, kafka, Policy(clock_margin=120.0))[("g", "t", 0)]["status"] == s.CONFLICT
