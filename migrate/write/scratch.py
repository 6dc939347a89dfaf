"""Throwaway journals for dry runs: the real run's path (its batches, prechecks and journal
steps) walked on a journal nobody keeps, so the state dir's journal is neither locked nor changed.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from migrate.errors import StateDirError
from migrate.journal.journal import Journal
from migrate.journal.locks import why

_TABLES = ("runs", "groups", "partitions")


@contextmanager
def scratch_journal() -> Iterator[Journal]:
    """An empty journal in a temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="zk2kafka-dry-run-") as scratch:
        with Journal.open(Path(scratch)) as journal:
            yield journal


@contextmanager
def copy_of_run(source: Journal, run_id: str) -> Iterator[Journal]:
    """A throwaway journal holding run `run_id` as `source` holds it now (its groups, offsets
    and before-values), for a dry run of its resume. `source` is only read."""
    with scratch_journal() as copy:
        _copy_rows(source.path, copy.path, run_id)
        yield copy


def _copy_rows(source: Path, target: Path, run_id: str) -> None:
    # Column by name: a journal migrated from an older schema has its columns in another order.
    db = sqlite3.connect(target.resolve().as_uri(), uri=True, isolation_level=None)
    try:
        db.execute("ATTACH DATABASE ? AS source", (source.resolve().as_uri() + "?mode=ro",))
        db.execute("BEGIN")
        for table in _TABLES:
            columns = ", ".join(row[1] for row in db.execute(f"PRAGMA main.table_info({table})"))
            db.execute(f"INSERT INTO main.{table} ({columns}) SELECT {columns}"
                       f" FROM source.{table} WHERE run_id=?", (run_id,))
        db.execute("COMMIT")
    except sqlite3.Error as exc:
        raise StateDirError(source, f"cannot read the journal: {why(exc)}") from exc
    finally:
        db.close()
