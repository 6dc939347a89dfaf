"""The judgement of each matched row: its status (the first of `schema.PRECEDENCE` that applies),
the offset the policies plan for it, what that does to ZooKeeper's offset, and why, in words.

Column expressions over the rows `offset_diff` matches across the two stores; no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from migrate.diff import schema as s
from migrate.kafka import takeover
from migrate.kafka.snapshot import IDLE_STATES
from migrate.kafka.values import NAMES_A_RUN


@dataclass(frozen=True)
class Policy:
    """How CONFLICT and out-of-range rows are planned, and whether live old consumers block."""

    on_conflict: str = "skip"       # skip | zk | kafka | max | fail
    out_of_range: str = "skip"      # skip | clamp | commit
    allow_live_zk_consumers: bool = False
    # ZooKeeper is written in `--offset-semantics last` form (the last processed offset, one less):
    # offset 0 has no such form (it would be -1, which the next scan calls MALFORMED), so it is
    # not planned.
    zk_holds_last: bool = False
    # The run writes ZooKeeper too (no --no-zk-write): a commit row's offset is set there as well.
    writes_zk: bool = True
    # --rewrite-zk-offsets: a row may set ZooKeeper to another offset than its own; without it
    # such a row is not planned (zk_change `blocked`).
    rewrite_zk: bool = False
    # The takeover rule's (migrate/kafka/takeover.py): the clock margin in force, in seconds
    # (--clock-margin widened by the lead of Kafka's clock over ZooKeeper's the Kafka snapshot
    # measured, migrate/kafka/clocks.py), and the custom --metadata the journal's runs committed
    # with (a value with it may be zk2kafka's own).
    clock_margin: float = takeover.MARGIN
    own_metadata: tuple[str, ...] = ()


def judged(rows: DataFrame, policy: Policy) -> DataFrame:
    """Rows matched across the stores with their status, the offset planned for them and what that
    does to ZooKeeper's offset (`_zk_change`)."""
    rows = rows.withColumn("status", _status(policy)).withColumn("_wanted", _planned(policy))
    wanted, none = F.col("_wanted"), F.lit(None).cast("bigint")
    moves_zk = F.lit(policy.writes_zk) & wanted.isNotNull() & (wanted != F.col("zk_offset"))
    blocked = moves_zk & F.lit(not policy.rewrite_zk)
    zero_under_last = F.lit(policy.zk_holds_last) & (wanted == 0)
    rows = rows.withColumn("planned_offset",
                           F.when(blocked | zero_under_last, none).otherwise(wanted))
    planned, zk_offset = F.col("planned_offset"), F.col("zk_offset")
    written_to_zk = F.lit(policy.writes_zk) & planned.isNotNull()
    return rows.withColumn("_zk_change", F.when(blocked, F.lit(s.ZK_BLOCKED))
                           .when(written_to_zk & (planned > zk_offset), F.lit(s.ZK_FORWARD))
                           .when(written_to_zk & (planned < zk_offset), F.lit(s.ZK_BACKWARD))
                           .otherwise(F.lit(s.ZK_UNCHANGED)))


def plan_columns(policy: Policy) -> list[Column]:
    """The plan's columns (PLAN_SCHEMA's, in its order) of `judged` rows."""
    change = F.col("_zk_change")
    return [
        "group", "topic", "partition", "status",
        _reason(policy).alias("reason"), _action().alias("action"), "planned_offset",
        "zk_offset", "zk_raw", "zk_status", "zk_version", "zk_mzxid", "zk_mtime", "zk_path",
        "layout", "zk_consumers",
        "kafka_offset", "kafka_metadata", "group_state", "kafka_members", "protocol_type",
        "log_start", "log_end",
        (F.col("log_end") - F.col("zk_offset")).alias("lag"),
        (F.col("zk_offset") - F.col("kafka_offset")).alias("zk_minus_kafka"),
        change.alias("zk_change"),
        F.when(change.isin(s.ZK_FORWARD, s.ZK_BACKWARD), F.col("planned_offset"))
        .when(change == s.ZK_BLOCKED, F.col("_wanted")).alias("zk_planned"),
        "topic_ctime"]


def _active_in_kafka() -> Column:
    state = F.col("group_state")
    return (F.col("kafka_members") > 0) | (state.isNotNull() & ~state.isin(*IDLE_STATES))


def _live_in_zk(policy: Policy) -> Column:
    """Old consumers registered, and --allow-live-zk-consumers not given."""
    if policy.allow_live_zk_consumers:
        return F.lit(False)
    return F.coalesce(F.col("zk_consumers"), F.lit(0)) > 0


