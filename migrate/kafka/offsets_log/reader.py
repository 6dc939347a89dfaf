"""The one reader of `__consumer_offsets`: each asked group's records, read as the group
coordinator reads them, for the takeover rule (who committed each value Kafka holds, and when),
the retention clocks (when an Empty group became Empty, when each offset was committed) and the
clocks of the brokers that stamped them.

A group lives in one partition of the topic (Utils.abs(groupId.hashCode()) % partitions, as the
coordinator picks it). Each partition followed is read from its start to its end as of the read,
then, on the next read, from where it stopped: `sync` reads only what is new. A group followed
late is read on its own from its partition's start up to where the partition stands (the others'
state is kept); a partition is read from its start again only when its position is no longer in
the log. The records are fetched raw (wire/fetch.py), sliced by records.py, and only those of
the followed groups applied, in log order, by partition.py to each group's GroupLog (group.py).

Transactions are resolved as the coordinator resolves them: a transactional offset commit is held
by its producer id until that producer's marker; a COMMIT applies it (unless the partition holds
a value written later in the log), an ABORT drops it, and one still open is no commit.

What it reads, and only that, also measures the brokers' clocks: a record stamped later than the
moment its answer came back shows the broker that stamped it ahead of zk2kafka's clock by at
least that much (migrate/kafka/clocks.py). It reads only; the budget bounds a read, and a read
that did not finish tells nothing.
"""

from __future__ import annotations

import logging
import os
import struct
import time
from collections.abc import Iterable

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from migrate.connection import Connection
from migrate.errors import MigrateError, WorkerFailed
from migrate.heap import collecting_rarely
from migrate.kafka import _compat as lib
from migrate.kafka.client import open_admin
from migrate.kafka.clocks import Clocks
from migrate.kafka.compat import BrokerFeatures
from migrate.kafka.log_bounds import log_bounds
from migrate.kafka.offsets_log.group import GroupLog
from migrate.kafka.offsets_log.partition import PartitionLog
from migrate.kafka.offsets_log.records import CorruptRecords, batches
from migrate.kafka.offsets_log.shares import ShareRead, read_shares
from migrate.kafka.retry import RetryPolicy
from migrate.kafka.wire.fetch import FetchRequest, version_for

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
FETCH_API = 1
# Bytes one partition may give, and one answer may hold: an answer is cut from its bytes on
# kafka-python's IO thread, which should not be held up for more than a few hundredths of a second.
PARTITION_BYTES = 4 << 20
ANSWER_BYTES = 8 << 20
OUT_OF_RANGE, NOT_AUTHORIZED = 1, 29
# Retried once the leaders are described again: unknown partition, no leader, not the leader, no
# replica, storage error, fenced or unknown leader epoch, offset not available yet
MOVED = {3, 5, 6, 9, 56, 74, 75, 78}
ANSWER_WAIT = 30.0
SHARED_RECORDS = 1_000_000   # records a first read must hold to be split over processes
# Processes a large first read is split over: a core each (decoding is Python), four at most.
READERS = max(1, min(os.cpu_count() or 1, 4))


def partition_for(group: str, partitions: int) -> int:
    """The __consumer_offsets partition of `group`, as Kafka picks it:
    Utils.abs(groupId.hashCode()) % partitions."""
    h = 0
    utf16 = group.encode("utf-16-be")
    for unit in struct.unpack(f">{len(utf16) // 2}H", utf16):
        h = (31 * h + unit) & 0xFFFFFFFF
    h = h - (1 << 32) if h & 0x80000000 else h
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class Unreadable(MigrateError):
    """Why `__consumer_offsets` could not be read (the text says it)."""


class _Cursor:
    """Where a read of one partition stands: its position, where it stops, the groups it keeps
    and the partition's state it applies them to (`applied`). A partition's own cursor stops at
    the high watermark of its first answer in each read; a catch-up's (`fixed`) where the
    partition's own stood."""

    def __init__(self, partition: int, wanted: set[bytes], applied: PartitionLog,
                 position: int = 0, stop: int | None = None):
        self.partition, self.wanted, self.applied = partition, wanted, applied
        self.position, self.stop, self.fixed = position, stop, stop is not None


