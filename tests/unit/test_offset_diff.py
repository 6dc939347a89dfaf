"""OffsetDiff on small frames in a real local Spark: every status, its precedence, every policy."""

from __future__ import annotations

import datetime as dt

import pytest

from migrate.diff import schema as s
from migrate.diff.offset_diff import Policy
from migrate.kafka.snapshot import REFUSED, not_authorized

from support.frames import T0, commit_time, committed, group, partition, plan, zk_row


def test_every_status_from_one_plan(spark):
    parts = [partition("t", p, start=10, end=100) for p in range(4)]
    zk = [
        zk_row("plain", "t", 0, 50),                                   # MIGRATE
        zk_row("plain", "t", 1, 60),                                   # IN_SYNC
        zk_row("plain", "t", 2, 70),                                   # CONFLICT
        zk_row("range", "t", 0, 5),                                    # BELOW_LOG_START
        zk_row("range", "t", 1, 500),                                  # ABOVE_LOG_END
        zk_row("range", "gone", 0, 5),                                 # UNKNOWN_PARTITION (topic)
        zk_row("range", "t", 9, 5),                                    # UNKNOWN_PARTITION (partition)
        zk_row("bad", "t", 0, None, status="MALFORMED", raw="1.5E2"),  # MALFORMED
        zk_row("bad", "t", 1, None, status="UNREADABLE", raw=""),      # UNREADABLE
        zk_row("live", "t", 0, 50),                                    # GROUP_ACTIVE_KAFKA
        zk_row("old", "t", 0, 50, consumers=2),                        # GROUP_ACTIVE_ZK
        zk_row("stale", "t", 0, 40, topic_ctime=T0 + dt.timedelta(days=1)),   # TOPIC_RECREATED
        zk_row("moved-on", "t", 0, 40),                                # TAKEN_OVER
        zk_row("range", "payroll", 0, 5),                              # TOPIC_NOT_AUTHORIZED
    ]
    kafka = parts + [committed("plain", "t", 1, 60), committed("plain", "t", 2, 80),
                     committed("plain", "t", 3, 90),                   # KAFKA_ONLY
                     committed("stranger", "t", 0, 1),                 # not a ZooKeeper group: not reported
                     group("plain", "Empty", 0, ""), group("live", "Stable", 3, "consumer"),
                     committed("moved-on", "t", 0, 45), group("moved-on", "Empty", 0, "consumer"),
                     commit_time("moved-on", "t", 0, T0 + dt.timedelta(minutes=5)),
                     {"kind": REFUSED, "topic": "payroll", "error": not_authorized("payroll")}]
    rows = plan(spark, zk, kafka)
    got = {key: r["status"] for key, r in rows.items()}
    assert got == {
        ("plain", "t", 0): s.MIGRATE, ("plain", "t", 1): s.IN_SYNC, ("plain", "t", 2): s.CONFLICT,
        ("plain", "t", 3): s.KAFKA_ONLY, ("range", "t", 0): s.BELOW_LOG_START, ("range", "t", 1): s.ABOVE_LOG_END,
        ("range", "gone", 0): s.UNKNOWN_PARTITION, ("range", "t", 9): s.UNKNOWN_PARTITION,
        ("bad", "t", 0): s.MALFORMED, ("bad", "t", 1): s.UNREADABLE, ("live", "t", 0): s.GROUP_ACTIVE_KAFKA,
        ("old", "t", 0): s.GROUP_ACTIVE_ZK, ("stale", "t", 0): s.TOPIC_RECREATED,
        ("moved-on", "t", 0): s.TAKEN_OVER, ("range", "payroll", 0): s.TOPIC_NOT_AUTHORIZED,
    }
    assert set(got.values()) == set(s.STATUSES) - {s.UNTRANSLATABLE}   # --translate-via-mm2 only
    refused = rows[("range", "payroll", 0)]
    assert refused["reason"] == not_authorized("payroll") and refused["action"] == s.SKIP
    migrate = rows[("plain", "t", 0)]
    assert (migrate["planned_offset"], migrate["action"], migrate["lag"]) == (50, s.COMMIT, 50)
    conflict = rows[("plain", "t", 2)]
    assert (conflict["planned_offset"], conflict["action"], conflict["zk_minus_kafka"]) == (None, s.SKIP, -10)
    assert conflict["reason"] == "Kafka has 80, ZooKeeper 70"
    assert rows[("plain", "t", 1)]["action"] == rows[("plain", "t", 3)]["action"] == s.NOTHING
    taken = rows[("moved-on", "t", 0)]
    assert (taken["action"], taken["planned_offset"]) == (s.NOTHING, None)
    assert taken["reason"] == ("Kafka has 45, ZooKeeper 40 (committed by a new consumer 2026-01-01T00:05:00Z, by "
                               "member m-1 of generation 4, assigned it (protocol type consumer), after ZooKeeper's "
                               "last write 2026-01-01T00:00:00Z (clock margin 60s)): nothing to move")
    assert rows[("live", "t", 0)]["reason"].startswith("Kafka group is Stable with 3 member(s)")
    assert rows[("bad", "t", 0)]["zk_raw"] == "1.5E2"
    stale = rows[("stale", "t", 0)]
    assert (stale["action"], stale["planned_offset"], stale["topic_ctime"]) == (s.SKIP, None, T0 + dt.timedelta(days=1))
    assert stale["reason"] == ("ZooKeeper's offset 40 was last written 2026-01-01T00:00:00Z, before topic t was "
                               "created 2026-01-02T00:00:00Z: it counts messages of a topic deleted since")
    assert {r["zk_change"] for r in rows.values()} == {s.ZK_UNCHANGED}
    assert all(r["zk_planned"] is None for r in rows.values())


