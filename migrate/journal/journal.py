"""The journal: what each writing run planned and did, group by group, in
<state-dir>/journal.sqlite.

A group moves pending -> committed (Kafka holds the plan) -> verified (ZooKeeper too,
both read back), or to failed / skipped with a reason. Each transition is one SQLite
transaction, written only after its effect was confirmed, so after a crash the journal
never claims more than happened; what a crash left in flight is re-checked on resume.
The values both stores held before a group was touched are journaled before the first
write, which is what rollback restores: one value per group (values.py), so each step of a batch
is a few statements, whatever the offsets.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from migrate.batches import chunks
from migrate.diff.plan import Planned
from migrate.errors import MigrateError, StateDirError
from migrate.journal.locks import Transaction, WriterLock, why
from migrate.journal.runs import Run as Run, digest   # Run: re-exported, as importers name it
from migrate.journal.values import Before, Partition, after_text, before_text, merged

PENDING, COMMITTED, VERIFIED = "pending", "committed", "verified"
FAILED, SKIPPED = "failed", "skipped"
# A group that failed after a write and could not be put back: `rollback --execute` restores it.
PARTIAL = "partial"
GROUP_STATES = (PENDING, COMMITTED, VERIFIED, FAILED, PARTIAL, SKIPPED)
# Group names per SQL statement: well under SQLite's limit on bound parameters.
SQL_NAMES = 500
RUNNING, DONE, INCOMPLETE = "running", "done", "incomplete"

SCHEMA_VERSION = 3
SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, state TEXT NOT NULL,
    plan_hash TEXT NOT NULL, settings TEXT NOT NULL, settings_digest TEXT NOT NULL,
    rolls_back TEXT, report TEXT, created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE groups (
    run_id TEXT NOT NULL, grp TEXT NOT NULL, state TEXT NOT NULL, reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 0, before_recorded INTEGER NOT NULL DEFAULT 0,
    updated REAL NOT NULL, before TEXT, zk_after TEXT,
    PRIMARY KEY (run_id, grp));
CREATE TABLE partitions (
    run_id TEXT NOT NULL, grp TEXT NOT NULL, topic TEXT NOT NULL, part INTEGER NOT NULL,
    planned_offset INTEGER NOT NULL, zk_path TEXT NOT NULL, zk_version INTEGER,
    layout TEXT NOT NULL,
    plan_kafka_offset INTEGER, zk_mzxid INTEGER,
    before_kafka_offset INTEGER, before_kafka_metadata TEXT,
    before_zk_value BLOB, before_zk_version INTEGER,
    after_zk_version INTEGER,
    PRIMARY KEY (run_id, grp, topic, part));
"""

# Each step from a schema to the next: a column added, so a run journaled before goes on.
_UPGRADES = {
    # Runs journaled before znode identity was: their mzxid is unknown (null).
    1: "ALTER TABLE partitions ADD COLUMN zk_mzxid INTEGER;",
    # Runs journaled before the group values: theirs stay in the partitions columns (values.py).
    2: "ALTER TABLE groups ADD COLUMN before TEXT; ALTER TABLE groups ADD COLUMN zk_after TEXT;",
}

# The partitions table's columns, named as Partition's fields and in their order.
_PARTITION_FIELDS = (
    "topic, part AS partition, planned_offset AS \"offset\", zk_path, zk_version, layout,"
    " plan_kafka_offset AS kafka_offset, zk_mzxid, before_kafka_offset, before_kafka_metadata,"
    " before_zk_value, before_zk_version, after_zk_version")
_GROUP_FIELDS = "grp AS name, state, reason, attempts, before_recorded"


@dataclass(frozen=True)
class Group:
    name: str
    state: str
    reason: str | None
    attempts: int
    before_recorded: bool


class Transition(NamedTuple):
    """A group's move to `state`: with why (failed, partial, skipped), or with the znode versions
    its write left (verified), which rollback expects to find."""

    state: str
    reason: str | None = None
    zk_after: Mapping[str, int] | None = None


