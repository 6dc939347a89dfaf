"""Follow mode for a rolling cutover: mirror each ZooKeeper offset change into Kafka while old
consumers run.

Each group read is watched (migrate.sync.watch); a fired watch marks its group dirty. Dirty groups
are read again in a pass (at most every GATHER seconds, at least every `tick`), and their changed
offsets committed to Kafka, one OffsetCommit per group. A re-scan every `--rescan-every` catches
what no watch tells (new partitions, new groups), checks Kafka's side of every group and notices
groups that gained live Kafka members; of ZooKeeper it lists every group but reads again only the
offset znodes whose watch is not armed. The first reads every group at once; later ones read their
groups a slice at a time between passes, spread over half the interval, so that a change never
waits behind a re-scan of the whole fleet (some 25 s at 10,000 groups). `--renew-every` re-commits
the unchanged offsets of groups nobody consumes in Kafka yet, so they do not expire. A group whose
Kafka group (the one it maps to, under --map-group) gained members is left alone from then on; a
group whose old consumers all left `ids/` is reported ready to switch. Both are said once.
ZooKeeper is only read. What sync does is counted in `Follower.metrics`, served by
`--metrics-address` (migrate.sync.service).

Never backwards by surprise: sync writes a partition's offset only where Kafka holds none or
holds a value zk2kafka wrote, told by the commit metadata and the journal (`Authorship`), so
the rule holds across restarts and new runs. Any other value stops the group: taken over where
the takeover rule shows a new consumer committed it, else differs. Rows sync cannot mirror
(MALFORMED, UNREADABLE, a topic or partition Kafka lacks) are reported, kept out of the commit,
and keep their group from being called ready.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kazoo.client import KazooClient

from migrate.diff.plan import Planned
from migrate.group_map import GroupMap
from migrate.heap import freeze_survivors, settle_heap
from migrate.journal import journal as j
from migrate.journal.authorship import Authorship, Held
from migrate.kafka.snapshot import IDLE_STATES
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter
from migrate.kafka.values import Key
from migrate.stores import OUTAGES
from migrate.sync.decide import Takeover, decide, taken_over_since
from migrate.sync.metrics import STOP_REASONS, SyncMetrics, lag
from migrate.sync.outage import ZkOutage
from migrate.sync.readiness import Readiness, journaled_zk_writes, note_moves
from migrate.sync.renames import SyncRenames
from migrate.sync.state import (GroupState, Sweep, SyncStatus, planned_row, show_offsets,
                                status_line, unknown_partitions, write_status)
from migrate.sync.watch import GroupWatches
from migrate.zk.quiet import QUIET_FOR
from migrate.zk.reader import ZkOffsetReader

log = logging.getLogger(__name__)
RETRY_OUTAGE_AFTER = 5.0   # seconds: a store away longer than the retries is tried again this soon
SPREAD = 0.5   # a re-scan after the first reads its groups over this share of --rescan-every
# Seconds from one pass's start to the next's at the least: the watches that fire meanwhile share
# a pass. A pass costs much the same CPU for one change as for dozens (a metadata lookup, an
# OffsetFetch, a journal transaction; docs/performance.md).
GATHER = 0.1
LEFT_ALONE = "; left alone: its members' partitions are theirs, its other offsets not covered"


class Follower:
    """Mirrors the selected groups' ZooKeeper offsets into Kafka until `stop` is set.

    `list_groups`: () -> {group: Kafka group state}; `partitions`: (topics) -> {topic: {partition
    numbers}} for those Kafka has. `dry_run`: read, watch and decide as a real run does, and stop
    at the lowest write point (no commit, nothing journaled); a writing run needs `journal`.
    `owns`: the selected groups this Follower takes (one shard of `sync --writers N`); all of them
    by default. `status_every`: seconds between two status lines; None logs none (a shard: the
    command logs the shards' figures merged). `renames`: sync/renames.py; `takeover`: decide.py.
    """

    def __init__(self, client: KazooClient, reader: ZkOffsetReader, kafka: KafkaOffsetWriter,
                 list_groups: Callable[[], dict[str, str | None]],
                 partitions: Callable[[list[str]], dict[str, set[int]]],
                 journal: j.Journal | None, run_id: str, metadata: str, rescan_every: float,
                 renew_every: float | None, status_file: Path | None = None, *, dry_run: bool,
                 status_every: float | None = 10.0, tick: float = 0.5,
                 per_group_metrics: bool = True, owns: Callable[[str], bool] = lambda group: True,
                 quiet_for: float = QUIET_FOR, gather: float = GATHER,
                 renames: SyncRenames | None = None, takeover: Takeover = Takeover()):
        if not dry_run and journal is None:
            raise ValueError("a sync that writes needs a journal")
        self.renames = renames or SyncRenames(GroupMap())
        self.reader, self.kafka = reader, self.renames.writer(kafka)
        self.list_groups, self.partitions = list_groups, partitions
        self.journal, self.run_id, self.metadata, self.dry_run = journal, run_id, metadata, dry_run
        self.authorship = Authorship(journal, metadata)
        self.rescan_every, self.renew_every, self.owns = rescan_every, renew_every, owns
        self.status_file, self.status_every, self.tick = status_file, status_every, tick
        self.gather, self.takeover = gather, takeover
        self.groups: dict[str, GroupState] = {}
        self.status = SyncStatus(renamed=self.renames.renamed)
        self.metrics = SyncMetrics(lambda: self.groups, per_group=per_group_metrics,
                                   named=self.renames.named)
        self.outage = ZkOutage(self.metrics.sessions_lost, self.status, lambda: self.groups)
        self.watches = GroupWatches(client, reader, self._mark, self._armed, self.outage.read)
        self.last_rescan: float | None = None   # time.monotonic() when the last re-scan finished
        self.sweep: Sweep | None = None           # the re-scan under way
        self._dirty: set[str] = set()
        # Counts the changes the status file shows at once (a group ready, stopped, or with rows
        # it cannot mirror); the rest it shows every status interval.
        self.changes = self._written = self.stops = 0   # stops: groups stopped, or stopped anew
        self.readiness = Readiness(quiet_for, self._changed,
                                   functools.partial(journaled_zk_writes, journal))
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._kafka_reads = ThreadPoolExecutor(2, thread_name_prefix="zk2kafka-sync-kafka")

    def run(self, stop: threading.Event) -> SyncStatus:
        self.watches.client.add_listener(self.outage)   # said in the log (sync/outage.py)
        try:
            return self._run(stop)
        finally:
            self.watches.client.remove_listener(self.outage)
            self._kafka_reads.shutdown(wait=False, cancel_futures=True)

    def _run(self, stop: threading.Event) -> SyncStatus:
        next_rescan = next_status = 0.0
        at_once = True   # the first re-scan, and one that catches up after an outage
        while not stop.is_set():
            now = time.monotonic()
            try:
                if self.sweep is None and now >= next_rescan:
                    self.begin_rescan(0.0 if at_once else SPREAD * self.rescan_every)
                    next_rescan, at_once = now + self.rescan_every, False
                dirty = self._take_dirty()
                if dirty:
                    self.sync(dirty)
                    freeze_survivors()
                if self.sweep is not None:
                    self.continue_rescan()
                if self.renew_every:
                    self.renew()
                self._judge_again()
            except OUTAGES as exc:
                # A store away for longer than the retries: say so and go on; a re-scan of every
                # group at once, soon, reading every znode again (whether a watch request that
                # failed set its watch is unknown), catches up, the failed pass's groups included.
                self.status.errors += 1
                self.metrics.outages.labels(type(exc).__name__).inc()
                self.watches.forget()
                log.warning("sync: %s: %s; trying again at the next re-scan",
                            type(exc).__name__, exc)
                self.sweep, at_once = None, True
                next_rescan = now + RETRY_OUTAGE_AFTER
            if self.status_every is not None and now >= next_status:
                self.report()
                next_status = now + self.status_every
            elif self.changes != self._written:
                self._write_status()   # a group ready or stopped shows in the file at once
            self._wake.wait(self.tick)
            self._wake.clear()
            rest = self.gather - (time.monotonic() - now)
            if rest > 0:
                stop.wait(rest)
        self.report()
        return self.status

    # -- one pass over some groups ----------------------------------------------------------------

    def begin_rescan(self, spread: float) -> None:
        """List the selected groups, stop those with Kafka members, and start reading them all
        whole over `spread` seconds (continue_rescan)."""
        started = time.monotonic()
        self.takeover.probe()
        listed = self.reader.groups()
        names = [n for n in listed if self.owns(n)]
        for name in names:
            self.groups.setdefault(name, GroupState())
        # The mapping over every group listed (each shard's alike), journaled before any commit.
        renamed, refused = self.renames.admit(listed)
        if renamed and not self.dry_run:
            self.journal.add_renames(self.run_id, renamed)
        for name in filter(self.owns, refused):
            self._stop(name, refused[name], "map_refused")
        states = self.list_groups()
        for name in names:
            kafka = self.renames.kafka_name(name)   # the group it is mirrored into
            if (state := states.get(kafka)) is not None and state not in IDLE_STATES:
                self._stop(name, f"Kafka group {'' if kafka == name else repr(kafka) + ' '}is "
                           f"{state}: consumers joined in Kafka{LEFT_ALONE}", "kafka_members")
        self.sweep = Sweep(names, started, spread)

    def continue_rescan(self) -> None:
        """Read the re-scan's groups whose turn has come; count the re-scan once all are read."""
        sweep = self.sweep
        due = sweep.due(time.monotonic())
        self.sync([n for n in due if self.groups[n].stopped is None], whole=True)
        self.judge_stopped(due)
        sweep.done += len(due)
        if sweep.done < len(sweep.names):
            return
        # Counted once it went through: /healthz tells a sync whose re-scans keep failing.
        self.sweep = None
        self.status.rescans += 1
        self.last_rescan = time.monotonic()
        self.metrics.rescan_seconds.observe(self.last_rescan - sweep.started)
        settle_heap()

    def sync(self, names: list[str], renew: frozenset[str] = frozenset(),
             whole: bool = False) -> None:
        """Read `names` from ZooKeeper (`whole`: every znode, else what fired), re-arm their
        watches, commit what changed (and renew those in `renew`), then say which groups became
        ready."""
        names = [n for n in names if self.groups.setdefault(n, GroupState()).stopped is None]
        if not names:
            return
        # Kafka's side is asked while ZooKeeper is read: neither depends on the other, and each is
        # a round trip a pass would otherwise wait for in turn. The topics are those of the last
        # read; one the new read adds is asked after it.
        before = self._topics(names)
        asked = self._kafka_reads.submit(self.partitions, sorted(before)) if before else None
        fetched = self._kafka_reads.submit(self.kafka.committed_many, names)
        seen = time.time()
        for name, read in self.watches.read(names, whole).items():
            group = self.groups[name]
            note_moves(group, read.offsets, seen)
            group.offsets, group.unmirrored = read.offsets, read.unmirrored
            group.old_consumers = read.old_consumers
        known = asked.result() if asked is not None else {}
        added = self._topics(names) - before
        if added:
            known.update(self.partitions(sorted(added)))
        unknown_partitions([self.groups[n] for n in names], known)
        committed = fetched.result()
        for name in names:
            if not isinstance(committed[name], Exception):
                self.groups[name].kafka = {key: held[0] for key, held in committed[name].items()}
        todo = decide(names, self.groups, committed, renew, self.authorship, self._stop,
                      self.takeover.watching(self.renames.kafka_name, self.kafka.committed_many))
        done = self._commit(todo.changes, committed, renewal=False)
        self._commit(todo.renewals, committed, renewal=True)
        for name in names:
            self.groups[name].lag = lag(self.groups[name])
            self.readiness.judge(name, self.groups[name],
                                 unconfirmed=name in todo.changes and name not in done)

    def judge_stopped(self, names: list[str]) -> None:
        """Judge again the groups of `names` stopped as differing (decide.taken_over_since): one
        taken over since is said to be. Nothing is committed: a stopped group stays stopped."""
        names = [n for n in names if self.groups[n].stop_reason == "differs"]
        if not names:
            return
        fetched = self._kafka_reads.submit(self.kafka.committed_many, names)
        for name, read in self.watches.read(names, True).items():
            self.groups[name].offsets = read.offsets
        for name, why in taken_over_since(names, self.groups, fetched.result(), self.authorship,
                                          self.takeover.watching(self.renames.kafka_name,
                                                                 self.kafka.committed_many)).items():
            self._stop(name, why, "taken_over")

    def _topics(self, names: list[str]) -> set[str]:
        return {topic for n in names for topic, _ in self.groups[n].offsets}

    def _judge_again(self) -> None:
        """Judge again the groups whose quiet window ended with no change read since (one with
        a fired watch is judged when read)."""
        with self._lock:
            dirty = set(self._dirty)
        for name in self.readiness.due():
            if name in dirty or self.groups[name].stopped is not None:
                continue
            self.readiness.judge(name, self.groups[name], unconfirmed=False)

    def _changed(self) -> None:
        self.changes += 1

    def states_version(self) -> tuple[int, int, int]:
        """Changes whenever a group comes, becomes ready or not, or stops (groups never go)."""
        return len(self.groups), self.readiness.flips, self.stops

    def _take_dirty(self) -> list[str]:
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        return sorted(dirty)

    def _armed(self, watches: int, seconds: float) -> None:
        """A batch of `watches` armed in `seconds` (on this thread, from GroupWatches.read)."""
        self.metrics.watches_armed.inc(watches)
        self.metrics.rearm_seconds.observe(seconds)

    def _mark(self, name: str) -> None:
        """A watch fired for `name` (on kazoo's thread): read it again at the next tick."""
        with self._lock:
            self._dirty.add(name)
        self._wake.set()

    # -- writing ----------------------------------------------------------------------------------

    def renew(self) -> None:
        """Re-commit the unchanged offsets of groups whose last commit is older than
        --renew-every."""
        due = time.time() - self.renew_every
        todo = [n for n, g in self.groups.items()
                if g.stopped is None and g.offsets and g.last_commit < due]
        if todo:
            self.sync(todo, renew=frozenset(todo))

    def _commit(self, commits: dict[str, dict[Key, int]],
                committed: dict[str, Held | GroupRejected], renewal: bool) -> set[str]:
        """Commit each group's offsets; the groups whose commit Kafka accepted (all of them in a
        dry run). `committed`: what Kafka held before, journaled beside each offset."""
        if not commits:
            return set()
        if self.dry_run:   # the lowest write point
            for name, offsets in commits.items():
                log.warning("sync (dry run): would commit %s for group %s", show_offsets(offsets),
                            self.renames.named(name))
                self.groups[name].mirrored.update(offsets)
            return set(commits)
        results = self.kafka.commit_many(commits, self.metadata)
        done = set()
        now = time.time()
        accepted: dict[str, list[tuple[Planned, tuple[int, str] | None]]] = {}
        for name, error in results.items():
            if isinstance(error, GroupRejected):
                self.metrics.commit_errors.labels(type(error).__name__).inc()
                self._stop(name, f"Kafka refused the commit: {error.reason}"
                           f"{LEFT_ALONE if error.live else ''}",
                           "kafka_members" if error.live else "commit_refused")
            elif error is not None:
                self.status.errors += 1
                self.metrics.commit_errors.labels(type(error).__name__).inc()
                log.warning("sync: group %s: %s: %s; trying again",
                            self.renames.named(name), type(error).__name__, error)
                self._mark(name)
            else:
                done.add(name)
                accepted[name] = self._committed(name, commits[name], committed[name], renewal,
                                                 now)
        if accepted and not renewal:   # the status shows the pass's last change
            name = next(reversed(accepted))
            self.status.last_change = f"{self.renames.named(name)} {show_offsets(commits[name])}"
        # One transaction for the pass. A crash before it leaves Kafka ahead of the journal, as
        # a crash between any commit and its row could: the default metadata still names this
        # run; under a custom one the restarted sync stops the group (never overwrites it).
        self.journal.record_mirrored_many(self.run_id, accepted)
        return done

    def _committed(self, name: str, offsets: dict[Key, int], held: Held, renewal: bool,
                   now: float) -> list[tuple[Planned, tuple[int, str] | None]]:
        """Kafka accepted `offsets` for `name`: its state follows, and the rows to journal,
        each with what Kafka held before."""
        group = self.groups[name]
        group.mirrored.update(offsets)
        group.kafka.update(offsets)
        group.last_commit = now
        self.status.commits += 1
        self.metrics.commits.inc()
        rows = [(planned_row(key, offset, group.offsets[key], held.get(key)), held.get(key))
                for key, offset in offsets.items()]
        if renewal:
            self.status.renewals += 1
            self.metrics.renewals.inc()
            return rows
        self.status.offsets += len(offsets)
        group.offsets_mirrored += len(offsets)
        group.last_mirrored = now
        self.metrics.offsets_mirrored.inc(len(offsets))
        self.status.last_change_at = now
        if log.isEnabledFor(logging.DEBUG):   # -v's: a line a commit has a cost (performance.md)
            log.debug("sync: group %s: committed %s", self.renames.named(name),
                      show_offsets(offsets))
        return rows

    def _stop(self, name: str, why: str, reason: str) -> None:
        assert reason in STOP_REASONS, reason   # the series' label stays a fixed set
        group = self.groups.setdefault(name, GroupState())
        again = group.stop_reason == "differs" and reason == "taken_over"   # judge_stopped's
        if group.stopped is not None and not again:
            return
        group.stopped, group.stop_reason = why, reason
        self.changes, self.stops = self.changes + 1, self.stops + 1
        said = "left alone as differing, was taken over since" if again else "is no longer synced"
        log.warning("sync: group %s %s: %s%s", self.renames.named(name), said, why,
                    "; judged again at each re-scan" if reason == "differs" else "")
        if not self.dry_run:
            self.journal.set_group(self.run_id, name, j.SKIPPED, why)

    # -- telling ----------------------------------------------------------------------------------

    def report(self) -> None:   # the status line and file from one build of the figures
        status = self.status.to_json(self.groups) if self.status_every is not None else None
        if status is not None:
            log.info(status_line(status))
        self._write_status(status)

    def _write_status(self, status: dict | None = None) -> None:
        self._written = self.changes
        if self.status_file is not None:
            write_status(self.status_file, status or self.status.to_json(self.groups))

