"""The diff's one-shuffle query plans exactly what the joins before it planned: every row,
every status, every column, in the same order.

`joined_diff` (tests/perf/joined_diff.py) is the query as it was before: a dedupe window, a full outer
join, a left-semi join and two left joins, with the same status, reason and planning columns. Both run
on a real local Spark, on the benchmark's synthetic snapshots, on hand-made edge cases and on random
snapshots, under several policies. (test_plan_identity_run.py does the same for `run_diff`'s local
path, where Spark writes the parts and the driver copies them.)
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate.diff import offset_diff as od
from migrate.diff import schema as s
from migrate.kafka.snapshot import GROUP, KAFKA_SCHEMA, OFFSET, PARTITION
from migrate.zk.reader import SCHEMA as ZK_SCHEMA

import bench_diff
from support.plan_identity import OLD, POLICIES, T0, assert_same_plan, both_plans, edge_cases, zk_row


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
    only Kafka's partition list, the topics it would not describe and its commit times (of the
    groups holding a value no zk2kafka run wrote) are broadcast."""
    zk, kafka = edge_cases()
    frame = od.offset_diff(spark.createDataFrame(zk), spark.createDataFrame(kafka), od.Policy(),
                           splits=["b", "d"])
    physical = frame._jdf.queryExecution().executedPlan().toString()
    assert physical.count("Exchange shufflepartitionidpassthrough") == 1, physical
    assert "rangepartitioning" not in physical and "hashpartitioning" not in physical, physical
    assert "SortMergeJoin" not in physical, physical
    assert physical.count("Sort [") == 1, physical
    assert physical.count("BroadcastExchange") == 3, physical


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
