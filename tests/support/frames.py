"""Hand-made rows for the diff's inputs, and the plan `offset_diff` makes of them on a real local Spark."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from migrate.diff import schema as s
from migrate.diff.offset_diff import Policy, offset_diff
from migrate.diff.run import _conform
from migrate.kafka import takeover
from migrate.kafka.offsets_log.group import NO_MEMBER, Commit, Membership
from migrate.kafka.offsets_log.schema import Member
from migrate.kafka.snapshot import COMMIT, GROUP, KAFKA_SCHEMA, OFFSET, PARTITION
from migrate.zk.reader import SCHEMA as ZK_SCHEMA

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def zk_row(group, topic, partition, offset=None, status="OK", consumers=0, layout="standard", mtime=T0, raw=None,
           topic_ctime=None):
    return {"group": group, "topic": topic, "partition": partition, "offset": offset,
            "raw": raw if raw is not None else str(offset), "status": status,
            "reason": None if status == "OK" else f"{status.lower()} value", "mtime": mtime, "ctime": T0,
            "version": 3, "layout": layout, "path": f"/consumers/{group}/offsets/{topic}/{partition}",
            "zk_consumers": consumers, "zk_owned_partitions": 0, "topic_ctime": topic_ctime}


def partition(topic, p, start=0, end=100, error=None):
    return {"kind": PARTITION, "topic": topic, "partition": p, "log_start": start, "log_end": end,
            "leader": 0, "error": error}


def committed(group, topic, p, offset, metadata=""):
    return {"kind": OFFSET, "group": group, "topic": topic, "partition": p, "committed_offset": offset,
            "metadata": metadata}


# The group as its records stood at a commit (migrate/kafka/offsets_log/group.py): a member assigned the partition, a
# group that was Empty, one no consumer ever joined.
MEMBER_AT = Membership(2, 4, "consumer", Member("m-1", "app", "/10.0.0.1", frozenset({("t", 0)})), True)
EMPTY_AT = Membership(0, 5, "consumer", None, None)
NEVER_JOINED = NO_MEMBER


def commit_time(group, topic, p, at: dt.datetime, offset=45, by: Membership = MEMBER_AT):
    """The record that wrote Kafka's value of a partition (`offset`, committed `at`, the group as `by`), as the
    snapshot's `commit` rows say it: its writer and words from the takeover rule."""
    ms = int(at.timestamp() * 1000)
    writer, who = takeover.committer(Commit(offset, "", ms, None, 10, by), None, watching=False)
    return {"kind": COMMIT, "group": group, "topic": topic, "partition": p, "committed_offset": offset,
            "commit_ms": ms, "commit_by": writer, "commit_who": who}


def group(name, state=None, members=0, protocol=None):
    return {"kind": GROUP, "group": name, "group_state": state, "members": members, "protocol_type": protocol}


def plan(spark, zk_rows, kafka_rows, policy=Policy()):
    zk = spark.createDataFrame(pa.Table.from_pylist(zk_rows, schema=ZK_SCHEMA))
    kafka = spark.createDataFrame(pa.Table.from_pylist(kafka_rows, schema=KAFKA_SCHEMA))
    table = _conform(offset_diff(zk, kafka, policy).orderBy("group", "topic", "partition").toArrow())
    assert table.schema == s.PLAN_SCHEMA
    return {(r["group"], r["topic"], r["partition"]): r for r in table.to_pylist()}
