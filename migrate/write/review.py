"""What a reviewed plan saw of the stores beyond the offsets, checked again before a group of it is
written: the Kafka group's state and members, and each planned partition's log: its bounds, and
its topic's creation as ZooKeeper tells it. (Offsets and znodes are checked for every run, in
dual_commit.py.)

A group whose partitions moved out of the plan's reach since the review is not written: an offset
in range when reviewed and below the log start now (retention, deleteRecords) or past the log end
(a truncated or recreated log) would leave a new consumer to its auto.offset.reset, which is not
what was reviewed. Each check returns what moved, in the words of the group's outcome, or None.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from kafka import TopicPartition

from migrate.diff.plan import COMMIT, GroupSeen, plan_batches
from migrate.journal import journal as j
from migrate.kafka.log_bounds import Bounds, log_bounds
from migrate.kafka.values import Key
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.state import iso
from migrate.write.kafka_half import GroupNow
from migrate.zk.reader import TOPICS_PATH

_SHOWN = 3   # partitions a reason names


@dataclass(frozen=True)
class PartitionSeen:
    """A planned partition's log as the diff saw it (None where it was unknown)."""

    log_start: int | None
    log_end: int | None
    topic_ctime: int | None   # ms since the epoch: ZooKeeper's /brokers/topics/<topic> ctime


class LogNow(NamedTuple):
    """The planned partitions' logs as they are now."""

    bounds: Mapping[Key, Bounds | str]     # (start, end), or why Kafka would not say
    created: Mapping[str, int | None]      # topic -> its znode's ctime now (None: gone)


@dataclass(frozen=True)
class Review:
    """A reviewed plan's groups and planned partitions, as the diff saw them."""

    groups: Mapping[str, GroupSeen]
    partitions: Mapping[Key, PartitionSeen]
    topics: Mapping[str, int]   # the planned topics whose creation time the diff knew

    @classmethod
    def of_plan(cls, plan: Path, groups: set[str]) -> Review:
        """What the plan file says of `groups` and of the partitions it commits for them."""
        has_ctime = "topic_ctime" in pq.read_schema(plan).names   # not in an older zk2kafka's plan
        columns = ["group", "action", "topic", "partition", "group_state", "kafka_members",
                   "log_start", "log_end", *(["topic_ctime"] if has_ctime else [])]
        wanted = pa.array(sorted(groups), pa.string())
        seen: dict[str, GroupSeen] = {}
        partitions: dict[Key, PartitionSeen] = {}
        for batch in plan_batches(plan, columns):
            rows = pa.Table.from_batches([batch]).filter(pc.is_in(batch.column("group"), wanted))
            # Alike on all of a group's rows, and on all of a partition's: the first says it.
            for r in rows.group_by("group", use_threads=False).aggregate(
                    [("group_state", "first"), ("kafka_members", "first")]).to_pylist():
                seen.setdefault(r["group"], GroupSeen(r["group_state_first"],
                                                      r["kafka_members_first"] or 0))
            commits = rows.filter(pc.equal(rows["action"], COMMIT))
            for r in commits.group_by(["topic", "partition"], use_threads=False).aggregate(
                    [(c, "first") for c in columns[6:]]).to_pylist():
                created = r.get("topic_ctime_first")
                partitions.setdefault((r["topic"], r["partition"]), PartitionSeen(
                    r["log_start_first"], r["log_end_first"],
                    None if created is None else int(created.timestamp() * 1000)))
        topics = {t: p.topic_ctime for (t, _), p in partitions.items()
                  if p.topic_ctime is not None}
        return cls(seen, partitions, topics)

    def of(self, groups: Iterable[str]) -> Review:
        """The review of some of its groups (a writer process's share)."""
        return Review({g: self.groups[g] for g in groups if g in self.groups}, self.partitions,
                      self.topics)

    def read_now(self, kafka: KafkaOffsetWriter, zk, parts: Iterable[j.Partition]) -> LogNow:
        """The logs of these planned partitions now: their bounds in Kafka, their topics' creation
        in ZooKeeper (`zk`: what reads znodes, e.g. the dual commit's ZooKeeper half)."""
        keys = sorted({p.key for p in parts})
        bounds = log_bounds(kafka.admin, kafka.features, kafka.policy,
                            [TopicPartition(*key) for key in keys])
        topics = sorted({t for t, _ in keys if t in self.topics})
        znodes = zk.read([f"{TOPICS_PATH}/{t}" for t in topics]) if topics else {}
        # A ZooKeeper that was not read (none to read from) tells nothing: those are not checked.
        created = {t: znodes[f"{TOPICS_PATH}/{t}"].ctime for t in topics
                   if f"{TOPICS_PATH}/{t}" in znodes}
        return LogNow({(tp.topic, tp.partition): b for tp, b in bounds.items()}, created)

    def state_moved(self, group: str, now: GroupNow | None) -> str | None:
        """Why the Kafka group is not as reviewed (state, members), or None."""
        seen = self.groups.get(group)
        state, members = now or GroupNow(None, 0)
        if seen is None or seen.matches(state, members):
            return None
        return (f"Kafka group state changed since the plan: {seen} then, "
                f"{state or 'unknown to Kafka'}, {members} member(s) now")

    def log_moved(self, parts: list[j.Partition], now: LogNow) -> str | None:
        """Why the planned offsets no longer lie where they were reviewed, or None: out of the
        log now though in it then, a log whose end went back, a topic created again."""
        moved = []
        for topic in sorted({p.topic for p in parts} & self.topics.keys() & now.created.keys()):
            then = self.topics[topic]
            if now.created[topic] != then:
                created = now.created.get(topic)
                moved.append(f"topic {topic} was deleted since the plan" if created is None else
                             f"topic {topic} was created again since the plan ({iso(then / 1000)} "
                             f"then, {iso(created / 1000)} now)")
        for p in parts:
            bounds, seen = now.bounds.get(p.key), self._seen(*p.key)
            label = f"{p.topic}-{p.partition}"
            if isinstance(bounds, str):
                moved.append(f"{label}: no log bounds now ({bounds})")
                continue
            if bounds is None:
                continue
            start, end = bounds
            reviewed_in_range = (seen.log_start is None or seen.log_end is None
                                 or seen.log_start <= p.offset <= seen.log_end)
            if reviewed_in_range and p.offset < start:
                moved.append(f"{label}: {p.offset} is below the log start {start} now "
                             f"(was {_shown(seen.log_start)}: retention or deleteRecords)")
            elif reviewed_in_range and p.offset > end:
                moved.append(f"{label}: {p.offset} is past the log end {end} now "
                             f"(was {_shown(seen.log_end)})")
            elif seen.log_end is not None and end < seen.log_end:
                moved.append(f"{label}: its log end went back from {seen.log_end} to {end} "
                             "(the topic recreated or truncated)")
        if not moved:
            return None
        more = f" ... ({len(moved)} in all)" if len(moved) > _SHOWN else ""
        return f"Kafka's log moved since the plan: {'; '.join(moved[:_SHOWN])}{more}"

    def _seen(self, topic: str, partition: int) -> PartitionSeen:
        return self.partitions.get((topic, partition)) or PartitionSeen(None, None, None)


def _shown(offset: int | None) -> str:
    return "unknown" if offset is None else str(offset)
