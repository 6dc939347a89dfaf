"""The journal: what each writing run planned and did, group by group, in <state-dir>/journal.sqlite.

A group moves pending -> committed (Kafka holds the plan) -> verified (ZooKeeper too,
both read back), or to failed / skipped with a reason. Each transition is one SQLite
transaction, written only after its effect was confirmed, so after a crash the journal
never claims more than happened; what a crash left in flight is re-checked on resume.
The values both stores held before a group was touched are journaled before the first
write, which is what rollback restores.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.batches import chunks
from migrate.errors import MigrateError, StateDirError, WriterBusy
from migrate.state import iso

PENDING, COMMITTED, VERIFIED, FAILED, SKIPPED = "pending", "committed", "verified", "failed", "skipped"
# A group that failed after a write and could not be put back: `rollback --execute` restores it.
PARTIAL = "partial"
GROUP_STATES = (PENDING, COMMITTED, VERIFIED, FAILED, PARTIAL, SKIPPED)
# Group names per SQL statement: well under SQLite's limit on bound parameters.
SQL_NAMES = 500
RUNNING, DONE, INCOMPLETE = "running", "done", "incomplete"

SCHEMA_VERSION = 2
SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, state TEXT NOT NULL,
    plan_hash TEXT NOT NULL, settings TEXT NOT NULL, settings_digest TEXT NOT NULL,
    rolls_back TEXT, report TEXT, created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE groups (
    run_id TEXT NOT NULL, grp TEXT NOT NULL, state TEXT NOT NULL, reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 0, before_recorded INTEGER NOT NULL DEFAULT 0, updated REAL NOT NULL,
    PRIMARY KEY (run_id, grp));
CREATE TABLE partitions (
    run_id TEXT NOT NULL, grp TEXT NOT NULL, topic TEXT NOT NULL, part INTEGER NOT NULL,
    planned_offset INTEGER NOT NULL, zk_path TEXT NOT NULL, zk_version INTEGER, layout TEXT NOT NULL,
    plan_kafka_offset INTEGER, zk_mzxid INTEGER,
    before_kafka_offset INTEGER, before_kafka_metadata TEXT, before_zk_value BLOB, before_zk_version INTEGER,
    after_zk_version INTEGER,
    PRIMARY KEY (run_id, grp, topic, part));
"""


@dataclass(frozen=True)
class Planned:
    """One offset a run commits: to Kafka, and to the znode it came from (conditioned on its version)."""

    topic: str
    partition: int
    offset: int
    zk_path: str
    zk_version: int | None
    layout: str
    kafka_offset: int | None = None  # what Kafka held when the plan was made
    zk_mzxid: int | None = None      # the znode's last-change zxid when planned: its identity beside the version

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition


@dataclass(frozen=True)
class Partition(Planned):
    """A journaled offset: the plan, and the values before and after the run touched it."""

    before_kafka_offset: int | None = None
    before_kafka_metadata: str | None = None
    before_zk_value: bytes | None = None
    before_zk_version: int | None = None
    after_zk_version: int | None = None


@dataclass(frozen=True)
class Group:
    name: str
    state: str
    reason: str | None
    attempts: int
    before_recorded: bool


@dataclass(frozen=True)
class Run:
    run_id: str
    kind: str
    state: str
    plan_hash: str
    settings: dict[str, Any]
    settings_digest: str
    rolls_back: str | None
    report: str | None
    created: float
    updated: float
    groups: dict[str, int]   # groups per state
    offsets: int

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run_id, "kind": self.kind, "state": self.state, "plan_hash": self.plan_hash,
                "settings_digest": self.settings_digest, "rolls_back": self.rolls_back, "report": self.report,
                "created": iso(self.created), "updated": iso(self.updated), "groups": self.groups,
                "offsets": self.offsets, "reviewed_plan": self.settings.get("reviewed_plan")}


