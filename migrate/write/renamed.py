"""The Kafka side of a run through a group mapping (--map-group): the dual commit, its review,
put-back, rollback and read-backs name each group by its ZooKeeper name, as the plan and the
journal do; every Kafka call goes to the Kafka group it maps to.

The mapping is the plan's (its `kafka_group` column, `inputs.group_map.renamed` in summary.json),
and the journal records it with the run (`group_map`), so a resume, a rollback and `verify --run`
take it from there, never from a flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from migrate.kafka.writer import Committed, GroupRejected, Key, KafkaOffsetWriter

RECORD_KEY = "group_map"   # in a run's recorded settings: {zookeeper group: kafka group}


class RenamedKafkaWriter:
    """A KafkaOffsetWriter whose callers name ZooKeeper groups: each is read, committed and
    deleted under its Kafka name (a group the mapping leaves alone, under its own)."""

    def __init__(self, writer: KafkaOffsetWriter, renamed: Mapping[str, str]):
        self.writer, self.renamed = writer, dict(renamed)
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


def kafka_names(writer: Any, groups: Sequence[str]) -> dict[str, str]:
    """Each of `groups` (ZooKeeper names) by the Kafka name `writer` reads and writes it under."""
    name = getattr(writer, "kafka_name", None)
    return {g: name(g) if name else g for g in groups}


def of_run(settings: Mapping[str, Any]) -> dict[str, str]:
    """The mapping a journaled run wrote through (its recorded settings), or {}."""
    return dict(settings.get(RECORD_KEY) or {})


__all__ = ["GroupRejected", "RECORD_KEY", "RenamedKafkaWriter", "kafka_names", "of_run"]
