"""The plan's safety rules, on small frames in a real local Spark: out-of-range rows where Kafka holds an
offset follow --on-conflict; --offset-semantics last never plans 0."""

from __future__ import annotations

import pytest

from migrate.diff import schema as s
from migrate.diff.offset_diff import Policy

from support.frames import committed, partition, plan, zk_row


@pytest.mark.parametrize("on_conflict, out_of_range, below, above", [
    ("skip", "clamp", None, None), ("fail", "commit", None, None),
    ("zk", "clamp", 10, 100), ("zk", "commit", 5, 500), ("zk", "skip", None, None),
    ("kafka", "clamp", 50, 50), ("max", "clamp", 50, 100), ("max", "commit", 50, 500), ("max", "skip", None, None)])


def test_out_of_range_rows_where_kafka_holds_an_offset_follow_on_conflict(spark, on_conflict, out_of_range, below,
                                                                          above):
    rows = plan(spark, [zk_row("g", "t", 0, 5), zk_row("g", "t", 1, 500)],
                [partition("t", 0, 10, 100), partition("t", 1, 10, 100), committed("g", "t", 0, 50),
                 committed("g", "t", 1, 50)],
                Policy(on_conflict=on_conflict, out_of_range=out_of_range, rewrite_zk=True))
    low, high = rows[("g", "t", 0)], rows[("g", "t", 1)]
    assert (low["status"], high["status"]) == (s.BELOW_LOG_START, s.ABOVE_LOG_END)
    assert (low["planned_offset"], high["planned_offset"]) == (below, above)
    assert "Kafka has 50" in low["reason"] and "Kafka has 50" in high["reason"]


def test_out_of_range_rows_without_a_kafka_offset_keep_the_out_of_range_policy(spark):
    rows = plan(spark, [zk_row("g", "t", 0, 5), zk_row("g", "t", 1, 500)],
                [partition("t", 0, 10, 100), partition("t", 1, 10, 100)],
                Policy(out_of_range="clamp", rewrite_zk=True))
    assert (rows[("g", "t", 0)]["planned_offset"], rows[("g", "t", 1)]["planned_offset"]) == (10, 100)
    assert "Kafka has" not in rows[("g", "t", 0)]["reason"]


@pytest.mark.parametrize("zk_holds_last, planned", [(True, None), (False, 0)])
def test_offset_semantics_last_never_plans_zero(spark, zk_holds_last, planned):
    # An empty log (end 0) and a clamp: the plan would be 0, which ZooKeeper can hold in `last` form only as -1.
    rows = plan(spark, [zk_row("g", "t", 0, 5)], [partition("t", 0, 0, 0)],
                Policy(out_of_range="clamp", zk_holds_last=zk_holds_last, rewrite_zk=True))
    row = rows[("g", "t", 0)]
    assert row["status"] == s.ABOVE_LOG_END and row["planned_offset"] == planned
    assert ("-1" in row["reason"]) is zk_holds_last
