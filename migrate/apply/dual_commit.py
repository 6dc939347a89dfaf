"""The dual commit: a journaled run's groups written to Kafka and ZooKeeper, every step confirmed first.

Per group: check both stores still hold what the plan saw (or, resuming, what this run
wrote), journal the before-values, commit to Kafka and read it back (-> committed), write
ZooKeeper conditioned on the scanned versions and read it back (-> verified). Groups go
through these steps in batches, so each step is a few pipelined requests and one journal
transaction for hundreds of groups. A group that fails does not stop the others.
Rollback walks the same steps backwards, group by group.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace

from kafka.errors import KafkaError
from kazoo.exceptions import KazooException, ZookeeperError

from migrate.apply import journal as j
from migrate.errors import MigrateError, ZkUnavailable
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter, Key
from migrate.diff.plan import GroupSeen
from migrate.progress import Progress
from migrate.zk.walk import RETRIABLE
from migrate.zk.writer import ZkChanged, ZkOffsetWriter, encode

log = logging.getLogger(__name__)

CRASH_ENV = "ZK2KAFKA_CRASH_AT"
WOULD_WRITE = "would write"   # a dry run's outcome for a group that passed every check


def crash_point(name: str) -> None:
    """Fault injection for the resume tests: die here as `kill -9` would, when ZK2KAFKA_CRASH_AT names this step."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


class GroupFailed(MigrateError):
    """A group cannot be written safely (its stores changed under the plan); the run goes on without it."""

    def __init__(self, group: str, reason: str):
        super().__init__(f"group {group}: {reason}")
        self.group, self.reason = group, reason


@dataclass(frozen=True)
class Outcome:
    group: str
    state: str            # a journal group state; pending when interrupted
    reason: str | None
    offsets: int


