"""MirrorMaker 2 translation: OffsetSync records decoded from the bytes Kafka writes, and the PySpark
mapping (MM2's rule, UNTRANSLATABLE, the redelivery window) on hand-built frames in a real local
Spark."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate.diff import schema as s
from migrate.diff.offset_diff import Policy, offset_diff
from migrate.diff.run import _conform
from migrate.diff.translate import DEFAULT, IDENTITY, TRANSLATION_COLUMNS, translate
from migrate.kafka.offset_syncs import SYNCS_SCHEMA, OffsetSync, decode, syncs_topic
from migrate.kafka.snapshot import KAFKA_SCHEMA
from migrate.zk.reader import SCHEMA as ZK_SCHEMA

from support.frames import committed, group, partition, zk_row


def kafka_key(topic: str, partition_: int) -> bytes:
    """OffsetSync's key as Kafka's Struct writes KEY_SCHEMA: STRING (int16 length, UTF-8), INT32."""
    name = topic.encode("utf-8")
    return len(name).to_bytes(2, "big", signed=True) + name + partition_.to_bytes(4, "big", signed=True)


def kafka_value(upstream: int, downstream: int) -> bytes:
    """OffsetSync.serializeValue: VALUE_SCHEMA is upstreamOffset INT64, offset INT64."""
    return upstream.to_bytes(8, "big", signed=True) + downstream.to_bytes(8, "big", signed=True)


def test_decode_reads_the_bytes_kafka_writes():
    key = kafka_key("orders", 7)
    assert key == b"\x00\x06orders\x00\x00\x00\x07"
    assert decode(key, kafka_value(1_005, 5)) == OffsetSync("orders", 7, 1_005, 5)
    big = 2**40 + 3
    assert decode(kafka_key("zahlungsströme", 0), kafka_value(big, big - 1_000)) == \
        OffsetSync("zahlungsströme", 0, big, big - 1_000)


@pytest.mark.parametrize("key, value", [
    (b"\x00\x06orders\x00\x00\x00", kafka_value(1, 1)),          # partition cut short
    (b"\x00\x07orders\x00\x00\x00\x07", kafka_value(1, 1)),      # length past the name
    (b"\x00", kafka_value(1, 1)),
    (kafka_key("orders", 0), kafka_value(1, 1)[:12]),             # value cut short
    (kafka_key("orders", 0), kafka_value(1, 1) + b"\x00"),
    (None, kafka_value(1, 1)),
    (kafka_key("orders", 0), None),                                # a tombstone
])


def test_decode_refuses_what_is_not_an_offset_sync(key, value):
    with pytest.raises(ValueError):
        decode(key, value)


def test_syncs_topic_name():
    assert syncs_topic("kraft") == "mm2-offset-syncs.kraft.internal"


def sync(topic, p, upstream, downstream, position):
    return {"topic": topic, "partition": p, "upstream_offset": upstream, "downstream_offset": downstream,
            "sync_partition": 0, "sync_offset": position}


def translated(spark, zk_rows, sync_rows, policy=DEFAULT):
    zk = spark.createDataFrame(pa.Table.from_pylist(zk_rows, schema=ZK_SCHEMA))
    syncs = spark.createDataFrame(pa.Table.from_pylist(sync_rows, schema=SYNCS_SCHEMA))
    rows = translate(zk, syncs, "old", policy).toArrow().to_pylist()
    return {(r["group"], r["upstream_topic"], r["partition"]): r for r in rows}


# Source partition orders-0 starts at 100 (DeleteRecords); MM2 copied from there, filtering some records.
SYNCS = [sync("orders", 0, 100, 0, 0), sync("orders", 0, 150, 50, 1), sync("orders", 0, 300, 190, 2)]


def test_mm2_rule_exact_after_and_before_the_first_sync(spark):
    rows = translated(spark, [
        zk_row("exact", "orders", 0, 150),
        zk_row("after", "orders", 0, 200),
        zk_row("first", "orders", 0, 100),
        zk_row("next", "orders", 0, 151),
        zk_row("past-last", "orders", 0, 301),
        zk_row("before", "orders", 0, 99),
        zk_row("nosyncs", "orders", 1, 10),
        zk_row("othertopic", "payments", 0, 10),
    ], SYNCS)
    got = {g: (r["topic"], r["offset"], r["status"], r["sync_upstream"], r["redelivery_window"])
           for (g, _, _), r in rows.items()}
    assert got == {
        "exact": ("old.orders", 50, "OK", 150, 0),
        "after": ("old.orders", 51, "OK", 150, 49),     # upstream 151..199 may be re-read
        "first": ("old.orders", 0, "OK", 100, 0),
        "next": ("old.orders", 51, "OK", 150, 0),       # 151 is the first record after 150
        "past-last": ("old.orders", 191, "OK", 300, 0),
        "before": ("old.orders", None, s.UNTRANSLATABLE, None, None),
        "nosyncs": ("old.orders", None, s.UNTRANSLATABLE, None, None),
        "othertopic": ("old.payments", None, s.UNTRANSLATABLE, None, None),
    }
    assert rows[("after", "orders", 0)]["upstream_offset"] == 200
    assert rows[("after", "orders", 0)]["sync_downstream"] == 50
    assert "older than the first MirrorMaker 2 offset sync" in rows[("before", "orders", 0)]["reason"]
    assert rows[("nosyncs", "orders", 1)]["reason"] == "no MirrorMaker 2 offset sync for orders partition 1"


def test_unreadable_and_malformed_rows_keep_their_status(spark):
    rows = translated(spark, [zk_row("bad", "orders", 0, None, status="MALFORMED", raw="x"),
                              zk_row("lost", "orders", 0, None, status="UNREADABLE", raw="")], SYNCS)
    assert {g: (r["status"], r["offset"], r["topic"]) for (g, _, _), r in rows.items()} == {
        "bad": ("MALFORMED", None, "old.orders"), "lost": ("UNREADABLE", None, "old.orders")}


def test_identity_policy_keeps_the_topic_name(spark):
    rows = translated(spark, [zk_row("g", "orders", 0, 160)], SYNCS, IDENTITY)
    assert rows[("g", "orders", 0)]["topic"] == "orders"
    assert rows[("g", "orders", 0)]["offset"] == 51


def test_a_later_sync_below_earlier_ones_invalidates_them(spark):
    # A restarted task re-replicated from 150: its copies lie after 300 downstream, so the sync
    # (200 -> 100) no longer says where the records after 200 are.
    syncs = [sync("t", 0, 100, 0, 0), sync("t", 0, 200, 100, 1), sync("t", 0, 150, 300, 2)]
    rows = translated(spark, [zk_row("a", "t", 0, 250), zk_row("b", "t", 0, 120),
                              zk_row("c", "t", 0, 150)], syncs)
    assert {g: (r["offset"], r["redelivery_window"]) for (g, _, _), r in rows.items()} == {
        "a": (301, 99), "b": (1, 19), "c": (300, 0)}


def test_a_later_sync_below_in_downstream_invalidates_earlier_ones(spark):
    # The copy was truncated or recreated: (200 -> 100) points into a log that is gone.
    syncs = [sync("t", 0, 100, 0, 0), sync("t", 0, 200, 100, 1), sync("t", 0, 300, 5, 2)]
    rows = translated(spark, [zk_row("a", "t", 0, 250), zk_row("b", "t", 0, 300)], syncs)
    assert {g: (r["status"], r["offset"]) for (g, _, _), r in rows.items()} == {
        "a": (s.UNTRANSLATABLE, None), "b": ("OK", 5)}


def mm2_translate(syncs: list[tuple[int, int]], upstream: int) -> int | None:
    """OffsetSyncStore.translateDownstream over every sync still valid, written plainly."""
    restart = max((k for k in range(1, len(syncs)) if syncs[k][1] < max(d for _, d in syncs[:k])), default=0)
    valid = [(u, d) for i, (u, d) in enumerate(syncs)
             if i >= restart and all(u < later_u for later_u, _ in syncs[i + 1:])]
    below = [(u, d) for u, d in valid if u <= upstream]
    if not below:
        return None
    u, d = max(below)
    return d if u == upstream else d + 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(-30, 60), st.integers(-20, 40)), min_size=0, max_size=8),
       offsets=st.lists(st.integers(0, 400), min_size=1, max_size=12))


def test_translation_is_mm2s_rule_on_random_syncs(spark, steps, offsets):
    syncs, up, down = [], 50, 0
    for jump, gap in steps:        # upstream may go back (a re-replication), downstream too (truncation)
        up, down = max(0, up + jump), max(0, down + gap)
        syncs.append((up, down))
    rows = translated(spark, [zk_row(f"g{i}", "t", 0, o) for i, o in enumerate(offsets)],
                      [sync("t", 0, u, d, i) for i, (u, d) in enumerate(syncs)])
    for i, o in enumerate(offsets):
        row = rows[(f"g{i}", "t", 0)]
        want = mm2_translate(syncs, o)
        assert row["offset"] == want
        assert row["status"] == ("OK" if want is not None else s.UNTRANSLATABLE)
        if want is not None:
            assert row["redelivery_window"] == (0 if row["sync_upstream"] == o else o - row["sync_upstream"] - 1)


def test_the_diff_judges_translated_offsets_against_the_target(spark):
    zk = spark.createDataFrame(pa.Table.from_pylist([
        zk_row("g", "orders", 0, 200),      # -> 51: MIGRATE on the target
        zk_row("g", "orders", 1, 10),       # no syncs: UNTRANSLATABLE, though the target lacks old.orders-1
        zk_row("h", "orders", 0, 150),      # -> 50, which the target already holds: IN_SYNC
    ], schema=ZK_SCHEMA))
    syncs = spark.createDataFrame(pa.Table.from_pylist(SYNCS, schema=SYNCS_SCHEMA))
    kafka = spark.createDataFrame(pa.Table.from_pylist([
        partition("old.orders", 0, start=0, end=400), group("g"), group("h", "Empty"),
        committed("h", "old.orders", 0, 50)], schema=KAFKA_SCHEMA))
    rows = offset_diff(translate(zk, syncs, "old", DEFAULT), kafka, Policy(), TRANSLATION_COLUMNS)
    table = _conform(rows.orderBy("group", "topic", "partition").toArrow(), s.plan_schema(True))
    got = {(r["group"], r["topic"], r["partition"]): r for r in table.to_pylist()}
    migrate = got[("g", "old.orders", 0)]
    assert (migrate["status"], migrate["planned_offset"], migrate["zk_offset"]) == (s.MIGRATE, 51, 51)
    assert (migrate["upstream_topic"], migrate["upstream_offset"], migrate["redelivery_window"]) == \
        ("orders", 200, 49)
    blocked = got[("g", "old.orders", 1)]
    assert (blocked["status"], blocked["action"], blocked["planned_offset"]) == (s.UNTRANSLATABLE, s.SKIP, None)
    assert blocked["reason"] == "no MirrorMaker 2 offset sync for orders partition 1"
    assert s.UNTRANSLATABLE in s.BLOCKERS
    assert got[("h", "old.orders", 0)]["status"] == s.IN_SYNC