def _status(policy: Policy) -> Column:
    zk_offset, kafka_offset = F.col("zk_offset"), F.col("kafka_offset")
    conditions = {
        s.UNREADABLE: F.col("zk_status") == s.UNREADABLE,
        s.MALFORMED: F.col("zk_status") == s.MALFORMED,
        s.UNTRANSLATABLE: F.col("zk_status") == s.UNTRANSLATABLE,
        s.TOPIC_NOT_AUTHORIZED: F.col("_topic_refused").isNotNull(),
        s.UNKNOWN_PARTITION: F.col("_in_kafka").isNull(),
        s.TOPIC_RECREATED: F.col("zk_mtime") < F.col("topic_ctime"),
        s.BELOW_LOG_START: zk_offset < F.col("log_start"),
        s.ABOVE_LOG_END: zk_offset > F.col("log_end"),
        s.IN_SYNC: kafka_offset.isNotNull() & (kafka_offset == zk_offset),
        s.GROUP_ACTIVE_KAFKA: _active_in_kafka(),
        s.GROUP_ACTIVE_ZK: _live_in_zk(policy),
        s.TAKEN_OVER: kafka_offset.isNotNull() & _taken_over(policy),
        s.CONFLICT: kafka_offset.isNotNull(),
    }
    # A partition Kafka has an offset for but ZooKeeper lacks is informational only.
    status = F.when(F.col("_in_zk").isNull(), F.lit(s.KAFKA_ONLY))
    for name in s.PRECEDENCE[:-1]:
        status = status.when(F.coalesce(conditions[name], F.lit(False)), F.lit(name))
    return status.otherwise(F.lit(s.MIGRATE))


def _planned(policy: Policy) -> Column:
    status, zk_offset, kafka_offset = F.col("status"), F.col("zk_offset"), F.col("kafka_offset")
    none = F.lit(None).cast("bigint")
    conflict = {"skip": none, "fail": none, "zk": zk_offset, "kafka": kafka_offset,
                "max": F.greatest(zk_offset, kafka_offset)}[policy.on_conflict]
    below = {"skip": none, "clamp": F.col("log_start"), "commit": zk_offset}[policy.out_of_range]
    above = {"skip": none, "clamp": F.col("log_end"), "commit": zk_offset}[policy.out_of_range]
    # Out of range comes before the live groups in the precedence: a live group's row is still
    # never planned.
    live = _active_in_kafka() | _live_in_zk(policy)
    return (F.when(status == s.MIGRATE, zk_offset)
            .when(status == s.CONFLICT, conflict)
            .when(status.isin(s.BELOW_LOG_START, s.ABOVE_LOG_END) & live, none)
            .when(status == s.BELOW_LOG_START, _unless_kafka_differs(below, policy))
            .when(status == s.ABOVE_LOG_END, _unless_kafka_differs(above, policy))
            .otherwise(none))


def _unless_kafka_differs(ranged: Column, policy: Policy) -> Column:
    """An out-of-range row's offset, where Kafka holds one of its own only as --on-conflict allows.

    --out-of-range clamp|commit never moves Kafka's own offset on its own: skip and fail leave
    it, zk takes the out-of-range policy's value, kafka keeps Kafka's, max the greater of the two
    (and nothing when the out-of-range policy plans nothing). Where both stores hold the same
    offset (outside the log) and that is what the policies keep, nothing is left to write.
    """
    kafka_offset, none = F.col("kafka_offset"), F.lit(None).cast("bigint")
    greater = F.when(ranged.isNull(), none).otherwise(F.greatest(ranged, kafka_offset))
    allowed = {"skip": none, "fail": none, "zk": ranged, "kafka": kafka_offset,
               "max": greater}[policy.on_conflict]
    kept_as_both = (allowed == kafka_offset) & (kafka_offset == F.col("zk_offset"))
    return F.when(kafka_offset.isNotNull(), F.when(kept_as_both, none).otherwise(allowed)
                  ).otherwise(ranged)


def _action() -> Column:
    return (F.when(F.col("planned_offset").isNotNull(), F.lit(s.COMMIT))
            .when(F.col("status").isin(s.IN_SYNC, s.KAFKA_ONLY, s.TAKEN_OVER), F.lit(s.NOTHING))
            .otherwise(F.lit(s.SKIP)))


