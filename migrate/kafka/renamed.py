"""A KafkaOffsetWriter through a group mapping (--map-group, migrate/group_map.py): its callers name
ZooKeeper groups, and every Kafka call goes to the Kafka group each maps to. Both writing programs
use it: the one-shot writer (migrate/write/renamed.py) and sync (migrate/sync/renames.py), whose
mapping grows as its re-scans find groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from migrate.kafka.values import Committed, Key
from migrate.kafka.writer import KafkaOffsetWriter


class RenamedKafkaWriter:
    """A KafkaOffsetWriter whose callers name ZooKeeper groups: each is read, committed and
    deleted under its Kafka name (a group the mapping leaves alone, under its own)."""

    def __init__(self, writer: KafkaOffsetWriter, renamed: Mapping[str, str]):
        # The caller's mapping itself: a run's is fixed when it starts, sync's grows as its
        # re-scans admit groups.
        self.writer, self.renamed = writer, renamed
        # What KafkaHalf and the review use of the writer as it is.
        self.admin, self.policy, self.features = writer.admin, writer.policy, writer.features

    def kafka_name(self, group: str) -> str:
        return self.renamed.get(group, group)

    def committed(self, group: str) -> dict[Key, Committed]:
        return self.writer.committed(self.kafka_name(group))

    def committed_many(self, groups: Sequence[str]) -> dict[str, Any]:
        found = self.writer.committed_many([self.kafka_name(g) for g in groups])
        return {g: found[self.kafka_name(g)] for g in groups}

    def commit_many(self, commits: Mapping[str, Mapping[Key, int]],
                    metadata: str) -> dict[str, Exception | None]:
        sent = self.writer.commit_many({self.kafka_name(g): o for g, o in commits.items()},
                                       metadata)
        return {g: sent[self.kafka_name(g)] for g in commits}

    def commit(self, group: str, offsets: Mapping[Key, int], metadata: str) -> None:
        self.writer.commit(self.kafka_name(group), offsets, metadata)

    def delete(self, group: str, partitions: list[Key]) -> None:
        self.writer.delete(self.kafka_name(group), partitions)