def test_precedence_first_matching_status_wins(spark):
    parts = [partition("t", 0, start=10, end=100)]
    later = T0 + dt.timedelta(seconds=1)
    zk = [zk_row("a", "t", 0, 5, consumers=1),            # live in ZK and below log start: BELOW_LOG_START
          zk_row("b", "t", 0, 50, consumers=1),           # live in ZK but already equal: IN_SYNC
          zk_row("c", "t", 0, 500),                       # above log end and conflicting: ABOVE_LOG_END
          zk_row("d", "gone", 0, None, status="MALFORMED"),  # malformed on a missing topic: MALFORMED
          zk_row("e", "t", 0, 5),                         # equal in both, below the log start: BELOW_LOG_START
          zk_row("f", "t", 0, 500),                       # equal in both, past the log end: ABOVE_LOG_END
          zk_row("g", "t", 0, 5, topic_ctime=later),      # older than its topic and below it: TOPIC_RECREATED
          zk_row("h", "t", 0, 50, topic_ctime=T0)]        # written as the topic was created: IN_SYNC
    kafka = parts + [committed("b", "t", 0, 50), committed("c", "t", 0, 20), committed("e", "t", 0, 5),
                     committed("f", "t", 0, 500), committed("h", "t", 0, 50)]
    got = {k[0]: r["status"] for k, r in plan(spark, zk, kafka).items()}
    assert got == {"a": s.BELOW_LOG_START, "b": s.IN_SYNC, "c": s.ABOVE_LOG_END, "d": s.MALFORMED,
                   "e": s.BELOW_LOG_START, "f": s.ABOVE_LOG_END, "g": s.TOPIC_RECREATED, "h": s.IN_SYNC}


@pytest.mark.parametrize("on_conflict", ["skip", "zk", "kafka", "max"])
def test_out_of_range_in_a_live_group_is_never_planned(spark, on_conflict):
    """Out of range comes before the live groups in the precedence: the row says why, and stays unplanned."""
    zk = [zk_row("old", "t", 0, 5, consumers=1), zk_row("live", "t", 0, 500)]
    kafka = [partition("t", 0, start=10, end=100), group("live", "Stable", 2, "consumer")]
    rows = plan(spark, zk, kafka, Policy(on_conflict=on_conflict, out_of_range="clamp", rewrite_zk=True))
    old, live = rows[("old", "t", 0)], rows[("live", "t", 0)]
    assert (old["status"], old["planned_offset"], old["action"]) == (s.BELOW_LOG_START, None, s.SKIP)
    assert (live["status"], live["planned_offset"], live["action"]) == (s.ABOVE_LOG_END, None, s.SKIP)
    assert old["reason"].endswith("; not planned while 1 old consumer(s) are registered in ZooKeeper")
    assert live["reason"].endswith("; not planned while the group is live in Kafka (Stable, 2 member(s))")


