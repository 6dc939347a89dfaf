"""offset_diff as it was before the one-shuffle query: the dedupe window, then a full outer join, a left-semi join
and two left joins (the plan's rows shuffled three times on a local master: the window, the full outer
join and the orderBy), composed with today's status, reason and planning columns.

Kept as the reference the one-shuffle query is checked against (tests/unit/test_plan_identity.py)
and as the baseline bench_diff.py runs beside it (`--compare`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from migrate.diff import judge
from migrate.diff import offset_diff as od
from migrate.kafka.snapshot import COMMIT, GROUP, OFFSET, PARTITION, REFUSED
from migrate.zk import layouts


def joined_diff(zk: DataFrame, kafka: DataFrame, policy: od.Policy) -> DataFrame:
    """offset_diff as it was before the one-shuffle query: the dedupe window, then the joins."""
    keyed = zk.filter(F.col("partition").isNotNull())
    mtime = F.col("mtime")
    rank = Window.partitionBy("group", "topic", "partition").orderBy(
        mtime.isNotNull().asc(), mtime.desc_nulls_last(), (F.col("status") == layouts.OK).asc(),
        F.coalesce(F.col("layout"), F.lit("")).asc())
    best = (keyed.withColumn("_rank", F.row_number().over(rank)).filter(F.col("_rank") == 1).drop("_rank")
            .unionByName(zk.filter(F.col("partition").isNull())))
    zk_rows = best.select(
        "group", "topic", "partition",
        F.col("offset").alias("zk_offset"), F.col("raw").alias("zk_raw"),
        F.col("status").alias("zk_status"), F.col("reason").alias("zk_reason"),
        F.col("version").alias("zk_version"), F.col("mzxid").alias("zk_mzxid"), F.col("mtime").alias("zk_mtime"),
        F.col("path").alias("zk_path"), "layout", "zk_consumers", "topic_ctime", F.lit(True).alias("_in_zk"))
    committed = kafka.filter(F.col("kind") == OFFSET).select(
        "group", "topic", "partition", F.col("committed_offset").alias("kafka_offset"),
        F.col("metadata").alias("kafka_metadata"))
    committed = committed.join(zk.select("group").distinct(), "group", "left_semi")
    partitions = kafka.filter(F.col("kind") == PARTITION).select(
        "topic", "partition", "log_start", "log_end", F.col("error").alias("partition_error"),
        F.lit(True).alias("_in_kafka"))
    refused = kafka.filter(F.col("kind") == REFUSED).select("topic", F.col("error").alias("_topic_refused"))
    groups = kafka.filter(F.col("kind") == GROUP).select(
        "group", "group_state", F.col("members").alias("kafka_members"), "protocol_type")
    commits = kafka.filter(F.col("kind") == COMMIT).select(
        "group", "topic", "partition", F.col("commit_ms").alias("kafka_commit_ms"),
        F.col("committed_offset").alias("kafka_commit_offset"), F.col("commit_by").alias("kafka_commit_by"),
        F.col("commit_who").alias("kafka_commit_who"))
    rows = (zk_rows.join(committed, ["group", "topic", "partition"], "full_outer")
            .join(partitions, ["topic", "partition"], "left")
            .join(refused, "topic", "left")
            .join(groups, "group", "left")
            .join(commits, ["group", "topic", "partition"], "left"))
    rows = rows.withColumn("kafka_members", F.coalesce("kafka_members", F.lit(0)))
    return judge.judged(rows, policy).select(*judge.plan_columns(policy))
