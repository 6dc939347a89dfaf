"""The two stores' sessions a writing command opens, and the dual commit of a migrate run built on
them: one place, for the command's own process and for each writer process of `--writers N`.
What they are opened with is `WriterOptions`, the part of the settings the write phase uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from migrate.connection import Connection
from migrate.journal.journal import Journal
from migrate.kafka.client import open_admin
from migrate.kafka.values import run_metadata
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.settings import Settings
from migrate.write.dual_commit import DualCommit
from migrate.write.renamed import RenamedKafkaWriter
from migrate.write.review import Review
from migrate.zk.client import close, connect
from migrate.zk.writer import ZkOffsetWriter


@dataclass(frozen=True)
class WriterOptions:
    """What the write phase takes from the settings: how to reach the stores, how many commits
    fly at once and over how many processes (--parallelism, --writers), and what the dual
    commit writes (--metadata, --no-zk-write, --offset-semantics)."""

    connection: Connection
    parallelism: int
    writers: int
    metadata: str | None   # None: the default, which names the run
    no_zk_write: bool
    offset_semantics: str
    # ZooKeeper group -> the Kafka group it is written to (--map-group), from the plan or the
    # run's journal; the groups it leaves out keep their names.
    renamed: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Settings, renamed: Mapping[str, str] | None = None) -> WriterOptions:
        return cls(settings.connection, settings.parallelism, settings.writers, settings.metadata,
                   settings.no_zk_write, settings.offset_semantics, dict(renamed or {}))

    @property
    def reads_zk(self) -> bool:
        """Whether the write phase reads ZooKeeper: always, but for a plan read from a snapshot
        whose ZooKeeper no longer answers (migrate/zk/side.py leaves no --zookeeper then)."""
        return self.connection.zookeeper is not None


class Writers(NamedTuple):
    """The two stores' writers; zk is None when ZooKeeper is neither read nor written."""

    kafka: KafkaOffsetWriter | RenamedKafkaWriter
    zk: ZkOffsetWriter | None


@contextmanager
def open_writers(connection: Connection, parallelism: int, zk: bool,
                 renamed: Mapping[str, str] | None = None) -> Iterator[Writers]:
    """The two stores' writers (`zk`: ZooKeeper's too), `parallelism` commits in flight; with
    `renamed`, Kafka's reads and writes each group under the Kafka name it maps to."""
    # Room for two batches' commits, and their reads.
    admin = open_admin(connection, in_flight=2 * parallelism + 8)
    try:
        client = connect(connection) if zk else None
    except BaseException:
        admin.close()
        raise
    kafka = KafkaOffsetWriter(admin, in_flight=parallelism)
    if renamed:
        kafka = RenamedKafkaWriter(kafka, dict(renamed))
    try:
        yield Writers(kafka, ZkOffsetWriter(client) if client else None)
    finally:
        admin.close()
        if client is not None:
            close(client)


def migrate_writer(options: WriterOptions, journal: Journal, run_id: str, writers: Writers,
                   review: Review | None, dry_run: bool) -> DualCommit:
    """The dual commit of a migrate run: ZooKeeper is read even with --no-zk-write (a plan is
    committed only while its znodes are as planned), and written unless it is given."""
    metadata = options.metadata if options.metadata is not None else run_metadata("migrate", run_id)
    zk = None if options.no_zk_write else writers.zk
    return DualCommit(journal, run_id, writers.kafka, zk, metadata, options.offset_semantics,
                      zk_reader=writers.zk, review=review, dry_run=dry_run)
