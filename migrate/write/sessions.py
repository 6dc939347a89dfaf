"""The two stores' sessions a writing command opens, and the dual commit of a migrate run built on
them: one place, for the command's own process and for each writer process of `--writers N`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from migrate.journal.journal import Journal
from migrate.kafka.client import open_admin
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.settings import Settings
from migrate.write.dual_commit import DualCommit
from migrate.write.review import Review
from migrate.zk.client import close, connect
from migrate.zk.writer import ZkOffsetWriter


class Writers(NamedTuple):
    """The two stores' writers; zk is None when ZooKeeper is neither read nor written."""

    kafka: KafkaOffsetWriter
    zk: ZkOffsetWriter | None


@contextmanager
def open_writers(settings: Settings, zk: bool) -> Iterator[Writers]:
    """The two stores' writers, `--parallelism` commits in flight."""
    # Room for two batches' commits, and their reads.
    admin = open_admin(settings.connection, in_flight=2 * settings.parallelism + 8)
    try:
        client = connect(settings.connection) if zk else None
    except BaseException:
        admin.close()
        raise
    kafka = KafkaOffsetWriter(admin, in_flight=settings.parallelism)
    try:
        yield Writers(kafka, ZkOffsetWriter(client) if client else None)
    finally:
        admin.close()
        if client is not None:
            close(client)


def migrate_writer(settings: Settings, journal: Journal, run_id: str, writers: Writers,
                   review: Review | None, dry_run: bool) -> DualCommit:
    """The dual commit of a migrate run: ZooKeeper is read even with --no-zk-write (a plan is
    committed only while its znodes are as planned), and written unless it is given."""
    metadata = settings.metadata if settings.metadata is not None else f"zk2kafka migrate {run_id}"
    zk = None if settings.no_zk_write else writers.zk
    return DualCommit(journal, run_id, writers.kafka, zk, metadata, settings.offset_semantics,
                      zk_reader=writers.zk, review=review, dry_run=dry_run)
