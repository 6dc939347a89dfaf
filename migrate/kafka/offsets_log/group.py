"""What `__consumer_offsets` says of one group, built from its records in log order: who was a
member at each moment, the record that wrote each partition's value, and the commits made while
zk2kafka watched. Pure; partition.py applies the records here in log order.

Commits during the watch are kept by partition and by their metadata: zk2kafka's own (a run's
metadata, or a custom --metadata the caller names) never count as a consumer's (`watched`).

A transaction's offset commit is a member's by no record: whether it carried the group's
generation is not written, and a producer may send offsets for a group with members without it
(Membership.transactional; takeover.py then asks the watch).

A commit is a member's only where the log shows the group with members at that moment: the
group's metadata record before it names members (classic; or KIP-848 member records not yet
deleted). The coordinator refuses a commit from outside the group while it has members, so a
commit made while the latest record says Empty was made by no member, whatever the group's
protocol type. Where the assignment is told (protocol type `consumer`), the member assigned the
partition is named, and a commit of a partition no member was assigned is not a member's.

The log cleaner keeps only each key's latest record: once consumers that took a group over leave,
the group's Empty record supersedes the one that showed them, and their surviving commit has no
record of the group before it. So a commit made where the group had no record yet and records
were already removed before it (a gap in the partition's offsets, partition.py) shows no
membership either way (Membership.compacted) when the group has a record of its own later in the
log; a group with none anywhere never had members, as its latest record would have survived.
A member's commit zk2kafka saw before is shown as it was seen (kept.py).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from migrate.kafka.offsets_log.schema import (UNREADABLE, GroupMetadata, Member, commit_clock,
                                              commit_offset, commit_value, group_metadata,
                                              member_value, offset_key)
from migrate.kafka.values import Key, named_run


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
    transactional: bool = False   # applied by its transaction's COMMIT marker
    compacted: bool = False       # the group's records before it were removed by the cleaner
    kept: bool = False            # as zk2kafka saw it before they were (kept.py)


NO_MEMBER = Membership(0, None, "", None, None)
COMPACTED = NO_MEMBER._replace(compacted=True)
NOW = object()   # a commit applied as it is read: the group as it stands


class Compacted(NamedTuple):
    """A group with no record read yet where the partition's records before `since` (a log
    offset) were removed: what it was then is not shown. A value, so that it survives the
    processes of a shared read (shares.py)."""

    since: int


class InTransaction(NamedTuple):
    """The group as it stood at a transaction's offset commit: kept so, as the record does not
    say whether the commit carried the group's generation (a producer sends offsets for a group
    with or without its consumer's, KIP-447)."""

    state: object


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
    """One group's records, applied in log order (see the module's docstring). Its commits are
    kept by their keys' bytes, as read (ten million records a read: a key is parsed only once,
    when asked for), each with the record's place in the log and the group as it stood then."""

    def __init__(self, name: str):
        self.name = name
        self.metadata: GroupMetadata | None = None      # the latest classic metadata record
        self.kip848 = False                             # a KIP-848 consumer group's record read
        self.members848: dict[str, Member] = {}
        self.now: object = None                         # the group as it stands: what commits keep
        self.raw: dict[bytes, tuple[int, bytes, object]] = {}
        self.fresh: list[bytes] = []                    # keys not parsed yet
        self._keys: dict[Key, bytes] = {}               # (topic, partition) -> its key's bytes
        self._decoded: dict[bytes, tuple[int, Commit | None]] = {}
        # the commits made during the watch, by partition and by the metadata they carried
        self.during: dict[Key, dict[str, Watched]] = {}

    # -- applying records -------------------------------------------------------------------

    def commit(self, key: bytes, log_offset: int, value: bytes | None, during_watch: bool,
               state: object = NOW) -> None:
        """An offset commit record, by its key's bytes (None: a tombstone, the offset deleted).
        `state`: the group as it stood at the record, when applied later (a transaction's
        commit), which a value written later in the log outranks; else now. (PartitionLog
        applies the plain ones itself, the same way.)"""
        if value is None:
            self.raw.pop(key, None)
            return
        held = self.raw.get(key)
        if held is None:
            self.fresh.append(key)
        elif state is not NOW and held[0] > log_offset:
            return
        self.raw[key] = (log_offset, value, self.now if state is NOW else InTransaction(state))
        if during_watch:
            self.watch(key, value)

    def watch(self, key: bytes, value: bytes) -> None:
        """A commit made during the watch."""
        try:
            found, at = commit_value(value), offset_key(key)[1:]
        except UNREADABLE:
            return
        if found is not None:
            by_metadata = self.during.setdefault(at, {})
            seen = by_metadata.get(found.metadata)
            by_metadata[found.metadata] = (Watched(1, found.offset, found.offset) if seen is None
                                           else Watched(seen.count + 1, seen.first, found.offset))

    def group_record(self, value: bytes | None) -> None:
        """A classic group metadata record (None: the group deleted; one that cannot be read
        leaves no member shown, so no commit after it passes for a member's)."""
        try:
            self.metadata = group_metadata(value) if value is not None else None
        except UNREADABLE:
            self.metadata = None
        self._now()

    def kip848_group(self, value: bytes | None) -> None:
        """A KIP-848 group's metadata record (None: the group deleted)."""
        self.kip848 = value is not None
        if value is None:
            self.members848.clear()
        self._now()

    def kip848_member(self, member_id: str, value: bytes | None) -> None:
        """A KIP-848 member's record (None: the member left)."""
        if value is None:
            self.members848.pop(member_id, None)
        else:
            try:
                self.members848[member_id] = member_value(member_id, value)
            except UNREADABLE:
                self.members848[member_id] = Member(member_id, "", "", None)
        self._now()

    def _now(self) -> None:
        self.now = tuple(self.members848.values()) if self.members848 else self.metadata

    # -- what it shows ----------------------------------------------------------------------

    @property
    def protocol_type(self) -> str | None:
        """The protocol type of its latest metadata record ("consumer" for a KIP-848 group; ""
        for none); None when no metadata record of it was read."""
        if self.kip848:
            return "consumer"
        return self.metadata.protocol_type if self.metadata is not None else None

    @property
    def stable_since(self) -> int | None:
        """When its current generation's members were settled (ms, 2.1+), where its latest record
        shows members."""
        if self.metadata is None or not self.metadata.members:
            return None
        return self.metadata.state_ms

    @property
    def empty_since(self) -> int | None:
        """When it became Empty (ms, 2.1+), when its latest record shows no member."""
        if self.metadata is None or self.metadata.members or self.members848:
            return None
        return self.metadata.state_ms

    def watched(self, key: Key, own: frozenset[str] = frozenset()) -> Watched | None:
        """The partition's commits during the watch that were not zk2kafka's (None: none). A
        commit whose metadata names a zk2kafka run, or is one of `own` (the custom --metadata
        zk2kafka's runs committed with), is zk2kafka's (a migrate, a sync, a renewal of either)
        and never counts. The others are told apart by their metadata, as a consumer sends the
        same with every commit: the committer seen consuming with the most commits, else the
        one with the most."""
        theirs = [w for metadata, w in self.during.get(key, {}).items()
                  if named_run(metadata) is None and metadata not in own]
        if not theirs:
            return None
        return max(theirs, key=lambda w: (w.consuming, w.count))

    @property
    def keys(self) -> list[Key]:
        """The (topic, partition) of each offset it holds."""
        self._index()
        return [key for key, raw in self._keys.items() if raw in self.raw]

    def committed(self, key: Key) -> Commit | None:
        """The record that wrote the partition's value, as read; None when none was."""
        raw, held = self._newest(key)
        if held is None:
            return None
        cached = self._decoded.get(raw)
        if cached is None or cached[0] != held[0]:
            try:
                found = commit_value(held[1])
            except UNREADABLE:
                found = None                     # a value that cannot be read dates nothing
            state = held[2]
            if isinstance(state, Compacted) and self.metadata is None and not self.kip848:
                state = None   # no record of the group at all: none was removed (the docstring)
            cached = self._decoded[raw] = (held[0], None if found is None else Commit(
                found[0], found[1], found[2], found[3], held[0], membership(state, key)))
        return cached[1]

    def newest_offset(self, key: Key) -> int | None:
        """The value the partition's newest commit record read holds, read without the rest of
        the record (a check of many values against Kafka's); None when none can be read."""
        held = self._newest(key)[1]
        try:
            return commit_offset(held[1]) if held is not None else None
        except UNREADABLE:
            return None

    def _newest(self, key: Key) -> tuple[bytes | None, tuple | None]:
        """The partition's key bytes and its newest commit as kept (None, None: none read)."""
        if self.fresh:
            self._index()
        raw = self._keys.get(key)
        return raw, self.raw.get(raw) if raw is not None else None

    @property
    def commits(self) -> tuple[tuple[int, int | None], ...]:
        """The distinct (commit ms, expire ms or None) of its partitions' values: its retention
        clocks (one commit request stamps all its partitions alike: a group has few)."""
        clocks = set()
        for held in self.raw.values():
            try:
                clocks.add(commit_clock(held[1]))
            except UNREADABLE:
                continue
        clocks.discard(None)
        return tuple(sorted(clocks))

    def _index(self) -> None:
        for raw in self.fresh:
            try:
                self._keys[offset_key(raw)[1:]] = raw
            except UNREADABLE:
                continue                          # a key no partition can be told of
        self.fresh.clear()


