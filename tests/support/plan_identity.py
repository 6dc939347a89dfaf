"""The diff's one-shuffle query against the joins it replaced (tests/perf/joined_diff.py): both plans of
the same snapshots, the check that they are the same, and snapshots with the rows the two could treat
differently."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from joined_diff import joined_diff

from migrate.diff import offset_diff as od
from migrate.diff import schema as s
from migrate.diff.run import _conform
from migrate.kafka.snapshot import GROUP, KAFKA_SCHEMA, OFFSET, PARTITION, REFUSED
from migrate.zk.reader import SCHEMA as ZK_SCHEMA

from support.frames import commit_time

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
OLD = "kafka-1.1.0-offset"
KEYS = [name for name, _ in s.PLAN_ORDER]
POLICIES = [od.Policy(),
            od.Policy(on_conflict="max", out_of_range="clamp", rewrite_zk=True),
            od.Policy(on_conflict="zk", out_of_range="commit", allow_live_zk_consumers=True),
            od.Policy(on_conflict="kafka", out_of_range="clamp", zk_holds_last=True),   # moves blocked
            od.Policy(on_conflict="fail", zk_holds_last=True),
            od.Policy(on_conflict="kafka", out_of_range="clamp", writes_zk=False)]


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
        zk_row("g", "t", 0, 40), zk_row("g", "t", 1, 40),        # taken over; committed before ZooKeeper's write
        zk_row("a", "p", 0, 5),                                  # a topic Kafka would not describe
    ]
    kafka = [{"kind": PARTITION, "topic": "t", "partition": p, "log_start": 0, "log_end": 100, "leader": 0}
             for p in range(6)]
    kafka += [{"kind": PARTITION, "topic": "v", "partition": p, "log_start": 10, "log_end": 20} for p in (0, 1)]
    kafka += [{"kind": PARTITION, "topic": "u", "partition": 0, "log_start": None, "log_end": None,
               "error": "no leader"}, {"kind": REFUSED, "topic": "p", "error": "may not describe topic p"}]
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
    kafka += [{"kind": OFFSET, "group": "g", "topic": "t", "partition": p, "committed_offset": o, "metadata": ""}
              for p, o in ((0, 45), (1, 30))]
    kafka += [{"kind": GROUP, "group": "g", "group_state": "Empty", "members": 0, "protocol_type": "consumer"}]
    kafka += [commit_time("g", "t", p, at, offset=o)
              for p, o, at in ((0, 45, T0 + dt.timedelta(minutes=5)), (1, 30, T0 - dt.timedelta(minutes=5)))]
    return pa.Table.from_pylist(zk, schema=ZK_SCHEMA), pa.Table.from_pylist(kafka, schema=KAFKA_SCHEMA)
