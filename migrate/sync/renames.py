"""sync through a group mapping (--map-group, migrate/group_map.py): each followed ZooKeeper group
is mirrored into the Kafka group it maps to, and its liveness and takeover are judged there.

The groups listed when sync starts are resolved as diff and migrate resolve theirs: two that would
meet in one Kafka group, or a NEW that comes out empty, refuse the run before Kafka is reached
(`resolved_at_start`, exit 2). A group a later re-scan lists is admitted against the groups
admitted before it (`SyncRenames.admit`): one whose mapping is refused (a NEW that comes out empty,
two rules that disagree) or that would meet an admitted group in one Kafka group is refused by name
and never written, and the others go on; groups first listed by the same re-scan that would meet
one another are all refused (none of them was mirrored first). Every shard of `sync --writers N`
lists every selected group, so each refuses the same ones.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from migrate.group_map import GroupMap, GroupMapRefused, refuse_unmapped
from migrate.journal.journal import journaled_renames
from migrate.kafka.renamed import RenamedKafkaWriter
from migrate.zk.client import close, connect
from migrate.zk.scan import make_reader

MEET = "one Kafka group cannot take the offsets of two"


class SyncRenames:
    """The mapping of a sync run over the groups its re-scans list: `renamed` (old -> new of the
    groups admitted that a rule renames, shared with the Kafka writer) grows as groups appear."""

    def __init__(self, mapping: GroupMap):
        self.mapping = mapping
        self.renamed: dict[str, str] = {}
        self._owner: dict[str, str] = {}      # Kafka group -> the ZooKeeper group mirrored into it
        self._refused: set[str] = set()

    def writer(self, kafka: Any) -> Any:
        """`kafka` (a KafkaOffsetWriter) as sync calls it: through `renamed` when there is a
        mapping (one dict: what a re-scan admits reaches every later call), else itself."""
        return RenamedKafkaWriter(kafka, self.renamed) if self.mapping else kafka

    def kafka_name(self, group: str) -> str:
        return self.renamed.get(group, group)

    def named(self, group: str) -> str:
        """A group as sync's lines name it: `old -> new` when renamed."""
        new = self.renamed.get(group)
        return group if new is None else f"{group} -> {new}"

    def admit(self, names: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
        """The groups of `names` (every selected group a re-scan lists) not seen before: (old ->
        new of those admitted renamed, group -> why of those refused)."""
        if not self.mapping:
            return {}, {}
        owned = set(self._owner.values())
        fresh = [n for n in names if n not in owned and n not in self._refused]
        refused: dict[str, str] = {}
        claims: dict[str, list[str]] = defaultdict(list)
        for name in sorted(fresh):
            try:
                claims[self.mapping.new_name(name)].append(name)
            except GroupMapRefused as exc:
                refused[name] = f"not synced: {exc}"
        renamed: dict[str, str] = {}
        for target, claimants in claims.items():
            owner = self._owner.get(target)
            if owner is not None:
                for name in claimants:
                    refused[name] = (f"not synced: {_as(name, target)} would meet group '{owner}', "
                                     f"which sync mirrors into '{target}': {MEET}")
            elif len(claimants) > 1:
                both = " and ".join(f"'{n}'" for n in claimants)
                for name in claimants:
                    refused[name] = (f"not synced: groups {both}, found by one re-scan, would "
                                     f"meet in Kafka group '{target}': {MEET}")
            else:
                self._owner[target] = claimants[0]
                if target != claimants[0]:
                    renamed[claimants[0]] = target
        self.renamed.update(renamed)
        self._refused.update(refused)
        return renamed, refused


def _as(name: str, target: str) -> str:
    return (f"group '{name}', mapped to '{target}'," if name != target
            else f"group '{name}', which keeps its name,")


def resolved_at_start(mapping: GroupMap, options: Any) -> dict[str, str]:
    """old -> new over the groups ZooKeeper lists now (a session of its own, closed again); raises
    GroupMapRefused (exit 2) as diff and migrate do, also without a mapping for a group the
    journal shows moved under another name. `options`: the FollowOptions."""
    journaled = {} if mapping else journaled_renames(options.state_dir)
    if not mapping and not journaled:
        return {}
    client = connect(options.connection)
    try:
        groups = make_reader(client, options.reading).groups()
    finally:
        close(client)
    refuse_unmapped(groups, mapping, journaled)   # a group moved under another name, unmapped
    return mapping.resolve(groups)
