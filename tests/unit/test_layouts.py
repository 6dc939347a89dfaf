"""The two-layout rule (a partition with an offset znode under both layouts): `layouts.pick`, which sync uses, and
the Spark `dedupe_zk`, which the diff uses, choose the same row for every case, in a real local Spark."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from migrate.diff.offset_diff import dedupe_zk
from migrate.zk import layouts
from migrate.zk.reader import SCHEMA as ZK_SCHEMA

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
LATER = T0 + dt.timedelta(milliseconds=1)
STANDARD, OLD = "standard", "kafka-1.1.0-offset"


def row(case, layout, status="OK", offset=None, mtime=T0):
    return {"group": case, "topic": "t", "partition": 0, "raw": str(offset), "offset": offset, "status": status,
            "reason": None if status == "OK" else f"{status.lower()} value", "mtime": mtime, "ctime": None,
            "version": None if mtime is None else 1, "layout": layout,
            "path": f"/consumers/{case}/{'offsets' if layout == STANDARD else 'offset'}/t/0",
            "zk_consumers": 0, "zk_owned_partitions": 0}


# (case, rows, (layout, status) expected to stand for the partition)
CASES = [
    ("newer-standard", [row("a", OLD, offset=45), row("a", STANDARD, offset=40, mtime=LATER)], (STANDARD, "OK")),
    ("newer-old-layout", [row("b", STANDARD, offset=40), row("b", OLD, offset=45, mtime=LATER)], (OLD, "OK")),
    ("newer-malformed", [row("c", OLD, offset=30), row("c", STANDARD, "MALFORMED", mtime=LATER)],
     (STANDARD, "MALFORMED")),
    ("older-malformed", [row("d", OLD, "MALFORMED"), row("d", STANDARD, offset=30, mtime=LATER)], (STANDARD, "OK")),
    ("unknown-mtime-unreadable", [row("e", STANDARD, offset=30, mtime=LATER), row("e", OLD, "UNREADABLE", mtime=None)],
     (OLD, "UNREADABLE")),
    ("same-mtime-malformed", [row("f", STANDARD, offset=30), row("f", OLD, "MALFORMED")], (OLD, "MALFORMED")),
    ("same-mtime-both-ok", [row("g", STANDARD, offset=30), row("g", OLD, offset=31)], (OLD, "OK")),
    ("one-row", [row("h", STANDARD, offset=7)], (STANDARD, "OK")),
    ("one-row-unknown-mtime", [row("i", OLD, "UNREADABLE", mtime=None)], (OLD, "UNREADABLE")),
]


def test_dedupe_zk_newer_malformed_row_blocks_an_older_ok_one(spark):
    rows = [row("c", OLD, offset=30), row("c", STANDARD, "MALFORMED", mtime=LATER)]
    (kept,) = dedupe_zk(spark.createDataFrame(pa.Table.from_pylist(rows, schema=ZK_SCHEMA))).collect()
    assert (kept["layout"], kept["status"], kept["offset"]) == (STANDARD, "MALFORMED", None)


@pytest.mark.parametrize("case,rows,expected", CASES, ids=[c[0] for c in CASES])
def test_sync_pick_and_diff_dedupe_choose_the_same_row(spark, case, rows, expected):
    picked = layouts.pick(rows)
    for order in (rows, rows[::-1]):   # the input order must not matter to either
        assert (layouts.pick(order)["layout"], layouts.pick(order)["status"]) == expected
        (kept,) = dedupe_zk(spark.createDataFrame(pa.Table.from_pylist(order, schema=ZK_SCHEMA))).collect()
        assert (kept["layout"], kept["status"], kept["offset"]) == (
            picked["layout"], picked["status"], picked["offset"])


def test_pick_takes_raw_stat_milliseconds_as_well():
    # sync may hold a raw ZooKeeper stat (epoch ms) rather than a snapshot's datetime: same order.
    ms = int(T0.timestamp() * 1000)
    rows = [{"status": "OK", "mtime": ms + 1, "layout": OLD}, {"status": "OK", "mtime": ms, "layout": STANDARD}]
    assert layouts.pick(rows)["layout"] == OLD
