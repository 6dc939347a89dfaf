"""What `__consumer_offsets` says of one group, built from its records in log order: who was a
member at each moment, the record that wrote each partition's value, and the commits made while
zk2kafka watched. Pure; offsets_log.py reads the records and hands them here.

A commit is a member's only where the log shows the group with members at that moment: the
group's metadata record before it names members (classic; or KIP-848 member records not yet
deleted). The coordinator refuses a commit from outside the group while it has members, so a
commit made while the latest record says Empty was made by no member, whatever the group's
protocol type. Where the assignment is told (protocol type `consumer`), the member assigned the
partition is named, and a commit of a partition no member was assigned is not a member's.
"""

from __future__ import annotations

from typing import NamedTuple

from migrate.kafka.group_records import (ABORT, CONSUMER_GROUP_MEMBER, CONSUMER_GROUP_METADATA,
                                         GROUP_METADATA, OFFSET_KEYS, GroupMetadata,
                                         Key, Member, commit_value, group_metadata, key_group,
                                         key_type, marker, member_key, member_value, offset_key)
from migrate.kafka.record_batches import Batch


class Membership(NamedTuple):
    """The group as its records stood when a commit was made: how many members, at which
    generation (None: KIP-848, or no record), and the member assigned the partition (None where
    no member was, or the assignment is not told); `covered`: whether an assignment covers the
    partition (None: not told)."""

    members: int
    generation: int | None
    protocol_type: str
    member: Member | None
    covered: bool | None


NO_MEMBER = Membership(0, None, "", None, None)


class Commit(NamedTuple):
    """The record that wrote a partition's value: the value, where it lies in the log, and the
    group's members at that moment."""

    offset: int
    metadata: str
    commit_ms: int
    expire_ms: int | None
    log_offset: int
    by: Membership


class Watched(NamedTuple):
    """The commits of a partition made during the watch (at or after the watch's mark in the
    log): how many, and the first and last offsets committed."""

    count: int
    first: int
    last: int

    @property
    def consuming(self) -> bool:
        """Committed at least twice, moving forward: a consumer seen consuming."""
        return self.count >= 2 and self.last > self.first


class GroupLog:
    """One group's records, applied in log order (see the module's docstring)."""

    def __init__(self, name: str):
        self.name = name
        self.metadata: GroupMetadata | None = None      # the latest classic metadata record
        self.kip848 = False                             # a KIP-848 consumer group's record read
        self.members848: dict[str, Member] = {}
        self._at: tuple | None = None                   # KIP-848 members, as a commit sees them
        self._latest: dict[Key, tuple[int, bytes, object]] = {}
        self._decoded: dict[Key, Commit | None] = {}
        self.watched: dict[Key, Watched] = {}

    # -- applying records -------------------------------------------------------------------

    def commit(self, key: Key, log_offset: int, value: bytes | None, during_watch: bool,
               state: object = None) -> None:
        """An offset commit record (None: a tombstone, the offset deleted). `state`: the group as
        it stood at the record, when applied later (a transaction's commit); else now."""
        if value is None:
            self._latest.pop(key, None)
            self._decoded.pop(key, None)
            return
        held = self._latest.get(key)
        if held is not None and held[0] > log_offset:
            return          # a transaction's commit older than the value the group holds
        self._latest[key] = (log_offset, value, self.state() if state is None else state)
        self._decoded.pop(key, None)
        if during_watch:
            found = commit_value(value)
            if found is not None:
                seen = self.watched.get(key)
                self.watched[key] = (Watched(1, found.offset, found.offset) if seen is None else
                                     Watched(seen.count + 1, seen.first, found.offset))

    def group_record(self, value: bytes | None) -> None:
        """A classic group metadata record (None: the group deleted)."""
        self.metadata = group_metadata(value) if value is not None else None

    def kip848_group(self, value: bytes | None) -> None:
        """A KIP-848 group's metadata record (None: the group deleted)."""
        self.kip848 = value is not None
        if value is None:
            self.members848.clear()
            self._at = None

    def kip848_member(self, member_id: str, value: bytes | None) -> None:
        """A KIP-848 member's record (None: the member left)."""
        if value is None:
            self.members848.pop(member_id, None)
        else:
            self.members848[member_id] = member_value(member_id, value)
        self._at = None

    def state(self) -> object:
        """The group's members as they stand now, cheaply: what a commit record keeps."""
        if self.members848:
            if self._at is None:
                self._at = tuple(self.members848.values())
            return self._at
        return self.metadata

    # -- what it shows ----------------------------------------------------------------------

    @property
    def protocol_type(self) -> str | None:
        """The protocol type of its latest metadata record ("consumer" for a KIP-848 group; ""
        for none); None when no metadata record of it was read."""
        if self.kip848:
            return "consumer"
        return self.metadata.protocol_type if self.metadata is not None else None

    @property
    def empty_since(self) -> int | None:
        """When it became Empty (ms, 2.1+), when its latest record shows no member."""
        if self.metadata is None or self.metadata.members or self.members848:
            return None
        return self.metadata.state_ms

    def committed(self, key: Key) -> Commit | None:
        """The record that wrote the partition's value, as read; None when none was."""
        if key not in self._decoded:
            held = self._latest.get(key)
            found = commit_value(held[1]) if held is not None else None
            self._decoded[key] = None if found is None else Commit(
                *found, log_offset=held[0], by=membership(held[2], key))
        return self._decoded[key]

    @property
    def keys(self) -> list[Key]:
        return list(self._latest)

    @property
    def commits(self) -> tuple[tuple[int, int | None], ...]:
        """(commit ms, expire ms or None) of each partition's value: its retention clocks."""
        return tuple((c.commit_ms, c.expire_ms) for c in map(self.committed, self._latest) if c)


