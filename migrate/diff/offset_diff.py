"""OffsetDiff: the ZooKeeper and Kafka snapshots joined into plan rows.

Pure DataFrame transformations, no I/O.

Each row is then judged (diff/judge.py): exactly one status, the first of `schema.PRECEDENCE`
that applies, and a `planned_offset` from the policies. The same code runs on `local[*]` and on a
cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from migrate.diff.judge import Policy, judged, plan_columns
from migrate.kafka.snapshot import COMMIT, GROUP, OFFSET, PARTITION, REFUSED
from migrate.zk import layouts

__all__ = ["Policy", "dedupe_zk", "group_splits", "offset_diff"]


# The three kinds of rows side by side in one frame (`_side`), in this order within a key: Kafka's
# committed offset first, then the ZooKeeper rows in `layouts.preference` order, so that the first
# ZooKeeper row of a key is the one that stands for it and the row just before it is Kafka's.
OFFSET_SIDE, ZK_SIDE, GROUP_SIDE = 0, 1, 2
KEYS = ["group", "topic", "partition"]
# The shuffle partition a row goes to, from its group: see `_part_of`.
PART = "_part"


def _preference() -> list[Column]:
    """The terms of `layouts.preference`, in its order, as a Window's ordering of ZooKeeper rows."""
    mtime = F.col("mtime")
    return [mtime.isNotNull().asc(),                     # unknown mtime first: it may be the newest
            mtime.desc_nulls_last(),                     # then the newest
            (F.col("status") == layouts.OK).asc(),       # equal mtimes: a row that is not OK first
            F.coalesce(F.col("layout"), F.lit("")).asc()]  # only to be deterministic


def group_splits(groups: pa.Array | pa.ChunkedArray, partitions: int) -> list[str]:
    """Where to split rows of these groups (a name per row) into at most `partitions` of about
    equal rows, each group whole: the names opening the second partition onwards, sorted.

    Sorted as Spark compares strings (by their UTF-8 bytes), so `_part_of` agrees with the order
    the plan is written in.
    """
    if partitions <= 1 or len(groups) == 0:
        return []
    counts = pc.value_counts(groups.cast(pa.string()))
    order = pc.sort_indices(counts.field("values"))
    names, rows = counts.field("values").take(order), counts.field("counts").take(order)
    before = pc.subtract(pc.cumulative_sum(rows), rows)    # rows of the groups sorted before each
    total = pc.sum(rows).as_py()
    # Partition i opens with the last group that starts at or before its share of the rows.
    firsts = sorted({pc.sum(pc.less_equal(before, total * i / partitions)).as_py() - 1
                     for i in range(1, partitions)})
    return [names[i].as_py() for i in firsts if 0 < i < len(names)]


def _part_of(splits: Sequence[str]) -> Column:
    """The partition of a row's group: partition i holds the groups from splits[i - 1] (included)
    to splits[i] (excluded), so the partitions, in their order, are in group order.

    Found by halving the splits (a tree of comparisons as deep as log2 of their number), not by
    a chain of them: a cluster's 200 partitions cost 8 comparisons a row.
    """
    group = F.col("group")

    def among(first: int, last: int) -> Column:
        if first == last:
            return F.lit(first)
        middle = (first + last + 1) // 2          # splits[middle - 1] opens partition `middle`
        return (F.when(group < splits[middle - 1], among(first, middle - 1))
                .otherwise(among(middle, last)))

    return among(0, len(splits))


def _zk_side(zk: DataFrame, carry: tuple[str, ...] = ()) -> DataFrame:
    return zk.select(*KEYS, "offset", "raw", "status", "reason", "version", "mzxid", "mtime",
                     "path", "layout", "zk_consumers", "topic_ctime", *carry,
                     F.lit(ZK_SIDE).alias("_side"))