def _reason(policy: Policy) -> Column:
    status = F.col("status")
    ranged = status.isin(s.BELOW_LOG_START, s.ABOVE_LOG_END)
    # Kafka's own offset is shown wherever the status does not say it, and why 0 was not planned.
    kafka_too = F.when(ranged & F.col("kafka_offset").isNotNull(), F.concat(
        F.lit("; Kafka has "), F.col("kafka_offset").cast("string"),
        F.lit(f" (moved only as --on-conflict allows: {policy.on_conflict})")))
    no_zero = F.when(F.lit(policy.zk_holds_last) & (F.col("_wanted") == 0), F.lit(
        "; 0 is not planned: under --offset-semantics last ZooKeeper would hold -1, "
        "which no client reads"))
    live = F.when(ranged & _active_in_kafka(), F.concat(
        F.lit("; not planned while the group is live in Kafka ("),
        F.coalesce(F.col("group_state"), F.lit("active")), F.lit(", "),
        F.col("kafka_members").cast("string"), F.lit(" member(s))"))
    ).when(ranged & _live_in_zk(policy), F.concat(
        F.lit("; not planned while "), F.col("zk_consumers").cast("string"),
        F.lit(" old consumer(s) are registered in ZooKeeper")))
    return F.concat_ws("", _status_reason(policy), kafka_too, live, no_zero, _zk_reason())


def _zk_reason() -> Column:
    """What the row does to ZooKeeper's offset, where it is not kept."""
    change, zk = F.col("_zk_change"), F.col("zk_offset").cast("string")
    direction = F.when(F.col("_wanted") > F.col("zk_offset"), F.lit("forwards")).otherwise(
        F.lit("backwards"))
    return (F.when(change == s.ZK_BLOCKED, F.concat(
        F.lit("; would set ZooKeeper's offset "), zk, F.lit(" -> "),
        F.col("_wanted").cast("string"), F.lit(" ("), direction,
        F.lit("), away from the old consumer's own: not planned; --rewrite-zk-offsets writes it "
              "there, --no-zk-write commits Kafka alone")))
        .when(change.isin(s.ZK_FORWARD, s.ZK_BACKWARD), F.concat(
            F.lit("; ZooKeeper "), zk, F.lit(" -> "), F.col("planned_offset").cast("string"),
            F.lit(" ("), F.col("_zk_change"), F.lit("s, --rewrite-zk-offsets)"))))


def _utc(column: str) -> Column:
    return F.date_format(F.col(column), "yyyy-MM-dd'T'HH:mm:ss'Z'")


def _status_reason(policy: Policy) -> Column:
    status = F.col("status")
    zk, kafka = F.col("zk_offset").cast("string"), F.col("kafka_offset").cast("string")
    unknown_bounds = F.concat(F.lit("; log bounds unknown: "), F.col("partition_error"))
    no_bounds = (F.when(F.col("partition_error").isNotNull(), unknown_bounds)
                 .otherwise(F.lit("")))
    return (
        F.when(status.isin(s.UNREADABLE, s.MALFORMED, s.UNTRANSLATABLE), F.col("zk_reason"))
        .when(status == s.TOPIC_NOT_AUTHORIZED, F.col("_topic_refused"))
        .when(status == s.UNKNOWN_PARTITION, F.when(
            F.col("partition").isNull(), F.lit("no partition number"))
            .otherwise(F.lit("no such topic or partition in Kafka")))
        .when(status == s.TOPIC_RECREATED, F.concat(
            F.lit("ZooKeeper's offset "), zk, F.lit(" was last written "), _utc("zk_mtime"),
            F.lit(", before topic "), F.col("topic"), F.lit(" was created "), _utc("topic_ctime"),
            F.lit(": it counts messages of a topic deleted since")))
        .when(status == s.IN_SYNC, F.concat(F.lit("both hold "), zk))
        .when(status == s.GROUP_ACTIVE_KAFKA, F.concat(
            F.lit("Kafka group is "), F.coalesce(F.col("group_state"), F.lit("active")),
            F.lit(" with "),
            F.col("kafka_members").cast("string"), F.lit(" member(s); a commit would be rejected")))
        .when(status == s.GROUP_ACTIVE_ZK, F.concat(
            F.col("zk_consumers").cast("string"),
            F.lit(" old consumer(s) registered in ZooKeeper")))
        .when(status == s.BELOW_LOG_START, F.concat(
            zk, F.lit(" is below log start "), F.col("log_start").cast("string"),
            F.lit(" (data deleted)")))
        .when(status == s.ABOVE_LOG_END, F.concat(
            zk, F.lit(" is above log end "), F.col("log_end").cast("string")))
        .when(status == s.TAKEN_OVER, F.concat(
            F.lit("Kafka has "), kafka, F.lit(", ZooKeeper "), zk, F.lit(" ("),
            _fill(takeover.TAKEN, **_words(policy)), F.lit("): nothing to move")))
        .when(status == s.CONFLICT, F.concat(
            F.lit("Kafka has "), kafka, F.lit(", ZooKeeper "), zk,
            F.when(F.col("kafka_commit_ms").isNotNull(), F.concat(
                F.lit(" ("), _differs_words(policy), F.lit(")"))).otherwise(F.lit(""))))
        .when(status == s.MIGRATE, F.concat(F.lit("no committed offset in Kafka"), no_bounds))
        .when(status == s.KAFKA_ONLY, F.concat(
            F.lit("Kafka has "), kafka, F.lit(", ZooKeeper has none")))
    )


