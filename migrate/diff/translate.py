"""Translation: ZooKeeper's offsets of the source cluster mapped onto a MirrorMaker 2 copy's
partitions, through MM2's offset syncs.

Pure DataFrame transformations, no I/O. `translate` turns the zk snapshot's rows into rows of the
same schema that speak of the target cluster (the remote topic, the translated offset), so that
`offset_diff` judges them against the target exactly as it judges untranslated rows, plus the
columns of TRANSLATION_SCHEMA, which the plan carries beside them.

The rule is MirrorMaker 2's own (OffsetSyncStore.translateDownstream): the sync that stands for an
upstream offset U is the latest one at or below it, (Us, Ds) with Us <= U.
- U == Us: the record at U is at Ds downstream; the offset is Ds exactly.
- U > Us: records Us+1 .. U-1 were replicated somewhere after Ds, or not at all (filtered,
  transaction markers, compacted away): their downstream place is unknown. Ds + 1 is the first
  place that can hold a record after Us, so nothing the old consumer had not read is skipped; the
  price is re-reading those of Us+1 .. U-1 that were replicated.
- no such sync (U below the partition's first sync, or a partition without syncs): no offset can
  be given without guessing; the row is UNTRANSLATABLE, a blocker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from migrate.diff import schema as s
from migrate.kafka.offset_syncs import DEFAULT, IDENTITY, SEPARATOR
from migrate.zk import layouts

TRANSLATION_COLUMNS = tuple(s.TRANSLATION_SCHEMA.names)


@dataclass(frozen=True)
class Translation:
    """How a run translates: the source cluster's MM2 alias, the replication policy, and the
    offset syncs snapshot (migrate/kafka/offset_syncs.py's SYNCS_SCHEMA)."""

    source_alias: str
    policy: str
    syncs: Path


_SYNC, _ZK = 0, 1   # in one partition's order, a sync before a ZooKeeper row of the same offset


def remote_topic(topic: Column, source_alias: str, policy: str) -> Column:
    """The name MirrorMaker 2 gives `topic`'s copy on the target: `<source alias>.<topic>` under
    DefaultReplicationPolicy, the same name under IdentityReplicationPolicy."""
    if policy == IDENTITY:
        return topic
    if policy != DEFAULT:
        raise ValueError(f"unknown replication policy {policy!r}")
    return F.when(topic.isNotNull(), F.concat(F.lit(source_alias + SEPARATOR), topic))


def valid_syncs(syncs: DataFrame) -> DataFrame:
    """The syncs that still hold: one is dropped when a later one (in the syncs topic's order) of
    the same source partition has an upstream offset at or below its own, or when any later one
    has a downstream offset below one before it.

    MirrorSourceTask emits such a sync when the upstream offsets went back (a restarted task
    re-replicating from its last committed position, a recreated source topic): the copies it
    writes then lie after the earlier syncs' downstream offsets, so those no longer say where the
    records after them are. (OffsetSyncStore drops every earlier sync then too.) A downstream
    offset that went back means the copy was truncated or recreated: every earlier sync may point
    into a log that is gone. What is left rises in upstream offset with the topic's order, so the
    latest sync at or below an offset is the one with the greatest upstream offset.
    (MM2 writes a partition's syncs into one partition of the syncs topic, partition 0, so their
    order there is the order they were written.)
    """
    partition = Window.partitionBy("topic", "partition", "sync_partition")
    later = partition.orderBy(F.col("sync_offset").desc()).rowsBetween(
        Window.unboundedPreceding, -1)
    earlier = partition.orderBy("sync_offset").rowsBetween(Window.unboundedPreceding, -1)
    went_back = F.col("downstream_offset") < F.max("downstream_offset").over(earlier)
    syncs = syncs.withColumn("_restart", F.when(went_back, F.col("sync_offset")))
    # Only the syncs from the last downstream rewind on, and of those the ones no later sync
    # rewinds upstream.
    since = F.max("_restart").over(partition)
    upstream_rewound = F.min("upstream_offset").over(later) <= F.col("upstream_offset")
    kept = ((since.isNull() | (F.col("sync_offset") >= since))
            & ~F.coalesce(upstream_rewound, F.lit(False)))
    return syncs.withColumn("_kept", kept).filter("_kept").drop("_restart", "_kept")


def translate(zk: DataFrame, syncs: DataFrame, source_alias: str, policy: str) -> DataFrame:
    """The zk snapshot's rows (its columns, then TRANSLATION_COLUMNS) as rows of the target.

    `topic` becomes the remote topic and `offset` the translated one. A readable offset with no sync
    at or below it gets status UNTRANSLATABLE and no offset; other rows keep their status (an
    UNREADABLE or MALFORMED value has nothing to translate).
    """
    columns = zk.columns
    remote = remote_topic(F.col("topic"), source_alias, policy)
    synced = valid_syncs(syncs).select(
        "topic", "partition", F.col("upstream_offset").alias("_key"),
        F.col("upstream_offset").alias("_sync_up"), F.col("downstream_offset").alias("_sync_down"),
        F.lit(_SYNC).alias("_side"))
    rows = zk.select("*", F.col("offset").alias("_key"), F.lit(_ZK).alias("_side"))
    both = rows.unionByName(synced, allowMissingColumns=True)
    # One window per source partition, in offset order, a sync before a ZooKeeper row at its own
    # offset: the last sync seen at a ZooKeeper row is the latest at or below its offset.
    in_order = (Window.partitionBy("topic", "partition").orderBy("_key", "_side")
                .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    whole = Window.partitionBy("topic", "partition")
    both = both.select(
        "*", F.last("_sync_up", ignorenulls=True).over(in_order).alias("sync_upstream"),
        F.last("_sync_down", ignorenulls=True).over(in_order).alias("sync_downstream"),
        F.max(F.col("_side") == _SYNC).over(whole).alias("_has_syncs"))
    rows = both.filter(F.col("_side") == _ZK)

    upstream, sync_up, sync_down = F.col("offset"), F.col("sync_upstream"), F.col("sync_downstream")
    translatable = (F.col("status") == layouts.OK) & upstream.isNotNull()
    found = translatable & sync_up.isNotNull()
    exact = upstream == sync_up
    translated = F.when(found, F.when(exact, sync_down).otherwise(sync_down + 1))
    # Records Us+1 .. U-1 may be read twice (see the module's docstring): at most U - Us - 1 of
    # them, fewer when some were not replicated. An exact match re-reads nothing.
    window = F.when(found, F.when(exact, F.lit(0)).otherwise(upstream - sync_up - 1))
    untranslatable = translatable & sync_up.isNull()
    why = F.when(F.coalesce(F.col("_has_syncs"), F.lit(False)), F.concat(
        F.lit("offset "), upstream.cast("string"), F.lit(" of "), F.col("topic"),
        F.lit(" is older than the first MirrorMaker 2 offset sync of its partition")))
    why = why.otherwise(F.concat(F.lit("no MirrorMaker 2 offset sync for "), F.col("topic"),
                                 F.lit(" partition "), F.col("partition").cast("string")))
    replaced = {
        "topic": remote,
        "offset": F.when(translatable, translated).otherwise(upstream),
        "status": F.when(untranslatable, F.lit(s.UNTRANSLATABLE)).otherwise(F.col("status")),
        "reason": F.when(untranslatable, why).otherwise(F.col("reason")),
    }
    return rows.select(
        *(replaced[c].alias(c) if c in replaced else F.col(c) for c in columns),
        F.col("topic").alias("upstream_topic"),
        F.when(translatable, upstream).alias("upstream_offset"),
        F.when(found, sync_up).alias("sync_upstream"),
        F.when(found, sync_down).alias("sync_downstream"),
        window.alias("redelivery_window"))
