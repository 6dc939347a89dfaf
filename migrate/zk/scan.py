"""`scan`: every selected ZooKeeper offset into one Parquet snapshot, over one or N sessions."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from migrate.progress import Progress
from migrate.settings import Settings
from migrate.zk.client import close, connect
from migrate.zk.reader import (SCHEMA, STANDARD, STORM, Selection, ZkOffsetReader,
                               layout_from_template)


@dataclass
class ScanStats:
    """What a scan found; mergeable across reader processes."""

    statuses: Counter = field(default_factory=Counter)
    layouts: Counter = field(default_factory=Counter)
    groups: set = field(default_factory=set)
    live_groups: set = field(default_factory=set)
    retries: int = 0

    def add(self, batch: pa.RecordBatch) -> None:
        for column, counter in (("status", self.statuses), ("layout", self.layouts)):
            for item in pc.value_counts(batch.column(column)).to_pylist():
                counter[item["values"]] += item["counts"]
        self.groups.update(pc.unique(batch.column("group")).to_pylist())
        consumers = pc.fill_null(batch.column("zk_consumers"), 0)
        live = pc.filter(batch.column("group"), pc.greater(consumers, 0))
        self.live_groups.update(pc.unique(live).to_pylist())

    def merge(self, other: ScanStats) -> None:
        self.statuses.update(other.statuses)
        self.layouts.update(other.layouts)
        self.groups |= other.groups
        self.live_groups |= other.live_groups
        self.retries += other.retries

    @property
    def offsets(self) -> int:
        return sum(self.statuses.values())


def make_reader(client, settings: Settings) -> ZkOffsetReader:
    """The reader for the configured layout and selection."""
    if settings.layout == "template":
        root, templates = layout_from_template(settings.path_template)
    else:
        root, templates = settings.zk_root, STORM if settings.layout == "storm" else STANDARD
    selection = Selection(settings.groups, settings.exclude_groups, settings.topics)
    return ZkOffsetReader(client, root, templates, selection, settings.offset_semantics)


def scan_to_parquet(settings: Settings, dest: Path, metadata: dict[str, str]) -> ScanStats:
    """Read every selected offset into `dest` (written whole or not at all); returns what was found.

    Raises ZkUnavailable when ZooKeeper cannot be reached or stays away past the retry deadline.
    """
    client = connect(settings.connection)
    try:
        groups = make_reader(client, settings).groups()
    finally:
        close(client)
    schema = SCHEMA.with_metadata({f"zk2kafka.{k}": v for k, v in metadata.items()})
    tmp = dest.with_suffix(".parquet.part")
    with Progress("scan: offsets read") as progress:
        if settings.zk_readers > 1 and len(groups) > 1:
            stats = _scan_sharded(settings, groups, tmp, schema, progress)
        else:
            with pq.ParquetWriter(tmp, schema) as writer:
                stats = _read_groups(settings, groups, writer, progress.advance)
    os.replace(tmp, dest)
    return stats


def _read_groups(settings: Settings, groups: list[str], writer: pq.ParquetWriter,
                 advance) -> ScanStats:
    stats = ScanStats()
    client = connect(settings.connection)
    try:
        reader = make_reader(client, settings)
        for batch in reader.batches(groups):
            writer.write_batch(batch)
            stats.add(batch)
            advance(batch.num_rows)
        stats.retries = reader.batch.retries
    finally:
        close(client)
    return stats


_counter = None  # per worker process: the shared count of rows read, for the parent's progress bar


def _init_worker(counter) -> None:
    global _counter
    _counter = counter


def _advance_shared(n: int) -> None:
    with _counter.get_lock():
        _counter.value += n


def _scan_shard(settings: Settings, groups: list[str], part: str) -> ScanStats:
    with pq.ParquetWriter(part, SCHEMA) as writer:
        return _read_groups(settings, groups, writer, _advance_shared)


def _scan_sharded(settings: Settings, groups: list[str], tmp: Path, schema: pa.Schema,
                  progress: Progress) -> ScanStats:
    """Shard groups round-robin over N processes, one session each; merge their files in order."""
    n = min(settings.zk_readers, len(groups))
    ctx = multiprocessing.get_context("spawn")  # kazoo runs threads: never fork a live session
    counter = ctx.Value("q", 0)
    parts = [f"{tmp}.{i}" for i in range(n)]
    stats = ScanStats()
    try:
        with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker,
                                 initargs=(counter,)) as pool:
            futures = [pool.submit(_scan_shard, settings, groups[i::n], parts[i]) for i in range(n)]
            while not all(f.done() for f in futures):
                time.sleep(0.2)
                progress.advance(counter.value - progress.done)
            for f in futures:
                stats.merge(f.result())
        progress.advance(counter.value - progress.done)
        with pq.ParquetWriter(tmp, schema) as writer:
            for part in parts:
                for batch in pq.ParquetFile(part).iter_batches():
                    writer.write_batch(batch)
    finally:
        for part in parts:
            Path(part).unlink(missing_ok=True)
    return stats
