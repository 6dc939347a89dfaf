"""One partition of `__consumer_offsets` applied in log order to the groups followed in it, its
transactions resolved by their markers. Pure; reader.py hands it each batch it reads.
"""

from __future__ import annotations

from migrate.kafka.offsets_log.group import Compacted, GroupLog
from migrate.kafka.offsets_log.records import Batch
from migrate.kafka.offsets_log.schema import (ABORT, CONSUMER_GROUP_MEMBER, CONSUMER_GROUP_METADATA,
                                              GROUP_METADATA, OFFSET_KEYS, UNREADABLE, marker,
                                              member_key)


class PartitionLog:
    """One partition of `__consumer_offsets` applied in log order to its followed groups, with
    its transactions resolved as the coordinator resolves them: a transactional commit is held by
    its producer id until that producer's marker; COMMIT applies it, ABORT drops it, and one still
    open at the end of a read is no commit (it waits for its marker in the next read).
    `watch_from`: the partition's log end when the watch began (None: no watch). Records missing
    from the offsets read (the cleaner's work, or a log start past 0) leave each group with no
    record yet `Compacted` (group.py)."""

    def __init__(self, groups: dict[str, GroupLog], watch_from: int | None = None):
        self.groups, self.watch_from = groups, watch_from
        # by the group id's bytes every key carries (the group is one a read kept)
        self.by_bytes = {name.encode("utf-8"): group for name, group in groups.items()}
        self.pending: dict[int, list[tuple[GroupLog, tuple]]] = {}
        self.records = 0
        self.next = 0                       # the offset the next batch starts at, none removed
        self.compacted: int | None = None   # the first offset records were removed before

    def add(self, group: GroupLog) -> None:
        """Apply `group`'s records too, from the next batch on."""
        self.groups[group.name] = group
        self.by_bytes[group.name.encode("utf-8")] = group

    def apply(self, batch: Batch) -> None:
        """A batch of the partition, the next in log order, its records kept for the followed
        groups (records.batches)."""
        if self.compacted is None and (batch.base_offset > self.next or
                                       batch.count <= batch.last_offset - batch.base_offset):
            self._compacted(batch.base_offset)
        self.next = batch.last_offset + 1
        self.records += len(batch.records)
        if batch.control:
            for _, key, _ in batch.records:
                held = self.pending.pop(batch.producer_id, [])
                if marker(key) not in (None, ABORT):
                    for group, args in held:
                        group.commit(*args)
            return
        mark, by_bytes = self.watch_from, self.by_bytes
        for log_offset, key, value in batch.records:
            kind = key[1] if key[0] == 0 else -1
            group = by_bytes[key[4:4 + ((key[2] << 8) | key[3])]]   # schema.group_of, inline
            if kind in OFFSET_KEYS:
                during = mark is not None and log_offset >= mark
                if batch.transactional:
                    self.pending.setdefault(batch.producer_id, []).append(
                        (group, (key, log_offset, value, during, group.now)))
                elif value is None or during:
                    group.commit(key, log_offset, value, during)
                else:                               # the hot path: GroupLog.commit, inlined
                    raw = group.raw
                    if key not in raw:
                        group.fresh.append(key)
                    raw[key] = (log_offset, value, group.now)
            elif kind == GROUP_METADATA:
                group.group_record(value)
            elif kind == CONSUMER_GROUP_METADATA:
                group.kip848_group(value)
            elif kind == CONSUMER_GROUP_MEMBER:
                try:
                    group.kip848_member(member_key(key)[1], value)
                except UNREADABLE:
                    continue

    def _compacted(self, since: int) -> None:
        """Records before `since` are gone: a group with no record read yet is Compacted."""
        self.compacted = since
        for group in self.groups.values():
            if group.now is None:
                group.now = Compacted(since)
