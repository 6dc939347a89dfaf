"""What a `sync` follower reads of `__consumer_offsets`: the long-lived reader (reader.py) that its
passes and its retention clock share: it reads only what is new since the last read,
and the watch it judges commits by is the whole run (the log's end when the follower started).

Besides the brokers' records it measures the clocks both ways (migrate/kafka/clocks.py): a
commit this sync made, read back, bounds the coordinator's clock from above (it was stamped
after it was sent); the znodes a pass read bound ZooKeeper's from below (each was written before
the read came back).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Protocol

from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from migrate.connection import Connection
from migrate.kafka.clocks import Lead
from migrate.kafka.compat import BrokerFeatures
from migrate.kafka.offsets_log.group import GroupLog
from migrate.kafka.offsets_log.reader import OffsetsLog, Unreadable
from migrate.kafka.writer import KafkaOffsetWriter

log = logging.getLogger(__name__)


class Registration(Protocol):
    """A broker's registration in ZooKeeper, as migrate/zk/brokers.py reads it."""

    broker: int
    timestamp_ms: int
    ctime_ms: int


BUSY = "__consumer_offsets is being read (the first read of a large topic); judged again later"


class FollowedLog:
    """One follower's reader of `__consumer_offsets`; thread-safe (its passes and its retention
    clock's thread share it). `writer`: the follower's, whose commits' send times bound the
    brokers' clocks (None: it writes nothing); `metadata`: what those commits carry."""

    def __init__(self, admin: KafkaAdminClient, features: BrokerFeatures | None = None,
                 writer: KafkaOffsetWriter | None = None, metadata: str = "",
                 registered: Iterable[Registration] = (), connection: Connection | None = None):
        # `connection`: its first read, of every followed partition, split over processes
        self.reader = OffsetsLog(admin, features, connection=connection)
        for r in registered:   # the brokers' registrations in ZooKeeper (migrate/zk/brokers.py)
            self.reader.clocks.broker_registered(r.broker, r.timestamp_ms, r.ctime_ms)
        self.writer, self.metadata = writer, metadata
        self.lock = threading.Lock()
        self.marked = False

    def start_watch(self) -> None:
        """The watch is the whole run: from the log's end as the follower starts (else from the
        first read's)."""
        self._mark()

    def _mark(self) -> None:
        try:
            self.reader.mark_watch()
            self.marked = True
        except (Unreadable, KafkaError) as exc:   # marked at the first read that can
            log.debug("sync: could not mark __consumer_offsets' end yet: %s", exc)

    def read(self, groups: Iterable[str], budget: float,
             wait: float | None = None) -> tuple[dict[str, GroupLog], str | None]:
        """`groups`' records, read on from where the last read stopped, and why they could not
        be read (or None). `wait`: seconds to wait for a read under way on another thread; past
        it, BUSY."""
        if not self.lock.acquire(timeout=-1 if wait is None else wait):
            return {}, BUSY
        try:
            try:
                if not self.marked:
                    self._mark()
                asked = set(groups)
                self.reader.follow(asked)
            except Unreadable as exc:
                return {}, str(exc)
            started = time.time()
            why = self.reader.read(budget)
            if why is not None:
                return {}, why
            self._own_commits(started)
            return {g: self.reader.groups[g] for g in asked}, None
        finally:
            self.lock.release()

    def lead(self) -> Lead:
        with self.lock:
            return self.reader.clocks.lead()

    def zookeeper_read(self, mtime_s: float, read_done: float) -> None:
        """A znode stamped `mtime_s` by ZooKeeper, read by `read_done`. Without the lock: a pass
        does not wait for a read under way for it (one bound replaced by another, whole)."""
        self.reader.clocks.zk_seen(int(mtime_s * 1000), read_done)

    def _own_commits(self, read_started: float) -> None:
        """Each followed group's newest record this sync wrote, against when its latest commit was
        sent: that commit answered before the read began, the record is that commit's own."""
        for group, (sent, answered) in list(self.writer.accepted.items() if self.writer else ()):
            found = self.reader.groups.get(group)
            leader = self.reader.leader_of(group)
            if found is None or leader is None or answered >= read_started:
                continue
            newest = max((c for c in map(found.committed, found.keys)
                          if c is not None and c.metadata == self.metadata),
                         key=lambda c: c.log_offset, default=None)
            if newest is not None:
                self.reader.clocks.kafka_sent(leader, sent, newest.commit_ms)