def membership(state: object, key: Key) -> Membership:
    """The group as `state` (GroupLog.state's answer) shows it, for a commit of `key`."""
    if isinstance(state, GroupMetadata):
        if not state.members:
            return Membership(0, state.generation, state.protocol_type, None, None)
        told = [m for m in state.members if m.assigned is not None]
        holder = next((m for m in told if key in m.assigned), None)
        covered = None if len(told) < len(state.members) and holder is None else holder is not None
        return Membership(len(state.members), state.generation, state.protocol_type, holder,
                          covered)
    if isinstance(state, tuple) and state:
        return Membership(len(state), None, "consumer", None, None)
    return NO_MEMBER


class PartitionLog:
    """One partition of `__consumer_offsets` applied in log order to its followed groups, with
    its transactions resolved as the coordinator resolves them: a transactional commit is held by
    its producer id until that producer's marker; COMMIT applies it, ABORT drops it, and one still
    open at the end of a read is no commit (it waits for its marker in the next read).
    `watch_from`: the partition's log end when the watch began (None: no watch)."""

    def __init__(self, groups: dict[str, GroupLog], watch_from: int | None = None):
        self.groups, self.watch_from = groups, watch_from
        self.pending: dict[int, list[tuple[GroupLog, tuple]]] = {}
        self.records = 0

    def apply(self, batch: Batch) -> None:
        """A batch of the partition, the next in log order, its records kept for the followed
        groups (record_batches.batches)."""
        self.records += len(batch.records)
        if batch.control:
            for _, key, _ in batch.records:
                held = self.pending.pop(batch.producer_id, [])
                if marker(key) not in (None, ABORT):
                    for group, args in held:
                        group.commit(*args)
            return
        mark = self.watch_from
        for log_offset, key, value in batch.records:
            kind = key_type(key)
            if kind in OFFSET_KEYS:
                name, topic, partition = offset_key(key)
                group = self.groups[name]
                args = ((topic, partition), log_offset, value,
                        mark is not None and log_offset >= mark)
                if batch.transactional:
                    self.pending.setdefault(batch.producer_id, []).append(
                        (group, (*args, group.state())))
                else:
                    group.commit(*args)
            elif kind == GROUP_METADATA:
                self.groups[key_group(key)].group_record(value)
            elif kind == CONSUMER_GROUP_METADATA:
                self.groups[key_group(key)].kip848_group(value)
            elif kind == CONSUMER_GROUP_MEMBER:
                name, member = member_key(key)
                self.groups[name].kip848_member(member, value)