class DualCommit:
    """Writes a run's groups batch by batch (or, for a rollback run, restores them one by one); thread-safe."""

    def __init__(self, journal: j.Journal, run_id: str, kafka: KafkaOffsetWriter, zk: ZkOffsetWriter | None,
                 metadata: str, semantics: str = "next", zk_reader: ZkOffsetWriter | None = None,
                 seen: Mapping[str, GroupSeen] | None = None, dry_run: bool = False):
        """`seen`: each group's Kafka state when planned (a reviewed plan's), checked with the offsets and znodes.
        `dry_run`: everything up to the first write (reads, prechecks), then each group that passed is
        settled WOULD_WRITE; neither store nor the before-values are touched.
        """
        self.journal, self.run_id = journal, run_id
        self.kafka, self.zk = kafka, zk
        # --no-zk-write still reads ZooKeeper: a plan is only committed while its znodes are the ones planned from.
        self.zk_reader = zk or zk_reader
        self.metadata, self.semantics = metadata, semantics
        self.seen, self.dry_run = seen, dry_run
        self.moved: set[str] = set()   # groups whose stores moved since the plan, before anything was written

    # -- migrate -----------------------------------------------------------------------------------------------

    def migrate(self, groups: list[str]) -> list[Outcome]:
        """Take a batch of groups through the dual commit; one outcome per group, in order.

        Each store is read, written and read back for the whole batch at once (one OffsetFetch
        per coordinator, commits and ZooKeeper transactions pipelined, one journal transaction
        per step), but every check and every outcome is the group's own.
        """
        settled: dict[str, Outcome] = {}
        try:
            self._migrate(groups, settled)
        except OUTAGES as exc:
            self._interrupt(settled, [g for g in groups if g not in settled], exc)
        return [settled[g] for g in groups]

    def _migrate(self, groups: list[str], settled: dict[str, Outcome]) -> None:
        states = self.journal.groups_of(self.run_id, groups)
        parts = self.journal.partitions_of(self.run_id, groups)
        kafka_now = self.kafka.committed_many(groups)
        zk_now = self.zk_reader.read([p.zk_path for g in groups for p in parts[g]]) if self.zk_reader else {}
        untouched = [g for g in groups if not states[g].before_recorded]
        state_now = self._group_states(untouched) if self.seen is not None and untouched else {}

        # Untouched groups: both stores must still be as the diff saw them. Groups caught in flight by a
        # crash: each partition holds its before-value, this run's value, or none (expired in an outage).
        failures, before = {}, {}
        for g in groups:
            try:
                now = _answer(kafka_now[g])
                if states[g].before_recorded:
                    self._check_strays(g, parts[g], now, "since this run began", expired=True)
                    if self.zk is None:   # nothing of ours is in ZooKeeper: it must still be as planned
                        self._check_zk_unchanged(g, parts[g], zk_now)
                else:
                    try:
                        self._check_unchanged(g, parts[g], now, zk_now)
                        if self.seen is not None:
                            self._check_state(g, state_now.get(g))
                    except REFUSALS:
                        self.moved.add(g)
                        raise
                    before[g] = ({p.key: now.get(p.key) for p in parts[g]},
                                 {p.zk_path: (zk_now[p.zk_path].value, zk_now[p.zk_path].version) if self.zk
                                  else (None, None) for p in parts[g]})
            except REFUSALS as exc:
                failures[g] = _reason(exc)
        # A group caught in flight may have been written before the crash: put it back, as any failure after a write.
        in_flight = {g: reason for g, reason in failures.items() if states[g].before_recorded}
        self._fail(settled, self._put_back_many(in_flight, parts, settled))
        self._fail(settled, {g: reason for g, reason in failures.items() if g not in in_flight})
        if self.dry_run:   # the lowest write point: from here on, everything writes
            settled.update((g, Outcome(g, WOULD_WRITE, None, len(parts[g]))) for g in groups if g not in settled)
            return
        self.journal.record_before_many(self.run_id, before)
        for g, (kafka, zk) in before.items():   # what the journal now holds, without reading it back
            parts[g] = [replace(p, before_kafka_offset=_offset(kafka.get(p.key)),
                                before_kafka_metadata=(kafka.get(p.key) or (None, None))[1],
                                before_zk_value=zk[p.zk_path][0], before_zk_version=zk[p.zk_path][1])
                        for p in parts[g]]

        # Kafka half: commit what differs, read everything back, then journal `committed`. A group journaled
        # committed is committed again where Kafka lost the plan since (offsets expired in an outage).
        to_commit = [g for g in groups if g not in settled]
        crash_point("before-kafka-commit")
        sent = self.kafka.commit_many({g: {p.key: p.offset for p in parts[g]} for g in to_commit
                                       if any(_offset(kafka_now[g].get(p.key)) != p.offset for p in parts[g])},
                                      self.metadata)
        crash_point("after-kafka-commit")
        failures = self._errors(settled, sent)
        back = self.kafka.committed_many([g for g in to_commit if g not in failures and g not in settled])
        for g, answer in back.items():
            if isinstance(answer, Exception):
                failures[g] = _reason(answer)
                continue
            wrong = [f"{p.topic}-{p.partition}" for p in parts[g] if _offset(answer.get(p.key)) != p.offset]
            if wrong:
                failures[g] = f"Kafka read-back differs from the commit: {', '.join(wrong[:3])}"
        self._fail(settled, self._put_back_many(failures, parts, settled))
        self.journal.set_groups(self.run_id, {g: j.Transition(j.COMMITTED) for g in back if g not in settled})

        live = [g for g in groups if g not in settled]
        after = self._write_zk(live, parts, zk_now, settled) if self.zk else {g: {} for g in live}
        crash_point("after-zk-write")
        self.journal.set_groups(self.run_id, {g: j.Transition(j.VERIFIED, zk_after=versions) for g, versions in after.items()})
        settled.update((g, Outcome(g, j.VERIFIED, None, len(parts[g]))) for g in after)

    def _check_unchanged(self, group: str, parts: list[j.Partition], kafka_now: dict, zk_now: dict) -> None:
        moved = [f"{p.topic}-{p.partition} {p.kafka_offset} -> {_offset(kafka_now.get(p.key))}"
                 for p in parts if _offset(kafka_now.get(p.key)) != p.kafka_offset]
        if moved:
            raise GroupFailed(group, f"Kafka offsets changed since the plan: {', '.join(moved[:3])}")
        self._check_zk_unchanged(group, parts, zk_now)

    def _group_states(self, groups: list[str]) -> dict[str, tuple[str | None, int]]:
        """Each group's Kafka state and member count now (DescribeGroups, batched per coordinator)."""
        described = self.kafka.policy.call("describe groups", lambda: self.kafka.admin.describe_groups(groups))
        return {g: (d.get("group_state"), len(d.get("members") or [])) for g, d in described.items()}

    def _check_state(self, group: str, now: tuple[str | None, int] | None) -> None:
        seen = self.seen.get(group)
        state, members = now or (None, 0)
        if seen is not None and not seen.matches(state, members):
            raise GroupFailed(group, f"Kafka group state changed since the plan: {seen} then, "
                                     f"{state or 'unknown to Kafka'}, {members} member(s) now")

    @staticmethod
    def _check_zk_unchanged(group: str, parts: list[j.Partition], zk_now: dict) -> None:
        # The version alone passes a znode deleted and recreated since (versions start again at 0): mzxid,
        # the zxid of its last change, tells them apart. Plans journaled without it are checked by version.
        changed = [p.zk_path for p in parts if zk_now and (
            zk_now[p.zk_path].version != p.zk_version
            or (p.zk_mzxid is not None and zk_now[p.zk_path].mzxid != p.zk_mzxid))]
        if changed:
            raise ZkChanged(group, changed)

    def _check_strays(self, group: str, parts: list[j.Partition], kafka_now: dict, since: str,
                      expired: bool = False) -> None:
        # `expired`: no offset at all is fine too (Kafka expired them), and the write puts them back.
        strays = [f"{p.topic}-{p.partition}" for p in parts
                  if _offset(kafka_now.get(p.key)) not in (p.before_kafka_offset, p.offset,
                                                           *([None] if expired else []))]
        if strays:
            raise GroupFailed(group, f"Kafka offsets moved by someone else {since}: {', '.join(strays[:3])}")

    def _write_zk(self, groups: list[str], parts: dict[str, list[j.Partition]], zk_now: dict,
                  settled: dict[str, Outcome]) -> dict[str, dict[str, int]]:
        """ZooKeeper half, conditioned on the before-versions; a group in conflict gets Kafka put back.

        Returns the new znode versions of the groups verified.
        """
        targets = {g: {p.zk_path: encode(p.before_zk_value, p.offset, p.layout, self.semantics) for p in parts[g]}
                   for g in groups}
        writes = {}
        for g in groups:
            written = {p.zk_path for p in parts[g] if zk_now[p.zk_path].version == (p.before_zk_version or 0) + 1
                       and zk_now[p.zk_path].value == targets[g][p.zk_path]}   # before a crash
            writes[g] = {p.zk_path: (targets[g][p.zk_path], p.before_zk_version) for p in parts[g]
                         if p.zk_path not in written}
        results = self.zk.write_many({g: w for g, w in writes.items() if w})
        # Never leave half a group: a refused write (a znode moved, NoAuth, a conflict in the second
        # transaction of a huge group) puts Kafka and the znodes written back to their before-values.
        failures = self._errors(settled, results)
        live = [g for g in groups if g not in failures and g not in settled]
        back = self.zk.read([path for g in live for path in targets[g]])
        verified = {}
        for g in live:
            wrong = [path for path, value in targets[g].items() if back[path].value != value]
            if wrong:
                failures[g] = f"ZooKeeper read-back differs from the write: {', '.join(wrong[:3])}"
            else:
                verified[g] = {path: back[path].version for path in targets[g]}
        self._fail(settled, self._put_back_many(failures, parts, settled))
        return verified

    # -- putting a failed group back ---------------------------------------------------------------------------

    def _put_back_many(self, failures: dict[str, str], parts: dict[str, list[j.Partition]],
                       settled: dict[str, Outcome]) -> dict[str, str]:
        """_put_back() each failed group; the failures, each reason saying what became of the stores.

        Groups that could not be put back are settled `partial` here; the rest are returned to be failed.
        """
        failed, partial = {}, {}
        for g, reason in failures.items():
            try:
                self._put_back(g, parts[g])
                failed[g] = f"{reason}; put back: Kafka and ZooKeeper hold their values from before the run"
            except (*REFUSALS, *OUTAGES, ZookeeperError) as exc:
                partial[g] = (f"{reason}; could not be put back ({_reason(exc)}): "
                              f"`zk2kafka rollback --execute {self.run_id}` restores the values journaled before")
        self._fail(settled, partial, j.PARTIAL)
        return failed

    def _put_back(self, group: str, parts: list[j.Partition]) -> None:
        """Put what this run wrote of `group` back to the journaled before-values, in both stores, and read it back.

        Only what holds this run's own value is touched: an offset someone else moved since is theirs.
        Raises when a store refuses or the read-back differs.
        """
        now = self.kafka.committed(group)
        ours = [p for p in parts if p.before_kafka_offset != p.offset and _offset(now.get(p.key)) == p.offset]
        by_metadata: dict[str, dict[Key, int]] = {}
        for p in ours:
            if p.before_kafka_offset is not None:
                by_metadata.setdefault(p.before_kafka_metadata or "", {})[p.key] = p.before_kafka_offset
        for metadata, offsets in by_metadata.items():
            self.kafka.commit(group, offsets, metadata)
        self.kafka.delete(group, [p.key for p in ours if p.before_kafka_offset is None])
        back = self.kafka.committed(group)
        wrong = [f"{p.topic}-{p.partition}" for p in ours if _offset(back.get(p.key)) != p.before_kafka_offset]
        if wrong:
            raise GroupFailed(group, f"Kafka read-back after putting back differs: {', '.join(wrong[:3])}")
        if self.zk is None:
            return
        zk_now = self.zk.read([p.zk_path for p in parts])
        written = {}
        for p in parts:
            node, ours_value = zk_now[p.zk_path], encode(p.before_zk_value, p.offset, p.layout, self.semantics)
            if (p.before_zk_version is not None and node.version == p.before_zk_version + 1
                    and node.value == ours_value and node.value != p.before_zk_value):
                written[p.zk_path] = (p.before_zk_value, node.version)
        if written:
            self.zk.write(group, written)
            back_zk = self.zk.read(list(written))
            wrong = [path for path, (value, _) in written.items() if back_zk[path].value != value]
            if wrong:
                raise ZkChanged(group, wrong)

    # -- rollback ----------------------------------------------------------------------------------------------

    def rollback(self, group: str, of_run: str) -> Outcome:
        """Put back what `of_run` journaled before writing `group`, in Kafka and in ZooKeeper."""
        try:
            return Outcome(group, j.VERIFIED, None, self._rollback(group, of_run))
        except REFUSALS as exc:
            settled: dict[str, Outcome] = {}
            self._fail(settled, {group: _reason(exc)})
            return settled[group]
        except OUTAGES as exc:
            settled = {}
            self._interrupt(settled, [group], exc)
            return settled[group]

    def _rollback(self, group: str, of_run: str) -> int:
        parts = self.journal.partitions(of_run, group)
        kafka_now = self.kafka.committed(group)
        self._check_strays(group, parts, kafka_now, f"since run {of_run} (a consumer joined?); not rolled back")
        zk_writes = {}
        if self.zk:
            zk_now = self.zk.read([p.zk_path for p in parts])
            for p in parts:
                node, ours = zk_now[p.zk_path], encode(p.before_zk_value, p.offset, p.layout, self.semantics)
                if node.version == p.before_zk_version or node.value == p.before_zk_value:
                    continue  # never written by the run, or already put back
                if node.version == (p.after_zk_version or p.before_zk_version + 1) and node.value == ours:
                    zk_writes[p.zk_path] = (p.before_zk_value, node.version)
                else:
                    raise ZkChanged(group, [p.zk_path])
        self._restore_kafka(group, parts, kafka_now)
        back = self.kafka.committed(group)
        wrong = [f"{p.topic}-{p.partition}" for p in parts if _offset(back.get(p.key)) != p.before_kafka_offset]
        if wrong:
            raise GroupFailed(group, f"Kafka read-back after the restore differs: {', '.join(wrong[:3])}")
        if zk_writes:
            self.zk.write(group, zk_writes)
        self.journal.set_group(self.run_id, group, j.VERIFIED)
        return len(parts)

    def _restore_kafka(self, group: str, parts: list[j.Partition], kafka_now: dict) -> None:
        """Commit the journaled before-values back; OffsetDelete what the run created where none was."""
        by_metadata: dict[str, dict[Key, int]] = {}
        for p in parts:
            if p.before_kafka_offset is not None and _offset(kafka_now.get(p.key)) != p.before_kafka_offset:
                by_metadata.setdefault(p.before_kafka_metadata or "", {})[p.key] = p.before_kafka_offset
        for metadata, offsets in by_metadata.items():
            self.kafka.commit(group, offsets, metadata)
        self.kafka.delete(group, [p.key for p in parts if p.before_kafka_offset is None and p.key in kafka_now])

    # -- outcomes ----------------------------------------------------------------------------------------------

    def _errors(self, settled: dict[str, Outcome], results: dict[str, Exception | None]) -> dict[str, str]:
        """Per-group errors of a pipelined step: refusals to fail, outages to leave for resume."""
        failures = {}
        for g, exc in results.items():
            if _refused(exc):
                failures[g] = _reason(exc)
            elif exc is not None:
                self._interrupt(settled, [g], exc)
        return failures

    def _fail(self, settled: dict[str, Outcome], failures: dict[str, str], state: str = j.FAILED) -> None:
        """Journal `failed` (or `partial`) with the reason for these groups, in one transaction; the run goes on."""
        self.journal.set_groups(self.run_id, {g: j.Transition(state, reason) for g, reason in failures.items()})
        for g, reason in failures.items():
            if self.dry_run:   # nothing was to be written: a finding of the dry run, not a failed write
                log.warning("group %s would not be written: %s", g, reason)
            else:
                log.error("group %s %s: %s", g, state, reason)
            settled[g] = Outcome(g, state, reason, 0)

    def _interrupt(self, settled: dict[str, Outcome], groups: list[str], exc: BaseException) -> None:
        # Kafka or ZooKeeper stayed away past the retry deadline: nothing is half-done that the
        # journal does not say, so a resume finishes these groups.
        reason = f"interrupted: {type(exc).__name__}: {exc}"
        log.error("%d group(s) left for resume: %s", len(groups), reason)
        for g, state in self.journal.groups_of(self.run_id, groups).items():
            settled[g] = Outcome(g, state.state, reason, 0)