@pytest.mark.parametrize("on_conflict, out_of_range, planned", [
    ("skip", "skip", None), ("zk", "clamp", 10), ("kafka", "clamp", None), ("max", "clamp", 10),
    ("zk", "commit", None)])


def test_equal_offsets_below_the_log_start_are_out_of_range_not_in_sync(spark, on_conflict, out_of_range, planned):
    """Kafka == ZooKeeper == 5 with the log from 10: a consumer starting there resets itself; where the policies keep
    both as they are, nothing is left to write."""
    rows = plan(spark, [zk_row("g", "t", 0, 5)], [partition("t", 0, start=10), committed("g", "t", 0, 5)],
                Policy(on_conflict=on_conflict, out_of_range=out_of_range, rewrite_zk=True))
    row = rows[("g", "t", 0)]
    assert row["status"] == s.BELOW_LOG_START and row["planned_offset"] == planned
    assert row["action"] == (s.SKIP if planned is None else s.COMMIT)


def test_live_zk_consumers_can_be_allowed(spark):
    rows = plan(spark, [zk_row("old", "t", 0, 50, consumers=2)], [partition("t", 0)],
                Policy(allow_live_zk_consumers=True))
    assert rows[("old", "t", 0)]["status"] == s.MIGRATE


@pytest.mark.parametrize("policy, expected", [
    ("skip", None), ("fail", None), ("zk", 70), ("kafka", 80), ("max", 80)])


def test_on_conflict_policies(spark, policy, expected):
    rows = plan(spark, [zk_row("g", "t", 0, 70)], [partition("t", 0), committed("g", "t", 0, 80)],
                Policy(on_conflict=policy, rewrite_zk=True))
    row = rows[("g", "t", 0)]
    assert row["status"] == s.CONFLICT
    assert row["planned_offset"] == expected
    assert row["action"] == (s.SKIP if expected is None else s.COMMIT)


@pytest.mark.parametrize("policy, below, above", [("skip", None, None), ("clamp", 10, 100), ("commit", 5, 500)])
def test_out_of_range_policies(spark, policy, below, above):
    rows = plan(spark, [zk_row("g", "t", 0, 5), zk_row("g", "t", 1, 500)],
                [partition("t", 0, 10, 100), partition("t", 1, 10, 100)],
                Policy(out_of_range=policy, rewrite_zk=True))
    assert rows[("g", "t", 0)]["status"] == s.BELOW_LOG_START
    assert rows[("g", "t", 1)]["status"] == s.ABOVE_LOG_END
    assert (rows[("g", "t", 0)]["planned_offset"], rows[("g", "t", 1)]["planned_offset"]) == (below, above)


# ZooKeeper 80, Kafka 30 (a new consumer's), and the other way: what each policy would set ZooKeeper to.
MOVES = [("kafka", 80, 30, s.ZK_BACKWARD), ("max", 30, 80, s.ZK_FORWARD)]


@pytest.mark.parametrize("on_conflict, zk_offset, kafka_offset, direction", MOVES)
def test_a_policy_alone_never_moves_zookeeper(spark, on_conflict, zk_offset, kafka_offset, direction):
    rows = plan(spark, [zk_row("g", "t", 0, zk_offset)], [partition("t", 0), committed("g", "t", 0, kafka_offset)],
                Policy(on_conflict=on_conflict))
    row = rows[("g", "t", 0)]
    assert (row["status"], row["action"], row["planned_offset"]) == (s.CONFLICT, s.SKIP, None)
    # What it would be set to, which the report shows; written nowhere.
    assert (row["zk_change"], row["zk_planned"]) == (s.ZK_BLOCKED, max(zk_offset, kafka_offset)
                                                     if on_conflict == "max" else kafka_offset)
    way = "forwards" if direction == s.ZK_FORWARD else "backwards"
    assert row["reason"] == (f"Kafka has {kafka_offset}, ZooKeeper {zk_offset}; would set ZooKeeper's offset "
                             f"{zk_offset} -> {kafka_offset if on_conflict == 'kafka' else 80} ({way}), away from the "
                             "old consumer's own: not planned; --rewrite-zk-offsets writes it there, --no-zk-write "
                             "commits Kafka alone")


