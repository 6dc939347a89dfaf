"""The diff's one-shuffle query (issue 18) plans exactly what the joins before it planned: every row,
every status, every column, in the same order.

`joined_diff` (tests/perf/joined_diff.py) is the query as it was before: a dedupe window, a full outer
join, a left-semi join and two left joins, with the same status, reason and planning columns. Both run
on a real local Spark, on the benchmark's synthetic snapshots, on hand-made edge cases and on random
snapshots, under several policies. (test_plan_identity_run.py does the same for `run_diff`'s local
path, where Spark writes the parts and the driver copies them.)
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate.diff import offset_diff as od
from migrate.diff import schema as s
from migrate.diff.run import _conform, spark_session
from migrate.kafka.snapshot import GROUP, KAFKA_SCHEMA, OFFSET, PARTITION
from migrate.zk.reader import SCHEMA as ZK_SCHEMA

sys.path.insert(0, str(Path(__file__).parents[1] / "perf"))
import bench_diff  # noqa: E402
from joined_diff import joined_diff  # noqa: E402

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
OLD = "kafka-1.1.0-offset"
KEYS = [name for name, _ in s.PLAN_ORDER]
POLICIES = [od.Policy(),
            od.Policy(on_conflict="max", out_of_range="clamp", rewrite_zk=True),
            od.Policy(on_conflict="zk", out_of_range="commit", allow_live_zk_consumers=True),
            od.Policy(on_conflict="kafka", out_of_range="clamp", zk_holds_last=True),   # moves blocked
            od.Policy(on_conflict="fail", zk_holds_last=True),
            od.Policy(on_conflict="kafka", out_of_range="clamp", writes_zk=False)]


@pytest.fixture(scope="module")
def spark():
    session = spark_session("local[2]", "zk2kafka-unit-identity")
    yield session
    session.stop()


def both_plans(spark, zk: pa.Table, kafka: pa.Table, policy: od.Policy) -> tuple[pa.Table, pa.Table]:
    """(new, reference) plans as Arrow tables in (group, topic, partition) order: the reference
    ordered by Spark, the new one as `offset_diff` leaves it, over up to eight partitions."""
    zk_frame, kafka_frame = spark.createDataFrame(zk), spark.createDataFrame(kafka)
    splits = od.group_splits(zk["group"], 8)
    new = _conform(od.offset_diff(zk_frame, kafka_frame, policy, splits=splits).toArrow())
    old = _conform(joined_diff(zk_frame, kafka_frame, policy).orderBy(*KEYS).toArrow())
    return new, old


def assert_same_plan(new: pa.Table, old: pa.Table) -> None:
    assert new.schema == old.schema == s.PLAN_SCHEMA
    assert new.num_rows == old.num_rows
    # Rows with equal keys (unlistable directories) may come in either order from either query.
    new_rows, old_rows = new.to_pylist(), old.to_pylist()
    assert [tuple(r[k] for k in KEYS) for r in new_rows] == [tuple(r[k] for k in KEYS) for r in old_rows]
    assert sorted(map(repr, new_rows)) == sorted(map(repr, old_rows))
    if len({tuple(r[k] for k in KEYS) for r in new_rows}) == len(new_rows):
        assert new_rows == old_rows


def zk_row(group, topic, partition, offset=None, status="OK", consumers=0, layout="standard", mtime=T0,
           raw=None, version=3, topic_ctime=None):
    return {"group": group, "topic": topic, "partition": partition, "offset": offset,
            "raw": raw if raw is not None else str(offset), "status": status,
            "reason": None if status == "OK" else f"{status.lower()} value", "mtime": mtime, "ctime": T0,
            "version": version, "layout": layout, "mzxid": 7,
            "path": f"/consumers/{group}/{'offsets' if layout == 'standard' else 'offset'}/{topic}/{partition}",
            "zk_consumers": consumers, "zk_owned_partitions": 0, "topic_ctime": topic_ctime}


def edge_cases() -> tuple[pa.Table, pa.Table]:
    """Snapshots with the rows a join and a window could treat differently."""
    later = T0 + dt.timedelta(seconds=1)
    zk = [
        zk_row("a", "t", 0, 5), zk_row("a", "t", 1, 0),                                   # offset 0: zk_holds_last
        zk_row("a", "t", 2, 40, layout=OLD), zk_row("a", "t", 2, 45, mtime=later),
        zk_row("a", "t", 3, None, "MALFORMED", raw="x", mtime=later), zk_row("a", "t", 3, 30, layout=OLD),
        zk_row("a", "t", 4, 9, mtime=None, version=None), zk_row("a", "t", 4, 8, layout=OLD),
        zk_row("a", "t", 5, 9), zk_row("a", "t", 5, 10, layout=OLD),                      # same mtime
        zk_row("a", None, None, None, "UNREADABLE", raw=""),                                # unlistable offsets dir
        zk_row("a", None, None, None, "UNREADABLE", raw="", layout=OLD),
        zk_row("a", "u", None, None, "UNREADABLE", raw=""),                                 # unlistable topic dir
        zk_row("b", None, None, None, "UNREADABLE", raw=""),                                # a group of only that
        zk_row("c", "t", 0, 500, consumers=2), zk_row("c", "gone", 0, 3),                 # live, out of range
        zk_row("c", "t", 1, 50, consumers=2),                                               # live
        zk_row("d", "t", 0, 1), zk_row("d", "t", 1, 2, consumers=1),                        # unknown to Kafka
        zk_row("a", "v", 0, 5), zk_row("a", "v", 1, 50),                                    # out of range
        zk_row("e", "t", 0, 50), zk_row("e", "t", 9, 50),                                   # no such partition
        zk_row("f", "t", 0, 50, topic_ctime=later), zk_row("f", "t", 1, 50, topic_ctime=T0),  # topic recreated
        zk_row("f", "v", 0, 5), zk_row("f", "v", 1, 15),                  # equal in both, below the log start
    ]
    kafka = [{"kind": PARTITION, "topic": "t", "partition": p, "log_start": 0, "log_end": 100, "leader": 0}
             for p in range(6)]
    kafka += [{"kind": PARTITION, "topic": "v", "partition": p, "log_start": 10, "log_end": 20} for p in (0, 1)]
    kafka += [{"kind": PARTITION, "topic": "u", "partition": 0, "log_start": None, "log_end": None,
               "error": "no leader"}]
    kafka += [{"kind": OFFSET, "group": "a", "topic": "t", "partition": p, "committed_offset": o, "metadata": m}
              for p, o, m in ((0, 5, ""), (2, 44, "old"), (3, 1, None), (4, 9, "x"), (6, 3, ""))]
    kafka += [{"kind": OFFSET, "group": "a", "topic": "v", "partition": 1, "committed_offset": 30, "metadata": ""},
              {"kind": OFFSET, "group": "f", "topic": "v", "partition": 0, "committed_offset": 5, "metadata": ""},
              {"kind": OFFSET, "group": "f", "topic": "v", "partition": 1, "committed_offset": 9, "metadata": ""}]
    kafka += [{"kind": OFFSET, "group": "b", "topic": "t", "partition": 0, "committed_offset": 4, "metadata": ""},
              {"kind": OFFSET, "group": "stranger", "topic": "t", "partition": 0, "committed_offset": 4},
              {"kind": OFFSET, "group": "e", "topic": "t", "partition": 9, "committed_offset": 50}]
    kafka += [{"kind": GROUP, "group": "a", "group_state": "Empty", "members": 0, "protocol_type": "consumer"},
              {"kind": GROUP, "group": "b", "group_state": None, "members": 0},
              {"kind": GROUP, "group": "c", "group_state": "Stable", "members": 2, "protocol_type": "consumer"},
              {"kind": GROUP, "group": "e", "group_state": "Dead", "members": None},
              {"kind": GROUP, "group": "stranger", "group_state": "Stable", "members": 1}]
    return pa.Table.from_pylist(zk, schema=ZK_SCHEMA), pa.Table.from_pylist(kafka, schema=KAFKA_SCHEMA)


@pytest.mark.parametrize("policy", POLICIES, ids=repr)
def test_edge_cases_plan_as_the_joins_did(spark, policy):
    new, old = both_plans(spark, *edge_cases(), policy)
    live_zk_allowed = {s.GROUP_ACTIVE_ZK} if policy.allow_live_zk_consumers else set()
    # UNTRANSLATABLE comes only from --translate-via-mm2's rows (test_translate.py).
    assert {r["status"] for r in old.to_pylist()} == set(s.STATUSES) - live_zk_allowed - {s.UNTRANSLATABLE}
    assert_same_plan(new, old)


@pytest.mark.parametrize("policy", POLICIES[:2], ids=repr)
def test_benchmark_snapshots_plan_as_the_joins_did(spark, policy):
    zk, kafka = bench_diff.synthesize(groups=200, partitions=50, topics=20, topic_partitions=5)   # 10,000 offsets
    new, old = both_plans(spark, zk, kafka, policy)
    assert new.num_rows == 10_000 + 20
    assert_same_plan(new, old)


def test_one_shuffle_and_one_sort_for_the_dedupe_the_match_and_the_order(spark):
    """The plan's rows cross the network once and are sorted once: the partition by group at the
    given splits serves the window and the plan's order, with no sampling of a range partition;
    only Kafka's partition list is broadcast."""
    zk, kafka = edge_cases()
    frame = od.offset_diff(spark.createDataFrame(zk), spark.createDataFrame(kafka), od.Policy(),
                           splits=["b", "d"])
    physical = frame._jdf.queryExecution().executedPlan().toString()
    assert physical.count("Exchange shufflepartitionidpassthrough") == 1, physical
    assert "rangepartitioning" not in physical and "hashpartitioning" not in physical, physical
    assert "SortMergeJoin" not in physical, physical
    assert physical.count("Sort [") == 1, physical
    assert physical.count("BroadcastExchange") == 1, physical


