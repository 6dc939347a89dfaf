"""The dual commit: a journaled run's groups written to Kafka and ZooKeeper, every step confirmed first.

Per group: check both stores still hold what the plan saw (or, resuming, what this run
wrote), journal the before-values, commit to Kafka and read it back (-> committed), write
ZooKeeper conditioned on the scanned versions and read it back (-> verified). A group
that fails does not stop the others. Rollback walks the same steps backwards.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from kafka.errors import KafkaError
from kazoo.exceptions import KazooException

from migrate import checkpoint as j
from migrate.errors import MigrateError
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter
from migrate.progress import Progress
from migrate.zk.writer import ZkChanged, ZkOffsetWriter, encode

log = logging.getLogger(__name__)

CRASH_ENV = "ZK2KAFKA_CRASH_AT"
Key = tuple[str, int]


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
    """Writes (or, for a rollback run, restores) one group at a time; safe to call from many threads."""

    def __init__(self, journal: j.Journal, run_id: str, kafka: KafkaOffsetWriter, zk: ZkOffsetWriter | None,
                 metadata: str, semantics: str = "next"):
        self.journal, self.run_id = journal, run_id
        self.kafka, self.zk = kafka, zk
        self.metadata, self.semantics = metadata, semantics

    # -- migrate -----------------------------------------------------------------------------------------------

    def migrate(self, group: str) -> Outcome:
        return self._guarded(group, self.run_id, lambda: self._migrate(group))

    def _migrate(self, group: str) -> int:
        state = self._state(self.run_id, group)
        parts = self.journal.partitions(self.run_id, group)
        planned = {p.key: p.offset for p in parts}
        kafka_now = self.kafka.committed(group)
        zk_now = self.zk.read([p.zk_path for p in parts]) if self.zk else {}

        if not state.before_recorded:
            # Untouched so far: both stores must still be as the diff saw them.
            moved = [f"{p.topic}-{p.partition} {p.kafka_offset} -> {_offset(kafka_now.get(p.key))}"
                     for p in parts if _offset(kafka_now.get(p.key)) != p.kafka_offset]
            if moved:
                raise GroupFailed(group, f"Kafka offsets changed since the plan: {', '.join(moved[:3])}")
            changed = [p.zk_path for p in parts if self.zk and zk_now[p.zk_path].version != p.zk_version]
            if changed:
                raise ZkChanged(group, changed)
            self.journal.record_before(self.run_id, group, {p.key: kafka_now.get(p.key) for p in parts},
                                       {p.zk_path: (zk_now[p.zk_path].value, zk_now[p.zk_path].version) if self.zk
                                        else (None, None) for p in parts})
            parts = self.journal.partitions(self.run_id, group)
        else:
            # Caught in flight by a crash: each partition holds either its before-value or this run's value.
            strays = [f"{p.topic}-{p.partition}" for p in parts
                      if _offset(kafka_now.get(p.key)) not in (p.before_kafka_offset, p.offset)]
            if strays:
                raise GroupFailed(group, f"Kafka offsets moved by someone else since this run began: "
                                         f"{', '.join(strays[:3])}")

        if state.state in (j.PENDING, j.FAILED):   # a failed group is tried again on resume
            crash_point("before-kafka-commit")
            if any(_offset(kafka_now.get(k)) != o for k, o in planned.items()):
                self.kafka.commit(group, planned, self.metadata)
            crash_point("after-kafka-commit")
            back = self.kafka.committed(group)
            wrong = [f"{t}-{p}" for (t, p), o in planned.items() if _offset(back.get((t, p))) != o]
            if wrong:
                raise GroupFailed(group, f"Kafka read-back differs from the commit: {', '.join(wrong[:3])}")
            self.journal.set_group(self.run_id, group, j.COMMITTED)

        after = self._write_zk(group, parts, zk_now) if self.zk else {}
        crash_point("after-zk-write")
        self.journal.set_group(self.run_id, group, j.VERIFIED, zk_after=after)
        return len(parts)

    def _write_zk(self, group: str, parts: list[j.Partition], zk_now: dict) -> dict[str, int]:
        """ZooKeeper half, conditioned on the before-versions; on a conflict Kafka is put back as it was."""
        targets = {p.zk_path: encode(p.before_zk_value, p.offset, p.layout, self.semantics) for p in parts}
        done = {p.zk_path for p in parts if zk_now[p.zk_path].version == (p.before_zk_version or 0) + 1
                and zk_now[p.zk_path].value == targets[p.zk_path]}   # written before a crash
        writes = {p.zk_path: (targets[p.zk_path], p.before_zk_version) for p in parts if p.zk_path not in done}
        try:
            self.zk.write(group, writes)
        except ZkChanged:
            self._restore_kafka(group, parts, self.kafka.committed(group))  # never leave half a group
            raise
        back = self.zk.read(list(targets))
        wrong = [path for path, value in targets.items() if back[path].value != value]
        if wrong:
            raise GroupFailed(group, f"ZooKeeper read-back differs from the write: {', '.join(wrong[:3])}")
        return {path: node.version for path, node in back.items()}

    # -- rollback ----------------------------------------------------------------------------------------------

    def rollback(self, group: str, of_run: str) -> Outcome:
        """Put back what `of_run` journaled before writing `group`, in Kafka and in ZooKeeper."""
        return self._guarded(group, self.run_id, lambda: self._rollback(group, of_run))

    def _rollback(self, group: str, of_run: str) -> int:
        parts = self.journal.partitions(of_run, group)
        kafka_now = self.kafka.committed(group)
        strays = [f"{p.topic}-{p.partition}" for p in parts
                  if _offset(kafka_now.get(p.key)) not in (p.before_kafka_offset, p.offset)]
        if strays:
            raise GroupFailed(group, f"Kafka offsets moved since run {of_run} (a consumer joined?): "
                                     f"{', '.join(strays[:3])}; not rolled back")
        zk_writes = {}
        if self.zk:
            zk_now = self.zk.read([p.zk_path for p in parts])
            for p in parts:
                node, ours = zk_now[p.zk_path], encode(p.before_zk_value, p.offset, p.layout, self.semantics)
                if node.version == p.before_zk_version:
                    continue  # never written by the run
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

    # -- shared ------------------------------------------------------------------------------------------------

    def _state(self, run_id: str, group: str) -> j.Group:
        return self.journal.group(run_id, group)

    def _guarded(self, group: str, run_id: str, work: Callable[[], int]) -> Outcome:
        """Run one group's work; a failure is journaled for that group, an outage leaves it for resume."""
        try:
            return Outcome(group, j.VERIFIED, None, work())
        except (GroupFailed, GroupRejected, ZkChanged) as exc:
            reason = getattr(exc, "reason", None) or str(exc).split(": ", 1)[-1]
            self.journal.set_group(run_id, group, j.FAILED, reason)
            log.error("group %s failed: %s", group, reason)
            return Outcome(group, j.FAILED, reason, 0)
        except (KafkaError, KazooException, OSError) as exc:
            # Kafka or ZooKeeper stayed away past the retry deadline: nothing is known to be half-done
            # that the journal does not say, so a resume finishes the group.
            reason = f"interrupted: {type(exc).__name__}: {exc}"
            log.error("group %s: %s", group, reason)
            return Outcome(group, self._state(run_id, group).state, reason, 0)


def run_groups(groups: list[str], work: Callable[[str], Outcome], parallelism: int,
               progress: Progress) -> tuple[list[Outcome], bool]:
    """Run `work` over groups on a bounded pool; on Ctrl-C finish the groups in flight, start no more.

    Returns the outcomes and whether the run was interrupted.
    """
    outcomes: list[Outcome] = []
    pool = ThreadPoolExecutor(max_workers=max(1, parallelism), thread_name_prefix="zk2kafka-writer")
    pending = iter(groups)
    running = set()
    interrupted = False
    try:
        while True:
            while len(running) < parallelism:
                group = next(pending, None)
                if group is None:
                    break
                running.add(pool.submit(work, group))
            if not running:
                break
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                outcomes.append(future.result())
                progress.advance()
    except KeyboardInterrupt:
        interrupted = True
        log.warning("interrupted: finishing %d group(s) in flight, starting no more", len(running))
        for future in running:
            outcomes.append(future.result())
    finally:
        pool.shutdown(wait=True)
    return outcomes, interrupted


def _offset(committed: tuple[int, str] | None) -> int | None:
    return committed[0] if committed else None
