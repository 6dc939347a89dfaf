"""A member's commit, once seen, kept in the state dir (`evidence.sqlite`): the log cleaner later
removes the records that showed the group's members (group.py: Membership.compacted), and a
takeover zk2kafka saw stays shown. The gate, `sync` and the diff keep what they read and use what
was kept.

A kept commit stands for the very record it was seen in: the same place in the log of
`__consumer_offsets` (the cleaner keeps offsets) and the same value. It is used only for a commit
that a later read finds with its group's earlier records compacted away; the value Kafka answers
is checked against that record as always (takeover.seen). A state dir that cannot keep it loses
nothing but the keeping: said once, and the commit is judged on what the log shows.
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path

from migrate.kafka.offsets_log.group import Commit, Membership
from migrate.kafka.offsets_log.schema import Member
from migrate.kafka.values import Key

log = logging.getLogger(__name__)
FILE = "evidence.sqlite"
SCHEMA = """CREATE TABLE IF NOT EXISTS member_commits (
    kafka_group TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL,
    log_offset INTEGER NOT NULL, committed_offset INTEGER NOT NULL, commit_ms INTEGER NOT NULL,
    members INTEGER NOT NULL, generation INTEGER, protocol_type TEXT NOT NULL,
    member_id TEXT, client_id TEXT, client_host TEXT,
    PRIMARY KEY (kafka_group, topic, partition))"""
Row = tuple   # (log_offset, committed_offset, commit_ms, members, generation, protocol_type,
#               member_id, client_id, client_host)


class Kept:
    """The member commits kept in one state dir (None: none kept, none used)."""

    def __init__(self, root: Path | None):
        self.path = root / FILE if root is not None else None
        self._kept: dict[tuple[str, str, int], Row] | None = None
        self._seen: dict[tuple[str, str, int], Row] = {}

    def use(self, group: str, key: Key, commit: Commit) -> Commit:
        """`commit` of `group`'s `key` as a read found it; where its group's earlier records were
        compacted away, as it was seen before, if it was. A member's commit is kept (`save`)."""
        by = commit.by
        if by.compacted:
            row = self._load().get((group, *key))
            if row is None or row[:3] != (commit.log_offset, commit.offset, commit.commit_ms):
                return commit
            member = Member(row[6], row[7] or "", row[8] or "", None) if row[6] else None
            return commit._replace(by=Membership(row[3], row[4], row[5], member,
                                                 True if member else None, kept=True))
        if by.members and not by.transactional and by.covered is not False and not by.kept:
            m = by.member
            self._seen[(group, *key)] = (
                commit.log_offset, commit.offset, commit.commit_ms, by.members, by.generation,
                by.protocol_type, m.member_id if m else None, m.client_id if m else None,
                m.client_host if m else None)
        return commit

    def save(self) -> None:
        """Keep the member commits seen since the last save (one transaction)."""
        if not self._seen or self.path is None:
            return
        seen, self._seen = self._seen, {}
        try:
            with closing(self._connect()) as db, db:
                db.executemany("INSERT OR REPLACE INTO member_commits VALUES "
                               "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               [(*k, *row) for k, row in seen.items()])
        except (OSError, sqlite3.Error) as exc:
            self._lost(exc)
            return
        if self._kept is not None:
            self._kept.update(seen)

    def _load(self) -> dict[tuple[str, str, int], Row]:
        if self._kept is None:
            self._kept = {}
            if self.path is not None and self.path.exists():
                try:
                    with closing(self._connect()) as db:
                        for row in db.execute("SELECT * FROM member_commits"):
                            self._kept[row[:3]] = row[3:]
                except (OSError, sqlite3.Error) as exc:
                    self._lost(exc)
        return self._kept

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        db.execute(SCHEMA)
        return db

    def _lost(self, exc: Exception) -> None:
        log.warning("could not keep the members' commits seen in %s (%s): a commit whose records "
                    "the log cleaner removes will not be shown to be a member's", self.path, exc)
        self.path = None