@pytest.mark.parametrize("on_conflict, zk_offset, kafka_offset, direction", MOVES)
def test_rewrite_zk_offsets_plans_the_move_and_says_which_way(spark, on_conflict, zk_offset, kafka_offset,
                                                              direction):
    rows = plan(spark, [zk_row("g", "t", 0, zk_offset)], [partition("t", 0), committed("g", "t", 0, kafka_offset)],
                Policy(on_conflict=on_conflict, rewrite_zk=True))
    row = rows[("g", "t", 0)]
    target = 30 if on_conflict == "kafka" else 80
    assert (row["action"], row["planned_offset"], row["zk_change"], row["zk_planned"]) == (
        s.COMMIT, target, direction, target)
    assert row["reason"].endswith(f"; ZooKeeper {zk_offset} -> {target} ({direction}s, --rewrite-zk-offsets)")


@pytest.mark.parametrize("on_conflict, zk_offset, kafka_offset, direction", MOVES)
def test_no_zk_write_commits_kafka_and_keeps_zookeeper(spark, on_conflict, zk_offset, kafka_offset, direction):
    rows = plan(spark, [zk_row("g", "t", 0, zk_offset)], [partition("t", 0), committed("g", "t", 0, kafka_offset)],
                Policy(on_conflict=on_conflict, writes_zk=False))
    row = rows[("g", "t", 0)]
    assert row["action"] == s.COMMIT and (row["zk_change"], row["zk_planned"]) == (s.ZK_UNCHANGED, None)


def test_clamp_moves_zookeeper_too_and_needs_the_flag(spark):
    zk, kafka = [zk_row("g", "t", 0, 5), zk_row("g", "t", 1, 500)], [partition("t", 0, 10, 100),
                                                                      partition("t", 1, 10, 100)]
    rows = plan(spark, zk, kafka, Policy(out_of_range="clamp"))
    assert [(r["planned_offset"], r["zk_change"], r["zk_planned"]) for r in rows.values()] == [
        (None, s.ZK_BLOCKED, 10), (None, s.ZK_BLOCKED, 100)]
    rows = plan(spark, zk, kafka, Policy(out_of_range="clamp", rewrite_zk=True))
    assert [(r["planned_offset"], r["zk_change"], r["zk_planned"]) for r in rows.values()] == [
        (10, s.ZK_FORWARD, 10), (100, s.ZK_BACKWARD, 100)]
    # --out-of-range commit and --on-conflict zk keep ZooKeeper's own offset: no flag needed.
    rows = plan(spark, zk, kafka, Policy(out_of_range="commit"))
    assert [(r["planned_offset"], r["zk_change"]) for r in rows.values()] == [(5, s.ZK_UNCHANGED),
                                                                              (500, s.ZK_UNCHANGED)]


def test_two_layouts_for_one_partition_keep_the_latest(spark):
    later = T0 + dt.timedelta(hours=1)
    zk = [zk_row("g", "t", 0, 40, layout="standard", mtime=T0),
          zk_row("g", "t", 0, 45, layout="kafka-1.1.0-offset", mtime=later),
          zk_row("h", "t", 0, None, status="MALFORMED", layout="standard", mtime=later),
          zk_row("h", "t", 0, 30, layout="kafka-1.1.0-offset", mtime=T0)]
    rows = plan(spark, zk, [partition("t", 0)])
    assert len(rows) == 2
    assert (rows[("g", "t", 0)]["zk_offset"], rows[("g", "t", 0)]["layout"]) == (45, "kafka-1.1.0-offset")
    # The newer value is MALFORMED: it stands for the partition and blocks, the older 30 is not written.
    assert (rows[("h", "t", 0)]["zk_offset"], rows[("h", "t", 0)]["status"]) == (None, s.MALFORMED)


def test_unlistable_directory_row_stays_unreadable(spark):
    zk = [zk_row("g", None, None, None, status="UNREADABLE", raw="")]
    rows = plan(spark, zk, [partition("t", 0)])
    assert [r["status"] for r in rows.values()] == [s.UNREADABLE]


def test_partition_without_leader_still_plans_without_range_check(spark):
    rows = plan(spark, [zk_row("g", "t", 0, 50)],
                [{**partition("t", 0), "log_start": None, "log_end": None, "error": "partition has no leader"}])
    row = rows[("g", "t", 0)]
    assert (row["status"], row["planned_offset"]) == (s.MIGRATE, 50)
    assert "partition has no leader" in row["reason"]


def test_empty_inputs_give_an_empty_plan(spark):
    assert plan(spark, [], []) == {}
