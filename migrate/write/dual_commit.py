"""The dual commit: a journaled run's groups written to Kafka and ZooKeeper, every step
confirmed first.

Per group: check both stores still hold what the plan saw (or, resuming, what this run
wrote), journal the before-values, commit to Kafka and read it back (-> committed), write
ZooKeeper conditioned on the scanned versions where its bytes change, and read every znode
back: written ones must hold the run's value, the others be as they were read before the
Kafka commit (-> verified). Groups go
through these steps in batches, so each step is a few pipelined requests and one journal
transaction for hundreds of groups. A group that fails does not stop the others.
Rollback walks the same steps backwards, group by group.

This module orders the steps and journals their outcomes; what each store must hold, and how
it is written back, is in kafka_half.py and zk_half.py.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kazoo.exceptions import ZookeeperError

from migrate.errors import MigrateError
from migrate.journal import journal as j
from migrate.journal.values import with_before
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter
from migrate.stores import OUTAGES
from migrate.write import kafka_half
from migrate.write.kafka_half import Held, KafkaHalf, committed_offset
from migrate.write.put_back import PutBackFailed, put_back
from migrate.write.review import Review
from migrate.write.zk_half import NoZkWrite, ZkHalf, check_zk_unchanged
from migrate.zk.walk import RETRIABLE
from migrate.zk.writer import ZkChanged, ZkOffsetWriter, Znode

log = logging.getLogger(__name__)

CRASH_ENV = "ZK2KAFKA_CRASH_AT"
# Set in a writer process of `--writers N` (writer_shards.py): the command's pid.
WRITER_PARENT_ENV = "ZK2KAFKA_WRITER_PARENT"
WOULD_WRITE = "would write"   # a dry run's outcome for a group that passed every check


def crash_point(name: str) -> None:
    """Fault injection for the resume tests: die here as `kill -9` would, when
    ZK2KAFKA_CRASH_AT names this step.

    In a writer process of `--writers N` the command's process is killed first: the command
    dies, as it would without writer processes (its other writer processes die with it).
    """
    if os.environ.get(CRASH_ENV) == name:
        if os.environ.get(WRITER_PARENT_ENV):
            os.kill(int(os.environ[WRITER_PARENT_ENV]), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)


class GroupFailed(MigrateError):
    """A group cannot be written safely (its stores changed under the plan); the run goes on
    without it."""

    def __init__(self, group: str, reason: str):
        super().__init__(f"group {group}: {reason}")
        self.group, self.reason = group, reason


@dataclass(frozen=True)
class Outcome:
    group: str
    state: str            # a journal group state; pending when interrupted
    reason: str | None
    offsets: int


class _Start(NamedTuple):
    """What a batch read before its first step: the journal's and both stores' view of it."""

    parts: dict[str, list[j.Partition]]   # each group's journaled offsets
    resumed: set[str]   # groups with before-values journaled: a crash may have written them
    kafka_now: dict[str, Held | GroupRejected]
    zk_now: dict[str, Znode]


class _Errors(NamedTuple):
    """A pipelined step's per-group errors: refusals to fail, outages left for resume."""

    refused: dict[str, str]
    interrupted: dict[str, Outcome]


class _Batch:
    """The outcomes of one migrate() call's groups, as each step settles some of them."""

    def __init__(self, groups: list[str]):
        self.groups = groups
        self._outcomes: dict[str, Outcome] = {}

    def live(self) -> list[str]:
        """The groups no step has settled yet, in order."""
        return [g for g in self.groups if g not in self._outcomes]

    def settle(self, outcomes: Mapping[str, Outcome]) -> None:
        self._outcomes.update(outcomes)

    def outcomes(self) -> list[Outcome]:
        return [self._outcomes[g] for g in self.groups]


