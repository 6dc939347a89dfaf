"""Partitions no offset covers: for each group of a plan and each topic it holds offsets of, the
partitions Kafka has where neither ZooKeeper nor Kafka holds an offset of the group.

Nothing is migrated there, so no plan row speaks of them, yet a new consumer of the group is
assigned them too and starts by its `auto.offset.reset`: `earliest` reads what the log holds,
`latest` skips it, `none` fails. A topic grown after the old consumers stopped is the usual cause.

Pure pyarrow over the plan's chunks as the diff writes them (in plan order, so a group's topic
is one run of rows, which may go on into the next chunk), and the partitions of the Kafka snapshot.
The partitions found go to `no-offset.csv` as they are found (none: no file); the summary keeps
their counts and the first groups.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from migrate.kafka.snapshot import PARTITION

NO_OFFSET_FILE = "no-offset.csv"
NO_OFFSET_COLUMNS = ("group", "topic", "partition", "log_start", "log_end")
LISTED = 200   # (group, topic) entries the summary lists; the file holds every partition

Bounds = tuple[int | None, int | None]   # (log_start, log_end), None where Kafka did not say
Pair = tuple[str, str]                    # (group, topic)


class Coverage:
    """Finds the uncovered partitions of a plan fed a chunk at a time, in plan order."""

    def __init__(self, partitions: dict[str, dict[int, Bounds]], out: Path):
        self.partitions, self.out = partitions, out
        names = sorted(partitions)
        self._topics = pa.array(names, pa.string())
        self._sizes = pa.array([len(partitions[t]) for t in names], pa.int64())
        self._open: tuple[Pair, set[int]] | None = None   # the last pair, which may go on
        self._file = self._writer = None
        self.found, self.messages, self.groups = 0, 0, set()
        self.listed: list[dict[str, Any]] = []

    @classmethod
    def of_snapshot(cls, kafka_snapshot: Path, out: Path) -> Coverage:
        """The coverage of plans against the partitions of a Kafka snapshot."""
        rows = pq.read_table(kafka_snapshot, columns=["kind", "topic", "partition", "log_start",
                                                      "log_end"])
        rows = rows.filter(pc.equal(rows["kind"], PARTITION)).to_pylist()
        partitions: dict[str, dict[int, Bounds]] = {}
        for r in rows:
            partitions.setdefault(r["topic"], {})[r["partition"]] = (r["log_start"], r["log_end"])
        return cls(partitions, out)

    def add(self, chunk: pa.Table) -> None:
        """The next chunk of plan rows."""
        keyed = chunk.select(["group", "topic", "partition"]).filter(
            pc.and_(pc.is_valid(chunk["topic"]), pc.is_valid(chunk["partition"])))
        if keyed.num_rows and self._open is not None:
            pair, present = self._open
            same = self._run_of(keyed, pair)
            present.update(keyed["partition"].slice(0, same).to_pylist())
            keyed = keyed.slice(same)
            if keyed.num_rows:
                self._finish(pair, present)
                self._open = None
        if not keyed.num_rows:
            return
        last = (keyed["group"][-1].as_py(), keyed["topic"][-1].as_py())
        tail = self._run_of(keyed, last)
        self._finish_all(keyed.slice(0, keyed.num_rows - tail))
        self._open = (last, set(keyed["partition"].slice(keyed.num_rows - tail).to_pylist()))

    def close(self) -> dict[str, Any]:
        """Finish the last pair and the file; the figures for summary.json."""
        if self._open is not None:
            self._finish(*self._open)
            self._open = None
        if self._file is not None:
            self._file.close()
        return {"partitions": self.found, "groups": len(self.groups), "messages": self.messages,
                "file": str(self.out) if self.found else None, "per_group": self.listed}

    @staticmethod
    def _run_of(keyed: pa.Table, pair: Pair) -> int:
        """How many rows of `pair` open or close `keyed`: in plan order a pair's rows are one run,
        and the pair that closes a chunk can only open the next one."""
        mask = pc.and_(pc.equal(keyed["group"], pair[0]), pc.equal(keyed["topic"], pair[1]))
        return pc.sum(mask).as_py() or 0

    def _finish_all(self, rows: pa.Table) -> None:
        """Every pair of `rows` is whole: find those with fewer partitions than their topic."""
        if not rows.num_rows:
            return
        counts = rows.group_by(["group", "topic"], use_threads=False).aggregate(
            [("partition", "count")])
        sizes = pc.take(self._sizes, pc.index_in(counts["topic"], self._topics))
        short = counts.filter(pc.less(counts["partition_count"], pc.fill_null(sizes, 0)))
        if not short.num_rows:
            return
        wanted = {(r["group"], r["topic"]) for r in short.select(["group", "topic"]).to_pylist()}
        lists = rows.group_by(["group", "topic"], use_threads=False).aggregate(
            [("partition", "list")]).to_pylist()
        for r in lists:
            if (r["group"], r["topic"]) in wanted:
                self._finish((r["group"], r["topic"]), set(r["partition_list"]))

    def _finish(self, pair: Pair, present: set[int]) -> None:
        group, topic = pair
        partitions = self.partitions.get(topic, {})
        missing = sorted(set(partitions) - present)
        if not missing:
            return
        if self._writer is None:
            self._file = self.out.open("w", newline="", encoding="utf-8")
            self._writer = csv.writer(self._file, lineterminator="\n")
            self._writer.writerow(NO_OFFSET_COLUMNS)
        messages = 0
        for p in missing:
            start, end = partitions[p]
            self._writer.writerow((group, topic, p, "" if start is None else start,
                                   "" if end is None else end))
            if start is not None and end is not None:
                messages += end - start
        self.found += len(missing)
        self.messages += messages
        self.groups.add(group)
        if len(self.listed) < LISTED:
            self.listed.append({"group": group, "topic": topic, "partitions": missing,
                                "messages": messages})