def membership(state: object, key: Key) -> Membership:
    """The group as `state` (GroupLog.state's answer) shows it, for a commit of `key`."""
    if isinstance(state, InTransaction):
        return membership(state.state, key)._replace(transactional=True)
    if state is None:
        return NO_MEMBER
    if isinstance(state, Compacted):
        return COMPACTED
    if isinstance(state, GroupMetadata):
        if not state.members:
            return _empty(state)
        held, unheld = _assignment(state)
        return held.get(key, unheld)
    if isinstance(state, tuple) and state:
        return Membership(len(state), None, "consumer", None, None)
    return NO_MEMBER


@functools.lru_cache(maxsize=256)
def _assignment(state: GroupMetadata) -> tuple[dict[Key, Membership], Membership]:
    """A group with members, as each commit made under it sees it: by partition, the first member
    assigned it; and for a partition no member is assigned, whether that is known (every member's
    assignment told) or not. One Membership per member, shared by the commits it made then (a
    million commits' evidence would otherwise be a million objects, each looked up in every
    assignment)."""
    members, generation, protocol = len(state.members), state.generation, state.protocol_type
    told = [m for m in state.members if m.assigned is not None]
    held: dict[Key, Membership] = {}
    for member in told:
        evidence = Membership(members, generation, protocol, member, True)
        for key in member.assigned:
            held.setdefault(key, evidence)
    unheld = Membership(members, generation, protocol, None,
                        None if len(told) < members else False)
    return held, unheld


@functools.lru_cache(maxsize=1024)
def _empty(state: GroupMetadata) -> Membership:
    """An Empty group's record, as every commit made under it sees it (one object for them all)."""
    return Membership(0, state.generation, state.protocol_type, None, None)
