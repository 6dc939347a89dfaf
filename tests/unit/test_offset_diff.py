"""OffsetDiff on small frames in a real local Spark: every status, its precedence, every policy."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from migrate.diff import schema as s
from migrate.diff.offset_diff import Policy, offset_diff
from migrate.diff.run import _conform, spark_session
from migrate.kafka.snapshot import GROUP, KAFKA_SCHEMA, OFFSET, PARTITION
from migrate.zk.reader import SCHEMA as ZK_SCHEMA

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def spark():
    session = spark_session("local[2]", "zk2kafka-unit")
    yield session
    session.stop()


def zk_row(group, topic, partition, offset=None, status="OK", consumers=0, layout="standard", mtime=T0, raw=None):
    return {"group": group, "topic": topic, "partition": partition, "offset": offset,
            "raw": raw if raw is not None else str(offset), "status": status,
            "reason": None if status == "OK" else f"{status.lower()} value", "mtime": mtime, "ctime": T0,
            "version": 3, "layout": layout, "path": f"/consumers/{group}/offsets/{topic}/{partition}",
            "zk_consumers": consumers, "zk_owned_partitions": 0}


def partition(topic, p, start=0, end=100, error=None):
    return {"kind": PARTITION, "topic": topic, "partition": p, "log_start": start, "log_end": end,
            "leader": 0, "error": error}


def committed(group, topic, p, offset):
    return {"kind": OFFSET, "group": group, "topic": topic, "partition": p, "committed_offset": offset,
            "metadata": ""}


def group(name, state=None, members=0, protocol=None):
    return {"kind": GROUP, "group": name, "group_state": state, "members": members, "protocol_type": protocol}


def plan(spark, zk_rows, kafka_rows, policy=Policy()):
    zk = spark.createDataFrame(pa.Table.from_pylist(zk_rows, schema=ZK_SCHEMA))
    kafka = spark.createDataFrame(pa.Table.from_pylist(kafka_rows, schema=KAFKA_SCHEMA))
    table = _conform(offset_diff(zk, kafka, policy).orderBy("group", "topic", "partition").toArrow())
    assert table.schema == s.PLAN_SCHEMA
    return {(r["group"], r["topic"], r["partition"]): r for r in table.to_pylist()}


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
    ]
    kafka = parts + [committed("plain", "t", 1, 60), committed("plain", "t", 2, 80),
                     committed("plain", "t", 3, 90),                   # KAFKA_ONLY
                     committed("stranger", "t", 0, 1),                 # not a ZooKeeper group: not reported
                     group("plain", "Empty", 0, ""), group("live", "Stable", 3, "consumer")]
    rows = plan(spark, zk, kafka)
    got = {key: r["status"] for key, r in rows.items()}
    assert got == {
        ("plain", "t", 0): s.MIGRATE, ("plain", "t", 1): s.IN_SYNC, ("plain", "t", 2): s.CONFLICT,
        ("plain", "t", 3): s.KAFKA_ONLY, ("range", "t", 0): s.BELOW_LOG_START, ("range", "t", 1): s.ABOVE_LOG_END,
        ("range", "gone", 0): s.UNKNOWN_PARTITION, ("range", "t", 9): s.UNKNOWN_PARTITION,
        ("bad", "t", 0): s.MALFORMED, ("bad", "t", 1): s.UNREADABLE, ("live", "t", 0): s.GROUP_ACTIVE_KAFKA,
        ("old", "t", 0): s.GROUP_ACTIVE_ZK,
    }
    assert set(got.values()) == set(s.STATUSES) - {s.UNTRANSLATABLE}   # --translate-via-mm2 only
    migrate = rows[("plain", "t", 0)]
    assert (migrate["planned_offset"], migrate["action"], migrate["lag"]) == (50, s.COMMIT, 50)
    conflict = rows[("plain", "t", 2)]
    assert (conflict["planned_offset"], conflict["action"], conflict["zk_minus_kafka"]) == (None, s.SKIP, -10)
    assert conflict["reason"] == "Kafka has 80, ZooKeeper 70"
    assert rows[("plain", "t", 1)]["action"] == rows[("plain", "t", 3)]["action"] == s.NOTHING
    assert rows[("live", "t", 0)]["reason"].startswith("Kafka group is Stable with 3 member(s)")
    assert rows[("bad", "t", 0)]["zk_raw"] == "1.5E2"


def test_precedence_first_matching_status_wins(spark):
    parts = [partition("t", 0, start=10, end=100)]
    zk = [zk_row("a", "t", 0, 5, consumers=1),            # live in ZK and below log start: GROUP_ACTIVE_ZK
          zk_row("b", "t", 0, 50, consumers=1),           # live in ZK but already equal: IN_SYNC
          zk_row("c", "t", 0, 500),                       # above log end and conflicting: ABOVE_LOG_END
          zk_row("d", "gone", 0, None, status="MALFORMED")]  # malformed on a missing topic: MALFORMED
    kafka = parts + [committed("b", "t", 0, 50), committed("c", "t", 0, 20)]
    got = {k[0]: r["status"] for k, r in plan(spark, zk, kafka).items()}
    assert got == {"a": s.GROUP_ACTIVE_ZK, "b": s.IN_SYNC, "c": s.ABOVE_LOG_END, "d": s.MALFORMED}


def test_live_zk_consumers_can_be_allowed(spark):
    rows = plan(spark, [zk_row("old", "t", 0, 50, consumers=2)], [partition("t", 0)],
                Policy(allow_live_zk_consumers=True))
    assert rows[("old", "t", 0)]["status"] == s.MIGRATE


@pytest.mark.parametrize("policy, expected", [
    ("skip", None), ("fail", None), ("zk", 70), ("kafka", 80), ("max", 80)])
def test_on_conflict_policies(spark, policy, expected):
    rows = plan(spark, [zk_row("g", "t", 0, 70)], [partition("t", 0), committed("g", "t", 0, 80)],
                Policy(on_conflict=policy))
    row = rows[("g", "t", 0)]
    assert row["status"] == s.CONFLICT
    assert row["planned_offset"] == expected
    assert row["action"] == (s.SKIP if expected is None else s.COMMIT)


@pytest.mark.parametrize("policy, below, above", [("skip", None, None), ("clamp", 10, 100), ("commit", 5, 500)])
def test_out_of_range_policies(spark, policy, below, above):
    rows = plan(spark, [zk_row("g", "t", 0, 5), zk_row("g", "t", 1, 500)],
                [partition("t", 0, 10, 100), partition("t", 1, 10, 100)], Policy(out_of_range=policy))
    assert rows[("g", "t", 0)]["status"] == s.BELOW_LOG_START
    assert rows[("g", "t", 1)]["status"] == s.ABOVE_LOG_END
    assert (rows[("g", "t", 0)]["planned_offset"], rows[("g", "t", 1)]["planned_offset"]) == (below, above)


def test_two_layouts_for_one_partition_keep_the_latest(spark):
    later = T0 + dt.timedelta(hours=1)
    zk = [zk_row("g", "t", 0, 40, layout="standard", mtime=T0),
          zk_row("g", "t", 0, 45, layout="kafka-1.1.0-offset", mtime=later),
          zk_row("h", "t", 0, None, status="MALFORMED", layout="standard", mtime=later),
          zk_row("h", "t", 0, 30, layout="kafka-1.1.0-offset", mtime=T0)]
    rows = plan(spark, zk, [partition("t", 0)])
    assert len(rows) == 2
    assert (rows[("g", "t", 0)]["zk_offset"], rows[("g", "t", 0)]["layout"]) == (45, "kafka-1.1.0-offset")
    # The newer value is MALFORMED: it stands for the partition and blocks, the older 30 is not written (issue 16).
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