def digest(data: Any) -> str:
    """A stable sha256 of JSON-able data."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class Journal:
    """One SQLite file; safe to share between the writer's threads (one lock, one transaction per call)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a transition that returned survives a power cut too
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                self._db.executescript(f"BEGIN IMMEDIATE;{SCHEMA}PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
            elif version == 1:   # runs journaled before znode identity was: their mzxid is unknown (null)
                self._db.executescript("BEGIN IMMEDIATE; ALTER TABLE partitions ADD COLUMN zk_mzxid INTEGER;"
                                       f" PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
                version = SCHEMA_VERSION
        except (OSError, sqlite3.OperationalError) as exc:
            raise StateDirError(self.path, f"cannot open the journal: {_why(exc)}") from exc
        if version not in (0, SCHEMA_VERSION):
            raise MigrateError(f"{self.path}: journal schema {version}, this zk2kafka reads {SCHEMA_VERSION}")

    _writer: WriterLock | None = None

    @classmethod
    def open(cls, state_dir: Path, writer: str | None = None) -> Journal:
        """The state dir's journal. A writing command names itself in `writer` (e.g. `rollback --execute R`)
        and holds the state dir's writers' lock for as long as the journal is open; readers take no lock.

        Raises WriterBusy when another writer holds it, StateDirError when the state dir is unusable.
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

    # -- writing ---------------------------------------------------------------------------------------------

    def create_run(self, run_id: str, kind: str, plan_hash: str, settings: dict[str, Any],
                   plan: Mapping[str, Iterable[Planned]], skipped: Mapping[str, str] | None = None,
                   rolls_back: str | None = None, report: str | None = None) -> None:
        """Record a run, every group pending (or skipped, with why) and every planned offset; one transaction."""
        now = time.time()
        with self._transaction() as db:
            db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (run_id, kind, RUNNING, plan_hash, json.dumps(settings, sort_keys=True), digest(settings),
                        rolls_back, report, now, now))
            db.executemany("INSERT INTO groups (run_id, grp, state, updated) VALUES (?,?,?,?)",
                           ((run_id, g, PENDING, now) for g in plan))
            db.executemany("INSERT INTO groups (run_id, grp, state, reason, updated) VALUES (?,?,?,?,?)",
                           ((run_id, g, SKIPPED, why, now) for g, why in (skipped or {}).items()))
            db.executemany(
                "INSERT INTO partitions (run_id, grp, topic, part, planned_offset, zk_path, zk_version, layout,"
                " plan_kafka_offset, zk_mzxid) VALUES (?,?,?,?,?,?,?,?,?,?)",
                ((run_id, g, p.topic, p.partition, p.offset, p.zk_path, p.zk_version, p.layout, p.kafka_offset,
                  p.zk_mzxid) for g, rows in plan.items() for p in rows))

    def record_before_many(self, run_id: str, before: Mapping[str, tuple[Mapping, Mapping]]) -> None:
        """The values both stores hold before this run writes each group, {group: (kafka, zk)}, in one
        transaction: what rollback restores. kafka: {(topic, partition): (offset, metadata) or None};
        zk: {path: (bytes or None, version or None)}."""
        if not before:
            return
        parts = self.partitions_of(run_id, list(before))
        now = time.time()
        with self._transaction() as db:
            db.executemany(
                "UPDATE partitions SET before_kafka_offset=?, before_kafka_metadata=?, before_zk_value=?,"
                " before_zk_version=? WHERE run_id=? AND grp=? AND topic=? AND part=?",
                ((*(kafka.get(p.key) or (None, None)), *zk[p.zk_path], run_id, group, p.topic, p.partition)
                 for group, (kafka, zk) in before.items() for p in parts[group]))
            db.executemany("UPDATE groups SET before_recorded=1, attempts=attempts+1, updated=?"
                           " WHERE run_id=? AND grp=?", ((now, run_id, group) for group in before))

    def set_group(self, run_id: str, group: str, state: str, reason: str | None = None,
                  zk_after: Mapping[str, int] | None = None) -> None:
        self.set_groups(run_id, {group: (state, reason, zk_after)})

    def set_groups(self, run_id: str, changes: Mapping[str, tuple[str, str | None, Mapping[str, int] | None]]) -> None:
        """Move many groups, {group: (state, reason, zk_after)}, in one transaction."""
        if not changes:
            return
        assert all(state in GROUP_STATES for state, _, _ in changes.values()), changes
        now = time.time()
        with self._transaction() as db:
            # An upsert: a sync run meets its groups as it goes.
            db.executemany("INSERT INTO groups (run_id, grp, state, reason, updated) VALUES (?,?,?,?,?)"
                           " ON CONFLICT (run_id, grp) DO UPDATE SET state=excluded.state, reason=excluded.reason,"
                           " updated=excluded.updated",
                           ((run_id, group, state, reason, now) for group, (state, reason, _) in changes.items()))
            db.executemany("UPDATE partitions SET after_zk_version=? WHERE run_id=? AND grp=? AND zk_path=?",
                           ((v, run_id, group, path) for group, (_, _, after) in changes.items()
                            for path, v in (after or {}).items()))

    def record_mirrored(self, run_id: str, group: str,
                        mirrored: Iterable[tuple[Planned, tuple[int, str] | None]]) -> None:
        """A sync run committed `mirrored` to Kafka for `group`: each offset with what Kafka held before.

        The group's row appears at its first commit; a partition's before-value is the one from
        its first commit, its planned offset the latest one, which is what rollback restores from.
        """
        now = time.time()
        with self._transaction() as db:
            db.execute("INSERT INTO groups (run_id, grp, state, before_recorded, updated) VALUES (?,?,?,1,?)"
                       " ON CONFLICT (run_id, grp) DO UPDATE SET attempts=attempts+1, updated=excluded.updated",
                       (run_id, group, VERIFIED, now))
            db.executemany(
                "INSERT INTO partitions (run_id, grp, topic, part, planned_offset, zk_path, zk_version, layout,"
                " plan_kafka_offset, before_kafka_offset, before_kafka_metadata) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (run_id, grp, topic, part) DO UPDATE SET planned_offset=excluded.planned_offset,"
                " zk_version=excluded.zk_version",
                ((run_id, group, p.topic, p.partition, p.offset, p.zk_path, p.zk_version, p.layout, p.kafka_offset,
                  *(before or (None, None))) for p, before in mirrored))

    def set_run(self, run_id: str, state: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE runs SET state=?, updated=? WHERE run_id=?", (state, time.time(), run_id))

    # -- reading ---------------------------------------------------------------------------------------------

    def run(self, run_id: str) -> Run | None:
        rows = self._select("SELECT * FROM runs WHERE run_id=?", run_id)
        return self._run(rows[0]) if rows else None

    def runs(self) -> list[Run]:
        return [self._run(row) for row in self._select("SELECT * FROM runs ORDER BY created, run_id")]

    def rollback_of(self, run_id: str) -> Run | None:
        """The latest rollback run of `run_id`, to resume rather than start another."""
        rows = self._select("SELECT * FROM runs WHERE rolls_back=? ORDER BY created DESC LIMIT 1", run_id)
        return self._run(rows[0]) if rows else None

    def groups(self, run_id: str) -> list[Group]:
        return [Group(*row) for row in self._select(
            "SELECT grp, state, reason, attempts, before_recorded FROM groups WHERE run_id=? ORDER BY grp", run_id)]

    def groups_of(self, run_id: str, names: list[str]) -> dict[str, Group]:
        out = {}
        for chunk in chunks(names, SQL_NAMES):
            out.update((row[0], Group(*row)) for row in self._select(
                "SELECT grp, state, reason, attempts, before_recorded FROM groups WHERE run_id=? AND grp IN"
                f" ({','.join('?' * len(chunk))})", run_id, *chunk))
        return out

    def partitions(self, run_id: str, group: str) -> list[Partition]:
        return self.partitions_of(run_id, [group])[group]

    def partitions_of(self, run_id: str, names: list[str]) -> dict[str, list[Partition]]:
        """Each group's journaled offsets, ordered by topic and partition."""
        out: dict[str, list[Partition]] = {name: [] for name in names}
        for chunk in chunks(names, SQL_NAMES):
            for row in self._select(
                    "SELECT grp, topic, part, planned_offset, zk_path, zk_version, layout, plan_kafka_offset, zk_mzxid,"
                    " before_kafka_offset, before_kafka_metadata, before_zk_value, before_zk_version, after_zk_version"
                    f" FROM partitions WHERE run_id=? AND grp IN ({','.join('?' * len(chunk))})"
                    " ORDER BY grp, topic, part", run_id, *chunk):
                out[row[0]].append(Partition(*row[1:]))
        return out

    def _run(self, row: tuple) -> Run:
        run_id = row[0]
        counts = dict(self._select("SELECT state, count(*) FROM groups WHERE run_id=? GROUP BY state", run_id))
        if row[6]:   # a rollback journals no offsets of its own: it restores those of the run it undoes
            offsets = self._select("SELECT count(*) FROM partitions p JOIN groups g ON g.run_id=? AND g.grp=p.grp"
                                   " WHERE p.run_id=?", run_id, row[6])[0][0]
        else:
            offsets = self._select("SELECT count(*) FROM partitions WHERE run_id=?", run_id)[0][0]
        return Run(run_id, row[1], row[2], row[3], json.loads(row[4]), row[5], row[6], row[7], row[8], row[9],
                   {s: counts.get(s, 0) for s in GROUP_STATES}, offsets)

    def _select(self, sql: str, *args) -> list[tuple]:
        with self._lock:  # one connection shared by threads: never read inside another's transaction
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                raise StateDirError(self.path, f"cannot read the journal: {_why(exc)}") from exc

    def _transaction(self):
        return _Transaction(self._db, self._lock, self.path)


class WriterLock:
    """One writer at a time per state dir: an exclusive flock on <state-dir>/journal.lock, held by a writing command.

    Two writers on one run or state dir undo each other (the loser's Kafka restore wipes the
    winner's offsets), so a second one stops before it reads anything. The lock is the kernel's:
    it goes with the process however that ends (kill -9 too), and the file only says who holds it.
    """

    NAME = "journal.lock"

    def __init__(self, path: Path, fd: int):
        self.path, self._fd = path, fd

    @classmethod
    def take(cls, state_dir: Path, command: str) -> WriterLock:
        """The lock, held by this process for `command`; raises WriterBusy naming the holder's pid and command."""
        path = state_dir / cls.NAME
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StateDirError(path, f"cannot open the writers' lock: {_why(exc)}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            raise WriterBusy(str(path), holder or "a writer that has not written its name yet") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}: zk2kafka {command}, since {iso(time.time())}\n".encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise StateDirError(path, f"cannot write the writers' lock: {_why(exc)}") from exc
        return cls(path, fd)

    def release(self) -> None:
        try:
            os.ftruncate(self._fd, 0)   # nobody holds it: a stale name would mislead
        except OSError:
            pass
        os.close(self._fd)   # closing the descriptor releases the flock


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT under the journal's lock; ROLLBACK on any error.

    SQLite's operational errors (a full disk, I/O errors, a read-only file) become StateDirError.
    A COMMIT that fails can leave the transaction open: it is rolled back too, so nothing of it
    reaches the file later with another thread's COMMIT.
    """

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock, path: Path):
        self.db, self.lock, self.path = db, lock, path

    def __enter__(self) -> sqlite3.Connection:
        self.lock.acquire()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            self.lock.release()
            raise StateDirError(self.path, f"cannot write the journal: {_why(exc)}") from exc
        return self.db

    def __exit__(self, exc_type, exc, _tb) -> None:
        try:
            if exc_type is None:
                self.db.execute("COMMIT")
        except sqlite3.Error as commit_failed:
            exc = commit_failed
        finally:
            try:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass   # the error that got us here is the one to report; the next BEGIN will tell if this lasts
            self.lock.release()
        if isinstance(exc, sqlite3.OperationalError):
            raise StateDirError(self.path, f"cannot write the journal: {_why(exc)}") from exc
        if exc_type is None and exc is not None:
            raise exc   # a COMMIT that failed for another reason


def _why(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)