# A group's own refusal (fails it) and a store's outage past the retry deadline (leaves it for resume).
REFUSALS = (GroupFailed, GroupRejected, ZkChanged)
OUTAGES = (KafkaError, KazooException, OSError, ZkUnavailable)


def _refused(exc: BaseException | None) -> bool:
    """A group's own refusal; ZooKeeper errors count unless they are a lost connection (e.g. NoAuth does)."""
    return isinstance(exc, REFUSALS) or (isinstance(exc, ZookeeperError) and not isinstance(exc, RETRIABLE))


def run_batches(groups: list[str], work: Callable[[list[str]], list[Outcome]], batch: int, workers: int,
                progress: Progress) -> tuple[list[Outcome], bool]:
    """Run `work` over batches of groups, `workers` batches at a time; on Ctrl-C finish those in flight, start no more.

    Returns the outcomes and whether the run was interrupted.
    """
    outcomes: list[Outcome] = []
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="zk2kafka-writer")
    pending = iter([groups[i:i + batch] for i in range(0, len(groups), max(1, batch))])
    running: set = set()
    interrupted = False

    def take(done) -> None:
        for future in done:
            results = future.result()
            outcomes.extend(results)
            progress.advance(len(results), sum(o.offsets for o in results))

    try:
        while True:
            while len(running) < workers and (chunk := next(pending, None)) is not None:
                running.add(pool.submit(work, chunk))
            if not running:
                break
            done, running = wait(running, return_when=FIRST_COMPLETED)
            take(done)
    except KeyboardInterrupt:
        interrupted = True
        log.warning("interrupted: finishing %d batch(es) in flight, starting no more", len(running))
        take(running)
    finally:
        pool.shutdown(wait=True)
    return outcomes, interrupted


def _answer(answer):
    """A batched read's answer for one group: its value, or the group's own error raised."""
    if isinstance(answer, Exception):
        raise answer
    return answer


def _reason(exc: BaseException) -> str:
    return getattr(exc, "reason", None) or str(exc).split(": ", 1)[-1] or type(exc).__name__


def _offset(committed: tuple[int, str] | None) -> int | None:
    return committed[0] if committed else None
