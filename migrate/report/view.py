"""What the report pages show of a plan: the summary plus a few bounded extracts (the first
blocker rows, the groups to list, the lag histogram), each read a batch at a time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from migrate.diff import plan as p
from migrate.diff import schema as s
from migrate.group_map import renamed_text

BLOCKER_COLUMNS = ("group", "topic", "partition", "status", "reason")
# The rows that set ZooKeeper's offset, or would and are not planned.
ZK_COLUMNS = ("group", "topic", "partition", "zk_offset", "kafka_offset", "zk_planned", "zk_change")
# A translated plan's rows: ZooKeeper's (upstream) offset beside the translated one.
TRANSLATED_COLUMNS = ("group", "upstream_topic", "topic", "partition", "upstream_offset",
                      "zk_offset", "redelivery_window")
MAX_GROUPS = 200          # rows of the per-group table on the pages
MAX_BLOCKER_ROWS = 100    # blocker rows listed on the pages
TOP_LAG_GROUPS = 20       # bars of the lag-by-group chart

Plan = pa.Table | Path   # PLAN_SCHEMA rows in PLAN_ORDER: a table, or plan.parquet


class Bar(NamedTuple):
    """One bar of a chart: what it counts, and how many."""

    label: str
    value: int


@dataclass(frozen=True)
class ReportView:
    """What both pages show: the summary plus the few bounded extracts of the plan they need."""

    summary: dict[str, Any]
    blocker_rows: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    lag_histogram: list[Bar]
    top_lag: list[Bar]
    # --translate-via-mm2: the first planned commits, upstream and translated offsets side by side
    translated_rows: list[dict[str, Any]] = ()
    # the first rows that move ZooKeeper's offset, or would (not planned)
    zk_rows: list[dict[str, Any]] = ()

    @classmethod
    def build(cls, summary: dict[str, Any], plan: Plan) -> ReportView:
        blocker_rows, zk_rows, histogram = [], [], LagHistogram()
        blocker_statuses = pa.array(sorted(s.BLOCKERS))
        columns = list(dict.fromkeys([*BLOCKER_COLUMNS, *ZK_COLUMNS, "lag"]))
        for batch in p.plan_batches(plan, columns):
            histogram.add(batch)
            if len(blocker_rows) < MAX_BLOCKER_ROWS:   # the first ones in plan order
                blockers = batch.filter(pc.is_in(batch.column("status"),
                                                 value_set=blocker_statuses))
                wanted = blockers.slice(0, MAX_BLOCKER_ROWS - len(blocker_rows))
                blocker_rows += wanted.select(list(BLOCKER_COLUMNS)).to_pylist()
            if len(zk_rows) < MAX_BLOCKER_ROWS:
                moving = batch.filter(pc.not_equal(batch.column("zk_change"), s.ZK_UNCHANGED))
                wanted = moving.slice(0, MAX_BLOCKER_ROWS - len(zk_rows))
                zk_rows += wanted.select(list(ZK_COLUMNS)).to_pylist()
        groups = sorted(summary["per_group"],
                        key=lambda g: (-g["blockers"], -(g["lag"] or 0), g["group"]))
        renamed = (summary.get("inputs", {}).get("group_map") or {}).get("renamed") or {}
        if renamed:   # each renamed group as `old -> new` wherever the pages name it
            groups, blocker_rows, zk_rows = (
                [{**row, "group": renamed_text(row["group"], renamed)} for row in rows]
                for rows in (groups, blocker_rows, zk_rows))
        by_lag = sorted(groups, key=lambda g: -(g["lag"] or 0))[:TOP_LAG_GROUPS]
        top_lag = [Bar(g["group"], g["lag"]) for g in by_lag if g["lag"]]
        return cls(summary, blocker_rows, groups[:MAX_GROUPS], histogram.buckets(), top_lag,
                   _translated_rows(plan), zk_rows)


def _translated_rows(plan: Plan) -> list[dict[str, Any]]:
    """The first MAX_BLOCKER_ROWS planned commits of a translated plan (none of another plan)."""
    if not p.is_translated(plan):
        return []
    rows: list[dict[str, Any]] = []
    for batch in p.commits(plan, list(TRANSLATED_COLUMNS)):
        rows += batch.slice(0, MAX_BLOCKER_ROWS - len(rows)).to_pylist()
        if len(rows) >= MAX_BLOCKER_ROWS:
            break
    return rows


class LagHistogram:
    """Offsets per order of magnitude of lag (log end minus the ZooKeeper offset), for rows that
    have one, counted a batch of plan rows at a time."""

    def __init__(self):
        self.negative, self.zero, self.digits = 0, 0, Counter()

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        zk_rows = batch.filter(pc.not_equal(batch.column("status"), s.KAFKA_ONLY))
        lag = pc.drop_null(zk_rows.column("lag"))
        self.negative += pc.sum(pc.less(lag, 0)).as_py() or 0
        self.zero += pc.sum(pc.equal(lag, 0)).as_py() or 0
        positive = pc.filter(lag, pc.greater(lag, 0))
        # Digit count is exact where log10 of a large int64 is not.
        digits = pc.utf8_length(pc.cast(positive, pa.string()))
        self.digits.update({row["values"]: row["counts"]
                            for row in pc.value_counts(digits).to_pylist()})

    def buckets(self) -> list[Bar]:
        buckets = [Bar("< 0", self.negative), Bar("0", self.zero)]
        for n in range(1, max(self.digits, default=0) + 1):
            if n <= 3:
                label = f"{10 ** (n - 1)}–{10 ** n - 1}"
            else:
                label = f"{_si(10 ** (n - 1))}–{_si(10 ** n)}"
            buckets.append(Bar(label, self.digits.get(n, 0)))
        # "< 0" only when some offset is past the log end
        return buckets if buckets[0].value else buckets[1:]


def lag_histogram(plan: Plan) -> list[Bar]:
    """LagHistogram of a whole plan."""
    histogram = LagHistogram()
    for batch in p.plan_batches(plan, ["status", "lag"]):
        histogram.add(batch)
    return histogram.buckets()


def _si(n: int) -> str:
    for unit, size in (("T", 10 ** 12), ("G", 10 ** 9), ("M", 10 ** 6), ("k", 10 ** 3)):
        if n >= size:
            return f"{n // size}{unit}"
    return str(n)