class DualCommit:
    """Writes a run's groups batch by batch (or, for a rollback run, restores them one by one);
    thread-safe."""

    def __init__(self, journal: j.Journal, run_id: str, kafka: KafkaOffsetWriter,
                 zk: ZkOffsetWriter | None, metadata: str, semantics: str = "next",
                 zk_reader: ZkOffsetWriter | None = None,
                 review: Review | None = None, dry_run: bool = False):
        """`zk`: None for --no-zk-write, which still reads ZooKeeper through `zk_reader`: a plan
        is only committed while its znodes are the ones planned from.
        `review`: a reviewed plan's groups and logs as the diff saw them, checked with the
        offsets and znodes (review.py).
        `dry_run`: everything up to the first write (reads, prechecks), then each group that
        passed is settled WOULD_WRITE; neither store nor the before-values are touched.
        """
        self.journal, self.run_id = journal, run_id
        self.kafka, self.kafka_half = kafka, KafkaHalf(kafka)
        self.zk_half = ZkHalf(zk, semantics) if zk is not None else NoZkWrite(zk_reader)
        self.metadata = metadata
        self.review, self.dry_run = review, dry_run
        # Groups whose stores moved since the plan, before anything was written.
        self.moved: set[str] = set()

    # -- migrate ---------------------------------------------------------------------------------

    def migrate(self, groups: list[str]) -> list[Outcome]:
        """Take a batch of groups through the dual commit; one outcome per group, in order.

        Each store is read, written and read back for the whole batch at once (one OffsetFetch
        per coordinator, commits and ZooKeeper transactions pipelined, one journal transaction
        per step), but every check and every outcome is the group's own. A store away past
        the retry deadline leaves the groups not settled yet for resume.
        """
        batch = _Batch(groups)
        try:
            self._migrate(batch)
        except OUTAGES as exc:
            batch.settle(self._interrupt(batch.live(), exc))
        return batch.outcomes()

    def _migrate(self, batch: _Batch) -> None:
        start = self._read(batch.groups)
        before = self._check(batch, start)
        if self.dry_run:   # the lowest write point: from here on, everything writes
            batch.settle({g: Outcome(g, WOULD_WRITE, None, len(start.parts[g]))
                          for g in batch.live()})
            return
        parts = self._record_before(before, start.parts)
        committed = self._commit_kafka(batch, parts, start.kafka_now)
        verified = self._commit_zk(batch, {g: parts[g] for g in committed}, start.zk_now)
        crash_point("after-zk-write")
        self.journal.set_groups(self.run_id, {
            g: j.Transition(j.VERIFIED, zk_after=versions) for g, versions in verified.items()})
        batch.settle({g: Outcome(g, j.VERIFIED, None, len(parts[g])) for g in verified})

    def _read(self, groups: list[str]) -> _Start:
        states = self.journal.groups_of(self.run_id, groups)
        parts = self.journal.partitions_of(self.run_id, groups)
        kafka_now = self.kafka.committed_many(groups)
        zk_now = self.zk_half.read([p.zk_path for g in groups for p in parts[g]])
        resumed = {g for g in groups if states[g].before_recorded}
        return _Start(parts, resumed, kafka_now, zk_now)

    def _check(self, batch: _Batch, start: _Start) -> dict[str, j.Before]:
        """Fail each group whose stores are not as expected; the before-values of the others.

        Untouched groups: both stores must still be as the diff saw them. Groups caught in
        flight by a crash: each partition holds its before-value, this run's value, or none
        (expired in an outage); they may have been written, so a failure puts them back.
        """
        untouched = [g for g in batch.groups if g not in start.resumed]
        reviewing = self.review is not None and untouched
        state_now = self.kafka_half.states(untouched) if reviewing else {}
        log_now = self.review.read_now(self.kafka, self.zk_half, (
            p for g in untouched for p in start.parts[g])) if reviewing else None
        failures, before = {}, {}
        for g in batch.groups:
            parts = start.parts[g]
            try:
                now = _answer(start.kafka_now[g])
                if g in start.resumed:
                    _refuse(g, kafka_half.strays(parts, now, "since this run began",
                                                 expired=True))
                    self.zk_half.check_resumed(g, parts, start.zk_now)
                    continue
                try:
                    self._check_unchanged(g, parts, now, start.zk_now)
                    if reviewing:
                        _refuse(g, self.review.state_moved(g, state_now.get(g)))
                        _refuse(g, self.review.log_moved(start.parts[g], log_now))
                except REFUSALS:
                    self.moved.add(g)
                    raise
                before[g] = j.Before({p.key: now.get(p.key) for p in parts},
                                     self.zk_half.before(parts, start.zk_now))
            except REFUSALS as exc:
                failures[g] = _reason(exc)
        in_flight = {g: reason for g, reason in failures.items() if g in start.resumed}
        if self.dry_run:   # a real run would put them back: that is a write
            batch.settle(self._fail({g: f"{reason}; a resume with --execute puts it back"
                                     for g, reason in in_flight.items()}))
        else:
            batch.settle(self._put_back_many(in_flight, start.parts))
        batch.settle(self._fail({g: reason for g, reason in failures.items()
                                 if g not in in_flight}))
        return before

    def _record_before(self, before: dict[str, j.Before],
                       parts: dict[str, list[j.Partition]]) -> dict[str, list[j.Partition]]:
        """Journal the before-values; each group's partitions with what the journal now holds
        (without reading it back)."""
        self.journal.record_before_many(self.run_id, before)
        return {**parts, **{g: with_before(parts[g], values) for g, values in before.items()}}

    def _commit_kafka(self, batch: _Batch, parts: dict[str, list[j.Partition]],
                      kafka_now: dict[str, Held]) -> list[str]:
        """Kafka half: commit what differs, read everything back, then journal `committed`; the
        groups committed.

        A group journaled committed is committed again where Kafka lost the plan since (offsets
        expired in an outage).
        """
        to_commit = batch.live()
        crash_point("before-kafka-commit")
        sent = self.kafka.commit_many(
            {g: {p.key: p.offset for p in parts[g]} for g in to_commit
             if any(committed_offset(kafka_now[g].get(p.key)) != p.offset for p in parts[g])},
            self.metadata)
        crash_point("after-kafka-commit")
        errors = self._errors(sent)
        batch.settle(errors.interrupted)
        failures = dict(errors.refused)
        back = self.kafka.committed_many(
            [g for g in to_commit if g not in failures and g not in errors.interrupted])
        for g, answer in back.items():
            if isinstance(answer, Exception):
                failures[g] = _reason(answer)
                continue
            wrong = kafka_half.read_back(parts[g], answer)
            if wrong:
                failures[g] = wrong
        batch.settle(self._put_back_many(failures, parts))
        committed = [g for g in back if g not in failures]
        self.journal.set_groups(self.run_id, {g: j.Transition(j.COMMITTED) for g in committed})
        return committed

    def _commit_zk(self, batch: _Batch, parts: dict[str, list[j.Partition]],
                   zk_now: dict[str, Znode]) -> dict[str, dict[str, int]]:
        """ZooKeeper half, conditioned on the before-versions, and the fence of the znodes not
        rewritten; the new znode versions of the groups verified.

        Never leave half a group: a refused write (a znode moved, NoAuth, a conflict in the
        second transaction of a huge group) puts Kafka and the znodes written back to their
        before-values.
        """
        errors = self._errors(self.zk_half.write(parts, zk_now))
        batch.settle(errors.interrupted)
        failures = dict(errors.refused)
        live = [g for g in parts if g not in failures and g not in errors.interrupted]
        back = self.zk_half.read_back({g: parts[g] for g in live})
        failures.update(back.wrong)
        batch.settle(self._put_back_many(failures, parts))
        return back.verified

    def _check_unchanged(self, group: str, parts: list[j.Partition], kafka_now: Held,
                         zk_now: dict[str, Znode]) -> None:
        _refuse(group, kafka_half.moved(parts, kafka_now))
        check_zk_unchanged(group, parts, zk_now)

    # -- putting a failed group back -------------------------------------------------------------

    def _put_back_many(self, failures: dict[str, str],
                       parts: Mapping[str, list[j.Partition]]) -> dict[str, Outcome]:
        """put_back() each failed group, then journal it; the outcomes, each reason saying what
        became of the stores (`partial` for a group that could not be put back)."""
        failed, partial = {}, {}
        for g, reason in failures.items():
            try:
                failed[g] = f"{reason}; put back: " + put_back(g, parts[g], self.kafka_half,
                                                               self.zk_half)
            except (*REFUSALS, PutBackFailed, *OUTAGES, ZookeeperError) as exc:
                partial[g] = (f"{reason}; could not be put back ({_reason(exc)}): "
                              f"`zk2kafka rollback --execute {self.run_id}` restores the values "
                              "journaled before")
        partial_outcomes = self._fail(partial, j.PARTIAL)
        return {**partial_outcomes, **self._fail(failed)}

    # -- rollback --------------------------------------------------------------------------------

    def rollback(self, group: str, of_run: str) -> Outcome:
        """Put back what `of_run` journaled before writing `group`, in Kafka and in ZooKeeper."""
        try:
            return Outcome(group, j.VERIFIED, None, self._rollback(group, of_run))
        except REFUSALS as exc:
            return self._fail({group: _reason(exc)})[group]
        except OUTAGES as exc:
            return self._interrupt([group], exc)[group]

    def _rollback(self, group: str, of_run: str) -> int:
        parts = self.journal.partitions(of_run, group)
        kafka_now = self.kafka.committed(group)
        _refuse(group, kafka_half.strays(
            parts, kafka_now, f"since run {of_run} (a consumer joined?); not rolled back",
            expired=False))
        zk_writes = self.zk_half.to_restore(group, parts)
        _refuse(group, self.kafka_half.restore(group, parts, kafka_now))
        self.zk_half.restore(group, zk_writes)
        self.journal.set_group(self.run_id, group, j.VERIFIED)
        return len(parts)

    # -- outcomes --------------------------------------------------------------------------------

    def _errors(self, results: Mapping[str, Exception | None]) -> _Errors:
        """Per-group errors of a pipelined step: refusals to fail, outages to leave for resume."""
        refused, interrupted = {}, {}
        for g, exc in results.items():
            if _refused(exc):
                refused[g] = _reason(exc)
            elif exc is not None:
                interrupted.update(self._interrupt([g], exc))
        return _Errors(refused, interrupted)

    def _fail(self, failures: Mapping[str, str], state: str = j.FAILED) -> dict[str, Outcome]:
        """Journal `failed` (or `partial`) with the reason for these groups, in one
        transaction; their outcomes. The run goes on."""
        self.journal.set_groups(
            self.run_id, {g: j.Transition(state, reason) for g, reason in failures.items()})
        for g, reason in failures.items():
            if self.dry_run:   # nothing was to be written: a finding of the dry run, not a failure
                log.warning("group %s would not be written: %s", g, reason)
            else:
                log.error("group %s %s: %s", g, state, reason)
        return {g: Outcome(g, state, reason, 0) for g, reason in failures.items()}

    def _interrupt(self, groups: list[str], exc: BaseException) -> dict[str, Outcome]:
        # Kafka or ZooKeeper stayed away past the retry deadline: nothing is half-done that the
        # journal does not say, so a resume finishes these groups.
        reason = f"interrupted: {type(exc).__name__}: {exc}"
        log.error("%d group(s) left for resume: %s", len(groups), reason)
        return {g: Outcome(g, state.state, reason, 0)
                for g, state in self.journal.groups_of(self.run_id, groups).items()}


# A group's own refusal: it fails the group (an outage, stores.OUTAGES, leaves it for resume).
REFUSALS = (GroupFailed, GroupRejected, ZkChanged)


def _refused(exc: BaseException | None) -> bool:
    """A group's own refusal; ZooKeeper errors count unless they are a lost connection (e.g.
    NoAuth does)."""
    return isinstance(exc, REFUSALS) or (
        isinstance(exc, ZookeeperError) and not isinstance(exc, RETRIABLE))


def _answer(answer):
    """A batched read's answer for one group: its value, or the group's own error raised."""
    if isinstance(answer, Exception):
        raise answer
    return answer


def _reason(exc: BaseException) -> str:
    return getattr(exc, "reason", None) or str(exc).split(": ", 1)[-1] or type(exc).__name__


def _refuse(group: str, reason: str | None) -> None:
    """Raises GroupFailed with the reason a check gave, if it gave one."""
    if reason is not None:
        raise GroupFailed(group, reason)