def _side_by_side(zk: DataFrame, kafka: DataFrame | None, carry: tuple[str, ...] = (),
                  splits: Sequence[str] = ()) -> DataFrame:
    """ZooKeeper's rows, Kafka's committed offsets and its groups in one frame, partitioned by
    group at `splits` (`_part_of`).

    One exchange serves everything after it: the window of `_matched` finds each group's rows
    together, and sorting them for it puts the plan in order, partition by partition. A plainer
    query of joins shuffled the plan's rows three times (the dedupe window, the full outer join,
    the orderBy) and ZooKeeper's groups once more. The splits are given, not sampled: a range
    partition reads its input twice, once to sample it (a second of the 1M-offset diff).
    """
    rows = _zk_side(zk, carry)
    if kafka is None:   # ZooKeeper's rows alone (dedupe_zk): Kafka's columns are there, all null
        rows = rows.select("*", *(F.lit(None).cast(kind).alias(name) for name, kind in (
            ("committed_offset", "bigint"), ("metadata", "string"), ("group_state", "string"),
            ("members", "int"), ("protocol_type", "string"))))
    else:
        offsets = kafka.filter(F.col("kind") == OFFSET).select(
            *KEYS, "committed_offset", "metadata", F.lit(OFFSET_SIDE).alias("_side"))
        groups = kafka.filter(F.col("kind") == GROUP).select(
            "group", "group_state", "members", "protocol_type", F.lit(GROUP_SIDE).alias("_side"))
        rows = (rows.unionByName(offsets, allowMissingColumns=True)
                .unionByName(groups, allowMissingColumns=True))
    return (rows.select("*", _part_of(splits).alias(PART))
            .repartitionById(len(splits) + 1, PART))


def _matched(rows: DataFrame, carry: tuple[str, ...] = ()) -> DataFrame:
    """The rows of `_side_by_side` that become plan rows, Kafka's values beside ZooKeeper's.

    What a full outer join on (group, topic, partition) after the dedupe gave, computed with one
    window over each group's rows, in key order, which the partition by group keeps together:
    - ZooKeeper: per key the row `layouts.pick` chooses (the key's first; see `dedupe_zk`); rows
      without a partition (a directory that could not be listed) all stay, and match nothing;
    - Kafka's committed offset and metadata (the row before it, when of the same key) beside it; a
      committed offset whose key has no ZooKeeper row (the row after it is of another key) is a row
      of its own (KAFKA_ONLY), for groups found in ZooKeeper only: Kafka's other groups are not
      ours to report;
    - the group's state, members and protocol type, from its group row.
    The snapshot holds at most one committed offset per key and one group row per group (one
    OffsetFetch answer per group), which is what makes this window equal to the joins.
    `carry`: ZooKeeper's columns passed through as they are (null on KAFKA_ONLY rows).
    """
    side, topic, partition = F.col("_side"), F.col("topic"), F.col("partition")
    is_zk, is_offset = side == ZK_SIDE, side == OFFSET_SIDE
    keyed = F.col("group").isNotNull() & topic.isNotNull() & partition.isNotNull()
    # By partition, then group: the partition is the group's (`_part_of`); naming it lets the
    # window use the exchange of `_side_by_side` as it is.
    in_order = Window.partitionBy(PART, "group").orderBy(topic, partition, side, *_preference())
    whole_group = in_order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)

    def beside(step, column: str) -> Column:
        """`column` of the row before (F.lag) or after (F.lead), when it is of the same key (a
        null topic or partition alike, as a window's partition takes it)."""
        same_key = (step(topic).over(in_order).eqNullSafe(topic)
                    & step(partition).over(in_order).eqNullSafe(partition)
                    & step(F.lit(1)).over(in_order).isNotNull())    # there is a row there
        return F.when(same_key, step(F.col(column)).over(in_order))

    def of_group(column: str) -> Column:
        return F.max(F.when(side == GROUP_SIDE, F.col(column))).over(whole_group)

    rows = rows.select(
        "*", beside(F.lag, "_side").alias("_before"), beside(F.lead, "_side").alias("_after"),
        beside(F.lag, "committed_offset").alias("_key_offset"),
        beside(F.lag, "metadata").alias("_key_metadata"),
        F.max(is_zk).over(whole_group).alias("_group_in_zk"),
        of_group("group_state").alias("_group_state"), of_group("members").alias("_members"),
        of_group("protocol_type").alias("_protocol_type"))
    # A key's rows are together: its first ZooKeeper row has no ZooKeeper row of the key before it.
    zk_row = is_zk & (partition.isNull() | F.coalesce(F.col("_before") != ZK_SIDE, F.lit(True)))
    matched = keyed & F.coalesce(F.col("_after") == ZK_SIDE, F.lit(False))
    kafka_only = is_offset & F.col("group").isNotNull() & F.col("_group_in_zk") & ~matched
    kafka_beside = keyed & F.coalesce(F.col("_before") == OFFSET_SIDE, F.lit(False))
    in_kafka_group = F.col("group").isNotNull()
    return rows.filter(zk_row | kafka_only).select(
        PART, *KEYS, "offset", "raw", "status", "reason", "version", "mzxid", "mtime", "path",
        "layout", "zk_consumers", "topic_ctime", *carry,
        F.when(is_zk, F.lit(True)).alias("_in_zk"),
        F.when(is_offset, F.col("committed_offset"))
        .when(kafka_beside, F.col("_key_offset")).alias("kafka_offset"),
        F.when(is_offset, F.col("metadata"))
        .when(kafka_beside, F.col("_key_metadata")).alias("kafka_metadata"),
        F.when(in_kafka_group, F.col("_group_state")).alias("group_state"),
        F.when(in_kafka_group, F.col("_members")).alias("kafka_members"),
        F.when(in_kafka_group, F.col("_protocol_type")).alias("protocol_type"))