class OffsetsLog:
    """The followed groups' records of `__consumer_offsets`, read forward from where the last
    read stopped. Not thread-safe: one reader at a time (sync holds a lock around it)."""

    def __init__(self, admin: KafkaAdminClient, features: BrokerFeatures | None = None,
                 policy: RetryPolicy | None = None, clocks: Clocks | None = None,
                 connection: Connection | None = None, workers: int = READERS):
        self.admin = admin
        # A large first read split over `workers` processes, each on a session of its own made
        # from `connection` (shares.py); one reads in this process.
        self.connection, self.workers = connection, workers
        self._features = features
        self.policy = policy or RetryPolicy()
        self.clocks = clocks or Clocks()
        self.groups: dict[str, GroupLog] = {}
        self.partitions = 0                         # of the topic; 0 until described
        self._leaders: dict[int, int] = {}
        self._cursors: dict[int, _Cursor] = {}      # a followed partition's reading
        self._catch_up: list[_Cursor] = []          # groups followed late, read up to the rest
        self._marks: dict[int, int] = {}            # the watch's start: the log end then
        self.records = 0                            # records of the followed groups applied

    @property
    def features(self) -> BrokerFeatures:
        if self._features is None:
            self._features = BrokerFeatures.of(self.admin)
        return self._features

    # -- what to read -----------------------------------------------------------------------

    def follow(self, groups: Iterable[str]) -> None:
        """Follow `groups` too. In a partition already read, they are read from its start up to
        where it stands on their own by the next read (the others' state is kept)."""
        self._describe()
        late: dict[int, dict[str, GroupLog]] = {}
        for name in groups:
            if name in self.groups:
                continue
            group = self.groups[name] = GroupLog(name)
            p = partition_for(name, self.partitions)
            cursor = self._cursors.get(p)
            if cursor is None:
                cursor = self._cursors[p] = _Cursor(p, set(), PartitionLog({}, self._marks.get(p)))
            cursor.wanted.add(name.encode("utf-8"))
            cursor.applied.add(group)
            if cursor.position > 0:
                late.setdefault(p, {})[name] = group
        for p, found in late.items():
            waiting = next((c for c in self._catch_up if c.partition == p and c.position == 0),
                           None)
            if waiting is not None:             # one catch-up not begun takes them too
                waiting.wanted.update(name.encode("utf-8") for name in found)
                for group in found.values():
                    waiting.applied.add(group)
                continue
            self._catch_up.append(_Cursor(
                p, {name.encode("utf-8") for name in found},
                PartitionLog(found, self._marks.get(p)), stop=self._cursors[p].position))

    def mark_watch(self) -> None:
        """The watch starts now: a commit at or past each partition's log end of this moment is
        one made during it."""
        self._describe()
        tps = [TopicPartition(OFFSETS_TOPIC, p) for p in range(self.partitions)]
        for tp, bounds in log_bounds(self.admin, self.features, self.policy, tps).items():
            if isinstance(bounds, str):
                raise Unreadable(f"could not list the log end of {OFFSETS_TOPIC}-{tp.partition}: "
                                 f"{bounds}")
            self._marks[tp.partition] = bounds[1]
        for cursor in (*self._cursors.values(), *self._catch_up):
            cursor.applied.watch_from = self._marks.get(cursor.partition)

    def marks(self, marks: dict[int, int]) -> None:
        """The watch's marks as another reader took them (a worker's, shares.py)."""
        self._marks.update(marks)
        for cursor in self._cursors.values():
            cursor.applied.watch_from = self._marks.get(cursor.partition)

    def states(self) -> dict[int, tuple[int, dict, dict[str, GroupLog]]]:
        """Each partition's position, open transactions and groups: what a worker sends back."""
        return {p: (c.position, c.applied.pending, c.applied.groups)
                for p, c in self._cursors.items()}

    def group(self, name: str) -> GroupLog:
        return self.groups[name]

    def leader_of(self, group: str) -> int | None:
        """The broker leading the partition of `group` (its coordinator), as last described."""
        return self._leaders.get(partition_for(group, self.partitions)) if self.partitions else None

    # -- reading ----------------------------------------------------------------------------

    def read(self, budget: float) -> str | None:
        """Read every followed partition from its position to its end as of this read, within
        `budget` seconds; why it did not finish (then what was read stays, and the next read goes
        on from there, but nothing of an unfinished partition is to be relied on), or None."""
        if version_for(self.features.max_version(FETCH_API)) is None:
            return (f"the broker answers no Fetch version zk2kafka reads {OFFSETS_TOPIC} with "
                    f"(3 to 11)")
        deadline = time.monotonic() + budget
        try:
            self._describe()
            # The groups followed late first, a catch-up of a partition at a time (a request
            # names a partition once); their open transactions then go to the partition's own.
            while self._catch_up:
                wave = list({c.partition: c for c in reversed(self._catch_up)}.values())
                why = self._read(wave, deadline)
                if why is not None:
                    return why
                for cursor in (c for c in wave if c in self._catch_up):   # not restarted since
                    held = self._cursors[cursor.partition].applied.pending
                    for producer, commits in cursor.applied.pending.items():
                        held[producer] = commits + held.get(producer, [])
                self._catch_up = [c for c in self._catch_up if c not in wave]
            why = self._shared(deadline)
            return why or self._read(list(self._cursors.values()), deadline)
        except Unreadable as exc:
            return str(exc)
        except KafkaError as exc:
            return f"could not read {OFFSETS_TOPIC}: {type(exc).__name__}: {exc}"

    def _read(self, cursors: list[_Cursor], deadline: float) -> str | None:
        for cursor in cursors:
            if not cursor.fixed:
                cursor.stop = None              # set by this read's first answer
        left = [c for c in cursors if not c.fixed or c.position < c.stop]
        while left:
            by_leader: dict[int, list[_Cursor]] = {}
            for cursor in left:
                by_leader.setdefault(self._leaders.get(cursor.partition, -1), []).append(cursor)
            if -1 in by_leader:
                time.sleep(0.1)   # a leader being elected, or a broker coming back
                self._describe(force=True)
                if time.monotonic() > deadline:
                    return (f"{OFFSETS_TOPIC} partition(s) with no leader: "
                            f"{sorted(c.partition for c in by_leader[-1])}")
                continue
            version = version_for(self.features.max_version(FETCH_API))
            sent = {node: (cursors_of, lib.send_soon(self.admin, node, FetchRequest(
                        version, OFFSETS_TOPIC, {c.partition: c.position for c in cursors_of},
                        PARTITION_BYTES, ANSWER_BYTES)))
                    for node, cursors_of in by_leader.items()}
            for node, (cursors_of, answer) in sent.items():
                wait = deadline - time.monotonic()
                if wait <= 0:
                    return self._unfinished(left)
                _, partitions = answer.result(min(wait, ANSWER_WAIT)).value
                read_at = time.time()
                by_partition = {c.partition: c for c in cursors_of}
                for part in partitions:
                    cursor = by_partition.get(part.partition)
                    if cursor is None:
                        continue
                    done = self._take(node, cursor, part, read_at)
                    if done is not False:
                        left.remove(cursor)
                    if isinstance(done, _Cursor) and not cursor.fixed:
                        left.append(done)       # restarted: read again from its start
            if left and time.monotonic() > deadline:
                return self._unfinished(left)
        return None

    def _shared(self, deadline: float) -> str | None:
        """The partitions not read yet, when they hold enough to pay for processes, read by
        `workers` processes instead (shares.py); why that failed, or None."""
        fresh = [c for c in self._cursors.values() if c.position == 0]
        if self.workers < 2 or self.connection is None or len(fresh) < 2:
            return None
        tps = [TopicPartition(OFFSETS_TOPIC, c.partition) for c in fresh]
        sizes = {tp.partition: b[1] - b[0] for tp, b in log_bounds(
            self.admin, self.features, self.policy, tps).items() if not isinstance(b, str)}
        if sum(sizes.values()) < SHARED_RECORDS:
            return None
        shares: list[list] = [[] for _ in range(min(self.workers, len(fresh)))]
        loads = [0] * len(shares)
        for cursor in sorted(fresh, key=lambda c: -sizes.get(c.partition, 0)):
            k = loads.index(min(loads))             # the largest partitions first, to the least
            loads[k] += sizes.get(cursor.partition, 0)
            shares[k].append((cursor.partition, list(cursor.applied.groups),
                              self._marks.get(cursor.partition)))
        log.info("reading %s records of %d partitions of %s over %d processes",
                 f"{sum(sizes.values()):,}", len(fresh), OFFSETS_TOPIC, len(shares))
        try:
            answers = read_shares(read_share, self.connection, shares,
                                  max(deadline - time.monotonic(), 1.0))
        except WorkerFailed as exc:
            return str(exc)
        for answer in answers:
            if answer.why is not None:
                return answer.why
            self.clocks.merge(answer.clocks)
            self.records += answer.records
            for p, (position, pending, groups) in answer.partitions.items():
                cursor = self._cursors[p]
                cursor.position, cursor.applied = position, PartitionLog(groups, self._marks.get(p))
                cursor.applied.pending, cursor.applied.next = pending, position
                self.groups.update(groups)
        return None

    def _unfinished(self, left: list[_Cursor]) -> str:
        return (f"reading {OFFSETS_TOPIC} took longer than its budget; {len(left)} partition(s) "
                f"unfinished")

    def _take(self, node: int, cursor: _Cursor, part, read_at: float) -> bool | _Cursor:
        """One partition of an answer applied: whether the cursor is read to where it stops, or,
        its position no longer in the log, the partition's new cursor from its log start."""
        p = part.partition
        if part.error_code == OUT_OF_RANGE:
            return self._restart(p, part.log_start if part.log_start >= 0 else 0)
        if part.error_code == NOT_AUTHORIZED:
            raise Unreadable(f"not allowed to read {OFFSETS_TOPIC} (Read on the topic is needed)")
        if part.error_code in MOVED:
            self._leaders.pop(p, None)
            return False
        if part.error_code:
            raise Unreadable(f"{OFFSETS_TOPIC}-{p}: the broker answered error code "
                             f"{part.error_code}")
        if cursor.stop is None:
            cursor.stop = part.high_watermark
        position, stamped, applied = cursor.position, -1, cursor.applied
        try:
            for batch in batches(part.records, frozenset(cursor.wanted)):
                if batch.last_offset < position:
                    continue                        # a batch the fetch offset falls inside
                if cursor.fixed and batch.base_offset >= cursor.stop:
                    break                           # a catch-up stops where the partition stood
                applied.apply(batch)
                self.records += len(batch.records)
                stamped = max(stamped, batch.max_timestamp)
                position = batch.last_offset + 1
        except CorruptRecords as exc:
            raise Unreadable(f"{OFFSETS_TOPIC}-{p}: {exc}") from exc
        if stamped >= 0:
            self.clocks.kafka_read(node, stamped, read_at)
        cursor.position = position
        return position >= cursor.stop

    def _restart(self, p: int, start: int = 0) -> _Cursor:
        """Partition `p` to be read afresh from `start`: its groups' state is dropped, to be built
        again from its records (their late catch-ups with it). Its new cursor."""
        cursor = self._cursors.get(p)
        names = list(cursor.applied.groups) if cursor is not None else []
        fresh = {name: GroupLog(name) for name in names}
        self.groups.update(fresh)
        self._cursors[p] = _Cursor(p, {name.encode("utf-8") for name in names},
                                   PartitionLog(fresh, self._marks.get(p)), start)
        self._catch_up = [c for c in self._catch_up if c.partition != p]
        return self._cursors[p]

    def _describe(self, force: bool = False) -> None:
        if self.partitions and not force:
            return
        try:
            topics = self.policy.call("describe __consumer_offsets",
                                      lambda: self.admin.describe_topics([OFFSETS_TOPIC]))
        except KafkaError as exc:
            raise Unreadable(f"could not describe {OFFSETS_TOPIC}: {type(exc).__name__}: "
                             f"{exc}") from exc
        found = topics[0]["partitions"] if topics else []
        if not found:
            raise Unreadable(f"{OFFSETS_TOPIC} is not visible to this client (Describe on the "
                             f"topic is needed)")
        if self.partitions and len(found) != self.partitions:
            raise Unreadable(f"{OFFSETS_TOPIC} changed from {self.partitions} to {len(found)} "
                             f"partitions")
        self.partitions = len(found)
        self._leaders = {p["partition_index"]: p["leader_id"] for p in found
                         if p["leader_id"] >= 0}


def read_share(pipe, connection: Connection, share: list, budget: float) -> None:
    """A worker process's share of a first read (shares.py): its partitions read from their
    start on a session of its own; its ShareRead down `pipe`."""
    with collecting_rarely():   # a process that reads once, as the command that started it
        admin = open_admin(connection, client_id="zk2kafka-offsets-reader")
        try:
            reader = OffsetsLog(admin)
            reader.follow(name for _, names, _ in share for name in names)
            reader.marks({p: mark for p, _, mark in share if mark is not None})
            why = reader.read(budget)
            answer = ShareRead(why, clocks=reader.clocks, records=reader.records)
            if why is None:
                answer.partitions = reader.states()
            pipe.send(answer)
        except Exception as exc:  # noqa: BLE001 - said to the command, whose read then stops
            pipe.send(ShareRead(f"a reader process of {OFFSETS_TOPIC} failed: "
                             f"{type(exc).__name__}: {exc}"))
        finally:
            admin.close()
