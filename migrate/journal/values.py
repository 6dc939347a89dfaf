"""A journaled offset's values, and how a group's are kept: one value per group, not a row per
offset.

What both stores held before a run wrote a group (its Before), and the znode versions its write
left, are journaled as one JSON text per group in the `groups` table (`before`, `zk_after`), so a
batch of 250 groups is 250 rows written, not one per offset. The `partitions` table keeps the
plan's rows; a journal written before the group values were (schema 2) has these values in its
`partitions` columns instead, which are read where a group has no value of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import NamedTuple


class Partition(NamedTuple):
    """A journaled offset: the plan (diff.plan.Planned's fields, in their order), and the values
    before and after the run touched it."""

    topic: str
    partition: int
    offset: int
    zk_path: str
    zk_version: int | None
    layout: str
    kafka_offset: int | None = None
    zk_mzxid: int | None = None
    before_kafka_offset: int | None = None
    before_kafka_metadata: str | None = None
    before_zk_value: bytes | None = None
    before_zk_version: int | None = None
    after_zk_version: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition


class Before(NamedTuple):
    """What both stores held of a group before a run wrote it, which rollback restores: kafka
    {(topic, partition): (offset, metadata) or None}, zk {path: (bytes or None, version)}."""

    kafka: Mapping[tuple[str, int], tuple[int, str] | None]
    zk: Mapping[str, tuple[bytes | None, int | None]]


# The plan's part of a Partition: the fields a `partitions` row gives before the values.
PLANNED_FIELDS = 8
_NO_VALUE = (None, None)


def before_text(before: tuple[Mapping, Mapping]) -> str:
    """A group's Before as the JSON the journal keeps: Kafka's offsets as [topic, partition,
    offset, metadata] (none where Kafka held nothing), each znode as [path, value, version], its
    bytes as Latin-1 text (every byte one character, so any value comes back as it was); a znode
    neither read nor held (--no-zk-write) is left out: its row's columns say the same, null."""
    kafka, zk = before
    return json.dumps({
        "kafka": [[topic, partition, *value] for (topic, partition), value in kafka.items()
                  if value is not None],
        "zk": [[path, None if value is None else value.decode("latin-1"), version]
               for path, (value, version) in zk.items()
               if value is not None or version is not None]}, separators=(",", ":"))


def after_text(zk_after: Mapping[str, int]) -> str:
    """The znode versions a group's write left, as the JSON the journal keeps."""
    return json.dumps(zk_after, separators=(",", ":"))


def merged(rows: Iterable[tuple], before: str | None, zk_after: str | None) -> list[Partition]:
    """A group's Partitions from its `partitions` rows (Partition's fields, in order) and its
    group values (None: the values are the rows' own, as a schema-2 journal kept them)."""
    rows = list(rows)
    if before is None and zk_after is None:
        return [Partition._make(row) for row in rows]
    if before is not None:
        values = json.loads(before)
        kafka = {(topic, partition): (offset, metadata)
                 for topic, partition, offset, metadata in values["kafka"]}
        zk = {path: (None if value is None else value.encode("latin-1"), version)
              for path, value, version in values["zk"]}
    after = json.loads(zk_after) if zk_after is not None else None
    out = []
    for row in rows:
        plan = row[:PLANNED_FIELDS]
        if before is None:
            values_now = row[PLANNED_FIELDS:-1]
        else:
            values_now = (*kafka.get((row[0], row[1]), _NO_VALUE),
                          *zk.get(row[3], row[PLANNED_FIELDS + 2:-1]))
        version = row[-1] if after is None else after.get(row[3], row[-1])
        out.append(Partition._make((*plan, *values_now, version)))
    return out


def with_before(parts: list[Partition], before: tuple[Mapping, Mapping]) -> list[Partition]:
    """`parts` holding `before`'s values, as the journal holds them once it is recorded."""
    kafka, zk = before
    return [Partition._make((*p[:PLANNED_FIELDS], *(kafka.get(p.key) or _NO_VALUE),
                             *zk[p.zk_path], p.after_zk_version)) for p in parts]
