"""How the journal is shared: one writing command per state dir (WriterLock, an flock on
<state-dir>/journal.lock) and one transaction at a time between a command's threads."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from pathlib import Path

from migrate.errors import StateDirError, WriterBusy
from migrate.state import iso


class WriterLock:
    """One writer at a time per state dir: an exclusive flock on <state-dir>/journal.lock.

    Two writers on one run or state dir undo each other (the loser's Kafka restore wipes the
    winner's offsets), so a second one stops before it reads anything. The lock is the kernel's:
    it goes with the process however that ends (kill -9 too), and the file only says who holds it.
    """

    NAME = "journal.lock"
    # How long a writer keeps trying before it calls the lock busy: `holder()` takes it shared for
    # an instant, which must not turn a writer away.
    PATIENCE = 0.5

    def __init__(self, path: Path, fd: int):
        self.path, self._fd = path, fd

    @classmethod
    def take(cls, state_dir: Path, command: str) -> WriterLock:
        """The lock, held by this process for `command`.

        Raises WriterBusy naming the holder's pid and command, StateDirError when the lock's
        file is unusable.
        """
        path = state_dir / cls.NAME
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StateDirError(path, f"cannot open the writers' lock: {why(exc)}") from exc
        deadline = time.monotonic() + cls.PATIENCE
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
                os.close(fd)
                holder = holder or "a writer that has not written its name yet"
                raise WriterBusy(str(path), holder) from None
        try:
            os.ftruncate(fd, 0)
            held = f"pid {os.getpid()}: zk2kafka {command}, since {iso(time.time())}\n"
            os.pwrite(fd, held.encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise StateDirError(path, f"cannot write the writers' lock: {why(exc)}") from exc
        return cls(path, fd)

    @classmethod
    def holder(cls, state_dir: Path) -> str | None:
        """Who holds the state dir's lock now (its line in the file, "" before it wrote it), or
        None when no process does: a run journaled `running` then lost its process.

        Found by taking the lock shared and dropping it at once (a writer starting in that
        instant waits for it, PATIENCE); never waits.
        """
        try:
            fd = os.open(state_dir / cls.NAME, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateDirError(state_dir / cls.NAME,
                                f"cannot read the writers' lock: {why(exc)}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        finally:
            os.close(fd)   # closing drops the shared lock if it was taken
        return None

    def release(self) -> None:
        try:
            os.ftruncate(self._fd, 0)   # nobody holds it: a stale name would mislead
        except OSError:
            pass
        os.close(self._fd)   # closing the descriptor releases the flock


class Transaction:
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
            raise StateDirError(self.path, f"cannot write the journal: {why(exc)}") from exc
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
                # The error that got us here is the one to report; the next BEGIN tells if
                # this lasts.
                pass
            self.lock.release()
        if isinstance(exc, sqlite3.OperationalError):
            raise StateDirError(self.path, f"cannot write the journal: {why(exc)}") from exc
        if exc_type is None and exc is not None:
            raise exc   # a COMMIT that failed for another reason


def why(exc: BaseException) -> str:
    """What went wrong with a file, in a few words: the OS's text, else the error's own."""
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