@pytest.mark.parametrize("partitions", [1, 2, 3, 4, 8])
def test_group_splits_balance_whole_groups_in_spark_order(partitions):
    rows = {"b": 5, "a": 5, "c": 10, "d": 1, "é": 3, "Z": 2}    # "Z" < "a" < ... < "é" as bytes
    groups = pa.array([g for g, n in rows.items() for _ in range(n)])
    splits = od.group_splits(groups, partitions)
    assert splits == sorted(splits, key=lambda g: g.encode()) and len(set(splits)) == len(splits)
    assert set(splits) <= set(rows) - {"Z"} and len(splits) <= partitions - 1
    if partitions == 2:   # 26 rows: "Z", "a", "b" (12) | "c", "d", "é" (14)
        assert splits == ["c"]
    if partitions == 4:
        assert splits == ["a", "c"]   # shares of 6.5, 13 and 19.5 rows: "a" opens at 2, "c" at 12 (twice)
    assert od.group_splits(pa.array([], pa.string()), partitions) == []
    assert od.group_splits(pa.array(["x"] * 9), partitions) == []


GROUPS, TOPICS = ["g0", "g1", "g2"], ["t0", "t1", None]


@st.composite
def snapshots(draw):
    """Small random snapshots: repeated keys under two layouts, unlistable rows, offsets on both sides."""
    zk, znodes = [], set()
    for _ in range(draw(st.integers(0, 14))):
        group, topic = draw(st.sampled_from(GROUPS)), draw(st.sampled_from(TOPICS))
        partition = None if topic is None else draw(st.sampled_from([0, 1, None]))
        layout = draw(st.sampled_from(["standard", OLD]))
        if partition is not None and (group, topic, partition, layout) in znodes:
            continue   # one znode per key and layout: two would tie, and either query may keep either
        znodes.add((group, topic, partition, layout))
        status = draw(st.sampled_from(["OK", "OK", "OK", "MALFORMED", "UNREADABLE"]))
        offset = draw(st.integers(0, 12)) if status == "OK" else None
        mtime = draw(st.sampled_from([T0, T0 + dt.timedelta(seconds=1), None]))
        zk.append(zk_row(group, topic, partition, offset, status, consumers=draw(st.sampled_from([0, 0, 1])),
                         mtime=mtime, layout=layout, topic_ctime=draw(st.sampled_from([None, None, T0]))))
    kafka = [{"kind": PARTITION, "topic": t, "partition": p, "log_start": 2, "log_end": 10}
             for t in ("t0", "t1") for p in (0, 1) if draw(st.booleans())]
    seen = set()
    for _ in range(draw(st.integers(0, 6))):   # one committed offset per key, as OffsetFetch answers
        key = (draw(st.sampled_from(GROUPS + ["h"])), draw(st.sampled_from(["t0", "t1"])), draw(st.integers(0, 2)))
        if key not in seen:
            seen.add(key)
            kafka.append({"kind": OFFSET, "group": key[0], "topic": key[1], "partition": key[2],
                          "committed_offset": draw(st.integers(0, 12)),
                          "metadata": draw(st.sampled_from(["", "m", None]))})
    for group in GROUPS + ["h"]:
        if draw(st.booleans()):
            kafka.append({"kind": GROUP, "group": group,
                          "group_state": draw(st.sampled_from(["Empty", "Stable", None])),
                          "members": draw(st.sampled_from([0, 2, None])),
                          "protocol_type": draw(st.sampled_from(["consumer", "", None]))})
    return pa.Table.from_pylist(zk, schema=ZK_SCHEMA), pa.Table.from_pylist(kafka, schema=KAFKA_SCHEMA)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(snapshots(), st.sampled_from(POLICIES))
def test_random_snapshots_plan_as_the_joins_did(spark, snapshot, policy):
    assert_same_plan(*both_plans(spark, *snapshot, policy))
