"""`scan`: every selected ZooKeeper offset into one Parquet snapshot, over one or N sessions."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from migrate import processes
from migrate.connection import Connection
from migrate.errors import WorkerFailed
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


@dataclass(frozen=True)
class ReaderOptions:
    """What a reader is made from: where the offsets are (--zk-root, --layout, --path-template),
    which to read (the selection) and what they mean (--offset-semantics)."""

    zk_root: str
    layout: str
    path_template: str | None
    selection: Selection
    offset_semantics: str

    @classmethod
    def of(cls, settings: Settings) -> ReaderOptions:
        return cls(settings.zk_root, settings.layout, settings.path_template,
                   Selection.of(settings),
                   settings.offset_semantics)


def make_reader(client, options: ReaderOptions) -> ZkOffsetReader:
    """The reader for the configured layout and selection."""
    if options.layout == "template":
        root, templates = layout_from_template(options.path_template)
    else:
        root, templates = options.zk_root, STORM if options.layout == "storm" else STANDARD
    return ZkOffsetReader(client, root, templates, options.selection, options.offset_semantics)


def scan_to_parquet(settings: Settings, dest: Path, metadata: dict[str, str]) -> ScanStats:
    """Read every selected offset into `dest` (written whole or not at all); returns what was found.

    Raises ZkUnavailable when ZooKeeper cannot be reached or stays away past the retry deadline.
    """
    connection, reading = settings.connection, ReaderOptions.of(settings)
    client = connect(connection)
    try:
        groups = make_reader(client, reading).groups()
    finally:
        close(client)
    schema = SCHEMA.with_metadata({f"zk2kafka.{k}": v for k, v in metadata.items()})
    tmp = dest.with_suffix(".parquet.part")
    with Progress("scan: offsets read") as progress:
        if settings.zk_readers > 1 and len(groups) > 1:
            n = min(settings.zk_readers, len(groups))
            stats = _scan_sharded(connection, reading, groups, n, tmp, schema, progress)
        else:
            with pq.ParquetWriter(tmp, schema) as writer:
                stats = _read_groups(connection, reading, groups, writer, progress.advance)
    os.replace(tmp, dest)
    return stats


def _read_groups(connection: Connection, reading: ReaderOptions, groups: list[str],
                 writer: pq.ParquetWriter, advance) -> ScanStats:
    stats = ScanStats()
    client = connect(connection)
    try:
        reader = make_reader(client, reading)
        for batch in reader.batches(groups):
            writer.write_batch(batch)
            stats.add(batch)
            advance(batch.num_rows)
        stats.retries = reader.batch.retries
    finally:
        close(client)
    return stats


def _scan_sharded(connection: Connection, reading: ReaderOptions, groups: list[str], n: int,
                  tmp: Path, schema: pa.Schema, progress: Progress) -> ScanStats:
    """Shard groups round-robin over `n` reader processes (migrate/processes.py), one session
    each; merge their files in order."""
    counter = processes.context().Value("q", 0)   # rows read, for this process's progress bar
    parts = [f"{tmp}.{i}" for i in range(n)]
    stats = ScanStats()
    try:
        readers = processes.Workers(_scan_shard, [
            (connection, reading, groups[i::n], parts[i], counter) for i in range(n)],
            "zk2kafka-reader")
        try:
            for answer in _collect(readers, counter, progress):
                stats.merge(answer)
        except BaseException:
            readers.kill()
            raise
        finally:
            readers.close(timeout=30)
        with pq.ParquetWriter(tmp, schema) as writer:
            for part in parts:
                for batch in pq.ParquetFile(part).iter_batches():
                    writer.write_batch(batch)
    finally:
        for part in parts:
            Path(part).unlink(missing_ok=True)
    return stats


def _collect(readers: processes.Workers, counter, progress: Progress) -> list[ScanStats]:
    """Each reader process's figures, in order, the progress bar kept up meanwhile; what stopped
    one is raised here."""
    answers: dict[int, ScanStats] = {}
    while len(answers) < len(readers):
        for k, pipe in enumerate(readers.pipes):
            if k in answers:
                continue
            if pipe.poll(0.2 / len(readers)):
                try:
                    answer = pipe.recv()
                except EOFError:
                    raise WorkerFailed(f"reader process {k} ended without an answer") from None
                if isinstance(answer, BaseException):
                    raise answer
                answers[k] = answer
            elif not readers.alive(k) and not pipe.poll(0):
                raise WorkerFailed(f"reader process {k} died (exit {readers.exitcode(k)})")
        progress.advance(counter.value - progress.done)
    progress.advance(counter.value - progress.done)
    return [answers[k] for k in range(len(readers))]


def _scan_shard(pipe, connection: Connection, reading: ReaderOptions, groups: list[str],
                part: str, counter) -> None:
    """A reader process: its groups into `part`; its figures, or the error that stopped it, sent
    down `pipe` (the command's process raises it)."""
    def advance(n: int) -> None:
        with counter.get_lock():
            counter.value += n

    try:
        with pq.ParquetWriter(part, SCHEMA) as writer:
            answer = _read_groups(connection, reading, groups, writer, advance)
    except Exception as exc:  # noqa: BLE001 - raised again by the command's process
        answer = exc
    pipe.send(answer)
    pipe.close()