def dedupe_zk(zk: DataFrame) -> DataFrame:
    """One ZooKeeper row per (group, topic, partition), as `offset_diff` keeps them.

    A partition can carry offsets under two layouts (`offsets/` and Kafka 1.1.0's
    `offset/`); the row that stands for it is the one `migrate.zk.layouts.pick` chooses,
    which `sync` uses too: the one written last, whatever its status, so a newer MALFORMED
    or UNREADABLE value blocks instead of an older readable one moving the consumer back.
    The Window orders by the terms of `layouts.preference`, in its order.
    Rows without a partition (a directory that could not be listed) are kept as they are.
    """
    return _matched(_side_by_side(zk, None)).select(*_zk_side(zk).columns[:-1])


def offset_diff(zk: DataFrame, kafka: DataFrame, policy: Policy,
                carry: tuple[str, ...] = (), splits: Sequence[str] = ()) -> DataFrame:
    """Plan rows (columns of schema.PLAN_SCHEMA, then `carry`) for the snapshots `zk` against
    `kafka`, in plan order (group, topic, partition): partition after partition, each sorted.

    `carry` names columns of `zk` the plan rows take as they are: the translation's
    (diff/translate.py). `splits`: sorted group names, each opening a partition of its own
    (`group_splits`); none, one partition. Writing the frame as it is writes the plan in order, a
    part per partition; ordering it again (orderBy) costs a shuffle.
    """
    zk_rows = _matched(_side_by_side(zk, kafka, carry, splits), carry).select(
        PART, "group", "topic", "partition",
        F.col("offset").alias("zk_offset"), F.col("raw").alias("zk_raw"),
        F.col("status").alias("zk_status"), F.col("reason").alias("zk_reason"),
        F.col("version").alias("zk_version"), F.col("mzxid").alias("zk_mzxid"),
        F.col("mtime").alias("zk_mtime"),
        F.col("path").alias("zk_path"), "layout", "zk_consumers", "topic_ctime", "_in_zk",
        "kafka_offset", "kafka_metadata", "group_state", "kafka_members", "protocol_type",
        *carry)
    # Kafka's partitions are few beside the offsets (one row per partition of the topics read):
    # broadcast, the join keeps the rows where the partition by group put them.
    partitions = kafka.filter(F.col("kind") == PARTITION).select(
        "topic", "partition", "log_start", "log_end", F.col("error").alias("partition_error"),
        F.lit(True).alias("_in_kafka"))
    # A row without a partition number (unlistable directory) matches nothing in Kafka.
    rows = zk_rows.join(F.broadcast(partitions), ["topic", "partition"], "left")
    # The topics Kafka would not describe to zk2kafka (few), with the permission to grant.
    refused = kafka.filter(F.col("kind") == REFUSED).select(
        "topic", F.col("error").alias("_topic_refused"))
    rows = rows.join(F.broadcast(refused), ["topic"], "left")
    # Who committed Kafka's values, and when, for the groups holding one that names no zk2kafka
    # run (few beside the offsets, and broadcast so the rows stay where they are): the takeover
    # rule.
    commits = kafka.filter(F.col("kind") == COMMIT).select(
        *KEYS, F.col("commit_ms").alias("kafka_commit_ms"),
        F.col("committed_offset").alias("kafka_commit_offset"),
        F.col("commit_by").alias("kafka_commit_by"), F.col("commit_who").alias("kafka_commit_who"))
    rows = rows.join(F.broadcast(commits), KEYS, "left")
    # Groups that never reached Kafka have no row in the group list: fill them as absent with no
    # members.
    rows = rows.withColumn("kafka_members", F.coalesce("kafka_members", F.lit(0)))
    rows = judged(rows, policy)
    # Already so sorted by the window (and its order kept since): no sort is added.
    rows = rows.sortWithinPartitions(PART, *KEYS)
    return rows.select(*plan_columns(policy), *carry)
