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

from migrate.group_map import RECORD_KEY
from migrate.kafka.renamed import RenamedKafkaWriter
from migrate.kafka.writer import GroupRejected


def kafka_names(writer: Any, groups: Sequence[str]) -> dict[str, str]:
    """Each of `groups` (ZooKeeper names) by the Kafka name `writer` reads and writes it under."""
    name = getattr(writer, "kafka_name", None)
    return {g: name(g) if name else g for g in groups}


def of_run(settings: Mapping[str, Any]) -> dict[str, str]:
    """The mapping a journaled run wrote through (its recorded settings), or {}."""
    return dict(settings.get(RECORD_KEY) or {})


__all__ = ["GroupRejected", "RECORD_KEY", "RenamedKafkaWriter", "kafka_names", "of_run"]
