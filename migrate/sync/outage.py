"""A ZooKeeper outage as sync's log tells it: when the connection was lost, when the session
expired, when ZooKeeper answered again and how long it was away, and when every group followed
was read again after it.

While the connection is lost nothing the old consumers commit reaches sync, and kazoo drops every
watch with the connection (it calls each watcher once, with an event of type NONE): until each
group is read again, its changes are not mirrored. So the operator an alert pages finds in the
log the outage's start, the session's expiry, its end and how long nothing was mirrored, and the
moment Kafka follows ZooKeeper again; and the status line says ZooKeeper is away while it is
(`SyncStatus.zookeeper_away_since`). `ZkOutage` is kazoo's connection listener (on kazoo's thread)
and is told each group read whole (GroupWatches.on_read, on the Follower's).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kazoo.protocol.states import KazooState
from prometheus_client import Counter

from migrate.durations import took
from migrate.state import iso
from migrate.sync.state import GroupState, SyncStatus, status_line, write_status

log = logging.getLogger(__name__)


class ZkOutage:
    """Tells an outage of the Follower's ZooKeeper session in the log and the status. `groups`:
    () -> the Follower's groups (a stopped group is read no more, and is not waited for)."""

    def __init__(self, sessions_lost: Counter, status: SyncStatus,
                 groups: Callable[[], Mapping[str, GroupState]],
                 clock: Callable[[], float] = time.time):
        self.sessions_lost, self.status, self.groups, self.clock = (sessions_lost, status, groups,
                                                                    clock)
        self.lost_at: float | None = None      # the connection lost (None: connected)
        self.expired_at: float | None = None   # the session found expired in this outage
        # After an outage: the groups still to be read again, and the outage they follow.
        self.pending: set[str] | None = None
        self.since: tuple[float, float] = (0.0, 0.0)   # (connection lost, back)
        self._lock = threading.Lock()

    def __call__(self, state: str) -> None:
        """kazoo's connection listener (on its thread): SUSPENDED, LOST or CONNECTED."""
        now = self.clock()
        if state == KazooState.SUSPENDED:
            if self.lost_at is None:
                self.lost_at = now
                log.warning("sync: ZooKeeper connection lost at %s: nothing the old consumers "
                            "commit is mirrored until it is back and every group is read again",
                            iso(now))
        elif state == KazooState.LOST:
            self.sessions_lost.inc()
            first = self.lost_at is None
            self.lost_at = now if first else self.lost_at
            self.expired_at = now
            log.warning("sync: ZooKeeper session expired at %s%s: its watches are gone; a new "
                        "session reads every group again", iso(now),
                        "" if first else f" (the connection lost at {iso(self.lost_at)}, "
                                         f"{took(now - self.lost_at)} before)")
        elif self.lost_at is not None:   # CONNECTED again
            self._back(now)
        self.status.zookeeper_away_since = self.lost_at

    def _back(self, now: float) -> None:
        lost, expired = self.lost_at, self.expired_at
        followed = {n for n, g in dict(self.groups()).items() if g.stopped is None}
        with self._lock:
            self.pending, self.since = followed, (lost, now)
        self.lost_at = self.expired_at = None
        session = (f"the session expired at {iso(expired)}: a new one" if expired is not None
                   else "the same session")
        log.warning("sync: ZooKeeper back at %s after %s away (connection lost at %s; %s): "
                    "nothing was mirrored from ZooKeeper for %s; reading every group again "
                    "(%d)", iso(now), took(now - lost), iso(lost), session, took(now - lost),
                    len(followed))
        if not followed:
            self.read(())

    def read(self, names: Iterable[str]) -> None:
        """`names` were read whole (on the Follower's thread); says when the last group an outage
        left to read again is."""
        if self.pending is None:
            return
        with self._lock:
            pending = self.pending
            if pending is None:
                return
            pending.difference_update(names)
            if pending:   # a group stopped since is read no more: not waited for
                groups = dict(self.groups())
                self.pending = pending = {n for n in pending
                                          if n in groups and groups[n].stopped is None}
            if pending:
                return
            self.pending = None
            lost, back = self.since
        now = self.clock()
        log.info("sync: every group read again at %s, %s after ZooKeeper came back (connection "
                 "lost at %s, %s before): Kafka follows ZooKeeper again", iso(now),
                 took(now - back), iso(lost), took(now - lost))


class AwayStatus:
    """While ZooKeeper is away, the status line and sync-status.json every `every` seconds, from a
    thread of its own: the Follower's loop waits for ZooKeeper then, in a read re-sent once it is
    back, and says nothing. Neither is repeated while the loop still writes the file. (With
    --writers N the command's process says the shards' figures merged, the outage with them.)

    `follower`: the Follower (its status, groups and status file)."""

    def __init__(self, follower: Any, every: float = 10.0):
        self.follower, self.every = follower, every
        self._thread = threading.Thread(target=self._run, daemon=True, name="zk2kafka-sync-away")
        self._stop = threading.Event()

    def start(self) -> AwayStatus:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            status = self.follower.status
            if status.zookeeper_away_since is None or self._written_lately():
                continue
            figures = status.to_json(dict(self.follower.groups))   # a copy: the Follower adds
            log.info(status_line(figures))
            if self.follower.status_file is not None:
                try:
                    write_status(self.follower.status_file, figures, ".away.tmp")
                except OSError as exc:   # the line is said; the Follower says the file's trouble
                    log.debug("sync-status.json not written: %s", exc)

    def _written_lately(self) -> bool:
        path = self.follower.status_file
        try:
            return path is not None and time.time() - path.stat().st_mtime < self.every
        except OSError:
            return False