class Journal:
    """One SQLite file; safe to share between the writer's threads (one lock, one transaction
    per call)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                       timeout=30)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            # A transition that returned survives a power cut too.
            self._db.execute("PRAGMA synchronous=FULL")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                self._db.executescript(
                    f"BEGIN IMMEDIATE;{SCHEMA}PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
            elif version in _UPGRADES:
                self._upgrade(version)
                version = SCHEMA_VERSION
        except (OSError, sqlite3.OperationalError) as exc:
            raise StateDirError(self.path, f"cannot open the journal: {why(exc)}") from exc
        if version not in (0, SCHEMA_VERSION):
            raise MigrateError(
                f"{self.path}: journal schema {version}, this zk2kafka reads {SCHEMA_VERSION}")

    def _upgrade(self, version: int) -> None:
        """Bring a journal of an older schema to this one, in one transaction (another process
        upgrading it at the same time finds it done)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            now = self._db.execute("PRAGMA user_version").fetchone()[0]
            steps = "".join(_UPGRADES[v] for v in range(now, SCHEMA_VERSION)) if now else ""
            for statement in filter(str.strip, steps.split(";")):
                self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    _writer: WriterLock | None = None

    @classmethod
    def open(cls, state_dir: Path, writer: str | None = None) -> Journal:
        """The state dir's journal. A writing command names itself in `writer` (e.g.
        `rollback --execute R`) and holds the state dir's writers' lock for as long as the
        journal is open; readers take no lock.

        Raises WriterBusy when another writer holds it, StateDirError when the state dir is
        unusable.
        """
        lock = WriterLock.take(Path(state_dir), writer) if writer else None
        try:
            journal = cls(Path(state_dir) / "journal.sqlite")
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        journal._writer = lock
        return journal

    def close(self) -> None:
        try:
            self._db.close()
        finally:
            if self._writer is not None:
                self._writer.release()
                self._writer = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------------

    def create_run(self, run_id: str, kind: str, plan_hash: str, settings: dict[str, Any],
                   plan: Mapping[str, Iterable[Planned]], skipped: Mapping[str, str] | None = None,
                   rolls_back: str | None = None, report: str | None = None,
                   rows: Iterable[tuple] | None = None) -> None:
        """Record a run, every group pending (or skipped, with why) and every planned offset;
        one transaction.

        `rows`: the planned offsets as (group, topic, partition, offset, zk_path, zk_version,
        layout, kafka_offset, zk_mzxid) tuples (a plan file's COMMIT_COLUMNS), read in place of
        `plan`'s Planned offsets: a plan's million rows need not each become an object first.
        """
        if rows is None:
            rows = ((g, p.topic, p.partition, p.offset, p.zk_path, p.zk_version, p.layout,
                     p.kafka_offset, p.zk_mzxid) for g, planned in plan.items() for p in planned)
        now = time.time()
        with self._transaction() as db:
            db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (run_id, kind, RUNNING, plan_hash, json.dumps(settings, sort_keys=True),
                        digest(settings), rolls_back, report, now, now))
            db.executemany("INSERT INTO groups (run_id, grp, state, updated) VALUES (?,?,?,?)",
                           ((run_id, g, PENDING, now) for g in plan))
            db.executemany(
                "INSERT INTO groups (run_id, grp, state, reason, updated) VALUES (?,?,?,?,?)",
                ((run_id, g, SKIPPED, reason, now) for g, reason in (skipped or {}).items()))
            db.executemany(
                "INSERT INTO partitions (run_id, grp, topic, part, planned_offset, zk_path,"
                " zk_version, layout, plan_kafka_offset, zk_mzxid) VALUES (?,?,?,?,?,?,?,?,?,?)",
                ((run_id, *row) for row in rows))

    def record_before_many(self, run_id: str, before: Mapping[str, Before]) -> None:
        """The values both stores hold before this run writes each group, in one transaction
        (a row per group): what rollback restores."""
        if not before:
            return
        now = time.time()
        with self._transaction() as db:
            db.executemany(
                "UPDATE groups SET before=?, before_recorded=1, attempts=attempts+1, updated=?"
                " WHERE run_id=? AND grp=?",
                ((before_text(values), now, run_id, group) for group, values in before.items()))

    def set_group(self, run_id: str, group: str, state: str, reason: str | None = None,
                  zk_after: Mapping[str, int] | None = None) -> None:
        self.set_groups(run_id, {group: Transition(state, reason, zk_after)})

    def set_groups(self, run_id: str, changes: Mapping[str, Transition]) -> None:
        """Move many groups, each by its own transition, in one transaction."""
        if not changes:
            return
        assert all(change.state in GROUP_STATES for change in changes.values()), changes
        now = time.time()
        with self._transaction() as db:
            # An upsert: a sync run meets its groups as it goes. A transition without versions
            # keeps those journaled.
            db.executemany(
                "INSERT INTO groups (run_id, grp, state, reason, updated, zk_after)"
                " VALUES (?,?,?,?,?,?) ON CONFLICT (run_id, grp) DO UPDATE SET"
                " state=excluded.state, reason=excluded.reason, updated=excluded.updated,"
                " zk_after=coalesce(excluded.zk_after, zk_after)",
                ((run_id, group, change.state, change.reason, now,
                  after_text(change.zk_after) if change.zk_after else None)
                 for group, change in changes.items()))

    def record_mirrored_many(
            self, run_id: str,
            mirrored: Mapping[str, Iterable[tuple[Planned, tuple[int, str] | None]]]) -> None:
        """A sync pass committed `mirrored` to Kafka: per group, each offset with what Kafka held
        before; one transaction. A group's row appears at its first commit; a partition's
        before-value is the one from its first commit, its planned offset the latest one, which is
        what rollback restores from."""
        now = time.time()
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO groups (run_id, grp, state, before_recorded, updated)"
                " VALUES (?,?,?,1,?) ON CONFLICT (run_id, grp)"
                " DO UPDATE SET attempts=attempts+1, updated=excluded.updated",
                ((run_id, group, VERIFIED, now) for group in mirrored))
            db.executemany(
                "INSERT INTO partitions (run_id, grp, topic, part, planned_offset, zk_path,"
                " zk_version, layout, plan_kafka_offset, before_kafka_offset,"
                " before_kafka_metadata) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (run_id, grp, topic, part)"
                " DO UPDATE SET planned_offset=excluded.planned_offset,"
                " zk_version=excluded.zk_version",
                ((run_id, group, p.topic, p.partition, p.offset, p.zk_path, p.zk_version,
                  p.layout, p.kafka_offset, *(before or (None, None)))
                 for group, rows in mirrored.items() for p, before in rows))

    def add_renames(self, run_id: str, renamed: Mapping[str, str]) -> None:
        """Renames a sync run found once running (--map-group), merged into its `group_map`."""
        with self._transaction() as db:   # a JSON merge patch: one statement, whatever the names
            db.execute("UPDATE runs SET settings=json_patch(settings, ?) WHERE run_id=?",
                       (json.dumps({"group_map": dict(renamed)}), run_id))

    def set_run(self, run_id: str, state: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE runs SET state=?, updated=? WHERE run_id=?",
                       (state, time.time(), run_id))

    # -- reading ---------------------------------------------------------------------------------

    def run(self, run_id: str) -> Run | None:
        rows = self._select("SELECT * FROM runs WHERE run_id=?", run_id)
        return self._run(rows[0]) if rows else None

    def runs(self) -> list[Run]:
        rows = self._select("SELECT * FROM runs ORDER BY created, run_id")
        return [self._run(row) for row in rows]

    def renames(self) -> dict[str, tuple[str, str]]:
        """old -> (new, the latest run that moved it so) of every group a run moved into Kafka
        under another name (--map-group)."""
        found: dict[str, tuple[str, str]] = {}
        for run_id, mapped in self._select(
                "SELECT run_id, json_extract(settings, '$.group_map') FROM runs WHERE "
                "json_extract(settings, '$.group_map') IS NOT NULL ORDER BY created, run_id",
                rows=tuple):
            for old, new in (json.loads(mapped) or {}).items():
                if new != old:
                    found[old] = (new, run_id)
        return found

    def run_ids(self, kind: str) -> list[str]:
        """The runs of `kind`, oldest first: runs() without counting each one's offsets (a sync
        run's grow with every change it mirrors)."""
        return [row[0] for row in self._select(
            "SELECT run_id FROM runs WHERE kind=? ORDER BY created, run_id", kind, rows=tuple)]

    def rollback_of(self, run_id: str) -> Run | None:
        """The latest rollback run of `run_id`, to resume rather than start another."""
        rows = self._select(
            "SELECT * FROM runs WHERE rolls_back=? ORDER BY created DESC LIMIT 1", run_id)
        return self._run(rows[0]) if rows else None

    def groups(self, run_id: str) -> list[Group]:
        rows = self._select(
            f"SELECT {_GROUP_FIELDS} FROM groups WHERE run_id=? ORDER BY grp", run_id)
        return [Group(**row) for row in rows]

    def groups_of(self, run_id: str, names: list[str]) -> dict[str, Group]:
        out = {}
        for chunk in chunks(names, SQL_NAMES):
            rows = self._select(f"SELECT {_GROUP_FIELDS} FROM groups"
                                f" WHERE run_id=? AND grp IN ({_marks(chunk)})", run_id, *chunk)
            out.update((row["name"], Group(**row)) for row in rows)
        return out

    def partitions(self, run_id: str, group: str) -> list[Partition]:
        return self.partitions_of(run_id, [group])[group]

    def partitions_of(self, run_id: str, names: list[str]) -> dict[str, list[Partition]]:
        """Each group's journaled offsets, ordered by topic and partition, with the values its
        group journaled (or, journaled by an older zk2kafka, its rows)."""
        out: dict[str, list[Partition]] = {}
        for chunk in chunks(names, SQL_NAMES):
            marks = _marks(chunk)
            values = {grp: (before, after) for grp, before, after in self._select(
                f"SELECT grp, before, zk_after FROM groups WHERE run_id=? AND grp IN ({marks})",
                run_id, *chunk, rows=tuple)}
            rows: dict[str, list[tuple]] = {name: [] for name in chunk}
            for row in self._select(f"SELECT grp, {_PARTITION_FIELDS} FROM partitions"
                                    f" WHERE run_id=? AND grp IN ({marks})"
                                    " ORDER BY grp, topic, part", run_id, *chunk, rows=tuple):
                rows[row[0]].append(row[1:])
            for name in chunk:
                out[name] = merged(rows[name], *values.get(name, (None, None)))
        return out

    def _run(self, row: sqlite3.Row) -> Run:
        run_id, undone = row["run_id"], row["rolls_back"]
        counts = {r["state"]: r["n"] for r in self._select(
            "SELECT state, count(*) AS n FROM groups WHERE run_id=? GROUP BY state", run_id)}
        if undone:
            # A rollback journals no offsets of its own: it restores those of the run it undoes.
            offsets = self._select(
                "SELECT count(*) AS n FROM partitions p JOIN groups g ON g.run_id=? AND g.grp=p.grp"
                " WHERE p.run_id=?", run_id, undone)[0]["n"]
        else:
            offsets = self._select(
                "SELECT count(*) AS n FROM partitions WHERE run_id=?", run_id)[0]["n"]
        return Run(**{**dict(row), "settings": json.loads(row["settings"])},
                   groups={s: counts.get(s, 0) for s in GROUP_STATES}, offsets=offsets)

    def _select(self, sql: str, *args, rows=sqlite3.Row) -> list:
        """The rows `sql` selects, as sqlite3.Row (by name) or as `rows=tuple`."""
        # One connection shared by threads: never read inside another's transaction.
        with self._lock:
            try:
                cursor = self._db.cursor()
                if rows is tuple:
                    cursor.row_factory = None
                return cursor.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                raise StateDirError(self.path, f"cannot read the journal: {why(exc)}") from exc

    def _transaction(self):
        return Transaction(self._db, self._lock, self.path)


def _marks(names: list[str]) -> str:
    """One `?` per name, for an IN (...) list."""
    return ",".join("?" * len(names))


def journaled_renames(state_dir: Path) -> dict[str, tuple[str, str]]:
    """old -> (new, run) of the groups the state dir's runs moved under another name ({} with no
    journal there)."""
    if not (Path(state_dir) / "journal.sqlite").exists():
        return {}
    journal = Journal.open(state_dir)
    try:
        return journal.renames()
    finally:
        journal.close()