# -- the takeover rule (migrate/kafka/takeover.py) over the plan's columns ------------------------
# The Kafka snapshot's `commit` rows carry, per partition, the record that wrote the newest value
# read (its offset and time) and who made it, judged and worded by takeover.committer: the diff
# watches nothing, so only a member's commit can show a consumer here.

def _commit_seconds() -> Column:
    return F.col("kafka_commit_ms") / 1000.0


def _zk_written() -> Column:
    return F.col("zk_mtime").cast("double")


def _by_zk2kafka(policy: Policy) -> Column:
    """Kafka's value may be zk2kafka's: its metadata names a run, or is a custom one a journaled
    run committed with."""
    metadata = F.coalesce(F.col("kafka_metadata"), F.lit(""))
    named = metadata.rlike("^" + NAMES_A_RUN.pattern + "$")
    return named | metadata.isin(*policy.own_metadata) if policy.own_metadata else named


def _dated() -> Column:
    """The commit record read is the one that wrote the value Kafka answers with."""
    return F.col("kafka_commit_ms").isNotNull() & (F.col("kafka_commit_offset")
                                                   == F.col("kafka_offset"))


def _taken_over(policy: Policy) -> Column:
    """takeover.verdict's with no watch: committed by a member of the group after ZooKeeper's
    last write, by more than the margin in force."""
    return (_dated() & F.col("zk_mtime").isNotNull() & ~_by_zk2kafka(policy)
            & (F.col("kafka_commit_by") == F.lit(takeover.MEMBER))
            & (_commit_seconds() > _zk_written() + F.lit(policy.clock_margin)))


def _words(policy: Policy) -> dict[str, Column]:
    committed = F.date_format(F.timestamp_millis(F.col("kafka_commit_ms")),
                              "yyyy-MM-dd'T'HH:mm:ss'Z'")
    who = F.col("kafka_commit_who")
    return {"who": who, "committed": committed, "zk": _utc("zk_mtime"),
            "kafka": _fill(takeover.KAFKA, committed=committed, who=who),
            "margin": F.lit(f"{policy.clock_margin:g}")}


def _differs_words(policy: Policy) -> Column:
    """Why Kafka's value is not shown to be a new consumer's, as takeover.judge words it."""
    words = _words(policy)
    committed, written = _commit_seconds(), _zk_written()
    margin = F.lit(policy.clock_margin)
    undated = _fill(takeover.NO_TIME, why=F.concat(
        F.lit("the newest commit record read holds "), F.col("kafka_commit_offset").cast("string"),
        F.lit(", not Kafka's "), F.col("kafka_offset").cast("string")))
    return (F.when(_by_zk2kafka(policy), _fill(takeover.BY_ZK2KAFKA,
                                               metadata=F.col("kafka_metadata")))
            .when(~_dated(), undated)
            .when(F.col("zk_mtime").isNull(), _fill(takeover.NO_ZK_TIME, **words))
            .when(committed < written - margin, _fill(takeover.BEFORE, **words))
            .when(committed <= written + margin, _fill(takeover.WITHIN, **words))
            .otherwise(_fill(takeover.NO_CONSUMER, **words)))


def _fill(template: str, **columns: Column) -> Column:
    """`template`'s {name} fields filled with columns: str.format, in Spark."""
    parts = re.split(r"\{(\w+)\}", template)
    return F.concat(*(F.lit(part) if i % 2 == 0 else columns[part].cast("string")
                      for i, part in enumerate(parts) if part or i % 2))
