"""The Kafka half of the dual commit: what a group's committed offsets must hold before and after
each step, and putting the journaled before-values back.

Each check returns what is wrong, in the words of the group's outcome, or None; DualCommit
decides what a refusal does to the group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from migrate.journal import journal as j
from migrate.kafka import members
from migrate.kafka.values import Key
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.write.renamed import kafka_names

Held = Mapping[Key, tuple[int, str]]   # what Kafka holds of a group: {key: (offset, metadata)}


class GroupNow(NamedTuple):
    """A group's Kafka state and member count now, for either rebalance protocol (DescribeGroups,
    or ConsumerGroupDescribe for a KIP-848 group)."""

    state: str | None
    members: int


def committed_offset(committed: tuple[int, str] | None) -> int | None:
    """The offset in what Kafka holds for a partition, (offset, metadata) or None."""
    return committed[0] if committed else None


def shown(offset: int | None) -> str:
    """An offset Kafka holds, in a message: `no offset` where it holds none."""
    return "no offset" if offset is None else str(offset)


def moved(parts: list[j.Partition], now: Held) -> str | None:
    """Why Kafka no longer holds what the plan saw, or None."""
    changed = [f"{p.topic}-{p.partition} {shown(p.kafka_offset)} -> "
               f"{shown(committed_offset(now.get(p.key)))}"
               for p in parts if committed_offset(now.get(p.key)) != p.kafka_offset]
    return f"Kafka offsets changed since the plan: {_few(changed)}" if changed else None


def strays(parts: list[j.Partition], now: Held, since: str, *,
           expired: bool) -> str | None:
    """Which offsets are neither their before-value nor this run's (nor none, when `expired`:
    Kafka expired them, and the write puts them back), or None."""
    allowed = (None,) if expired else ()
    stray = [_label(p) for p in parts if committed_offset(now.get(p.key))
             not in (p.before_kafka_offset, p.offset, *allowed)]
    return f"Kafka offsets moved by someone else {since}: {_few(stray)}" if stray else None


def read_back(parts: list[j.Partition], back: Held) -> str | None:
    """Which offsets Kafka read back are not the ones the run committed, or None."""
    wrong = [_label(p) for p in parts if committed_offset(back.get(p.key)) != p.offset]
    return f"Kafka read-back differs from the commit: {_few(wrong)}" if wrong else None


class KafkaHalf:
    """Reads Kafka's view of groups and restores their before-values."""

    def __init__(self, writer: KafkaOffsetWriter):
        self.writer = writer

    def states(self, groups: list[str]) -> dict[str, GroupNow]:
        """Each group's Kafka state and member count now (batched per coordinator; a KIP-848
        group's from ConsumerGroupDescribe, where DescribeGroups answers it as Dead)."""
        names = kafka_names(self.writer, groups)   # a renamed group is its Kafka group's state
        found = members.describe(self.writer.admin, self.writer.features, list(names.values()),
                                 call=self.writer.policy.call)
        return {g: GroupNow(found[name].state, found[name].count)
                for g, name in names.items() if name in found}

    def put_back(self, group: str, parts: list[j.Partition]) -> str | None:
        """Put what this run committed of `group` back to the journaled before-values; what
        the read-back found wrong, if anything.

        Only what holds this run's own value is touched: an offset someone else moved since is
        theirs.
        """
        now = self.writer.committed(group)
        ours = [p for p in parts if p.before_kafka_offset != p.offset
                and committed_offset(now.get(p.key)) == p.offset]
        self._commit_before(group, ours)
        self.writer.delete(group, [p.key for p in ours if p.before_kafka_offset is None])
        wrong = self._not_before(group, ours)
        return f"Kafka read-back after putting back differs: {_few(wrong)}" if wrong else None

    def restore(self, group: str, parts: list[j.Partition], now: Held) -> str | None:
        """Commit a rolled-back run's before-values back, OffsetDelete what it created where
        none was; what the read-back found wrong, if anything."""
        self._commit_before(group, [p for p in parts
                                    if committed_offset(now.get(p.key)) != p.before_kafka_offset])
        self.writer.delete(group, [p.key for p in parts
                                   if p.before_kafka_offset is None and p.key in now])
        wrong = self._not_before(group, parts)
        return f"Kafka read-back after the restore differs: {_few(wrong)}" if wrong else None

    def _commit_before(self, group: str, parts: list[j.Partition]) -> None:
        """Commit the before-values of `parts` that had one, one commit per metadata."""
        by_metadata: dict[str, dict[Key, int]] = {}
        for p in parts:
            if p.before_kafka_offset is not None:
                metadata = p.before_kafka_metadata or ""
                by_metadata.setdefault(metadata, {})[p.key] = p.before_kafka_offset
        for metadata, offsets in by_metadata.items():
            self.writer.commit(group, offsets, metadata)

    def _not_before(self, group: str, parts: list[j.Partition]) -> list[str]:
        """The partitions of `parts` whose offset, read back, is not their before-value."""
        back = self.writer.committed(group)
        return [_label(p) for p in parts
                if committed_offset(back.get(p.key)) != p.before_kafka_offset]


def _label(p: j.Partition) -> str:
    return f"{p.topic}-{p.partition}"


def _few(items: list[str]) -> str:
    """The first three, as reasons name them."""
    return ", ".join(items[:3])
