"""One renewal pass: each offset zk2kafka wrote re-committed exactly as Kafka holds it, or why
not.

Never a value zk2kafka did not write, never a moved offset: a partition is renewed only where
Kafka holds the very offset the journal says zk2kafka committed there and its commit is
zk2kafka's (`Authorship`, from its metadata and the journal), and it is re-committed with the
offset and metadata Kafka holds, so it stays zk2kafka's for sync, rollback and the next pass. A
group with members in Kafka is left to them: their commits keep it alive. A dry run takes the same
path and stops before the commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kafka.errors import KafkaError

from migrate.diff.plan import Planned
from migrate.journal.authorship import Authorship
from migrate.journal.journal import Journal
from migrate.kafka.values import Committed, Key, label
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter
from migrate.renew.written import Written

log = logging.getLogger(__name__)

# Why a partition is not renewed, as its group's reason says it.
LIVE = ("a consumer is in the group in Kafka: its own commits keep the offsets alive, and "
        "zk2kafka leaves it to them")
GONE = ("Kafka holds no offset (expired or deleted): there is no value to renew; only a "
        "migration or a consumer puts one back")


@dataclass
class PassResult:
    """What one pass did (or, dry, would do): the renewed offsets per Kafka group, and the groups
    left alone with why."""

    renewed: dict[str, dict[Key, Committed]] = field(default_factory=dict)
    left_alone: dict[str, str] = field(default_factory=dict)

    @property
    def offsets(self) -> int:
        return sum(map(len, self.renewed.values()))


def renewal_pass(wanted: Mapping[str, Mapping[Key, Written]], writer: KafkaOffsetWriter,
                 live: Callable[[list[str]], set[str]], authorship: Authorship,
                 journal: Journal | None, run_id: str, dry_run: bool) -> PassResult:
    """Renew every group of `wanted` (Kafka group -> the values zk2kafka wrote) that Kafka holds
    as zk2kafka left it; `live(groups)` names those with members in Kafka. With a `journal`, the
    renewals read back as committed are journaled under `run_id`."""
    found = PassResult()
    groups = sorted(wanted)
    members = live(groups)
    asked = [g for g in groups if g not in members]
    held_now = writer.committed_many(asked) if asked else {}
    todo: dict[str, dict[Key, Committed]] = {}
    for group in groups:
        if group in members:
            found.left_alone[group] = LIVE
            continue
        held = held_now[group]
        if isinstance(held, GroupRejected):
            found.left_alone[group] = f"Kafka refused to show its offsets: {held.reason}"
            continue
        renew, why = _ours(group, wanted[group], held, authorship)
        if why:
            found.left_alone[group] = why
        if renew:
            todo[group] = renew
    if dry_run:
        found.renewed = todo
        return found
    for group, offsets in todo.items():
        refused = _commit(writer, group, offsets)
        if refused:
            found.left_alone[group] = refused
            continue
        found.renewed[group] = offsets
    _read_back(writer, found)
    if journal is not None and found.renewed:
        journal.record_mirrored_many(run_id, {
            group: [(Planned(t, p, c.offset, "", None, "renewal", c.offset), (c.offset, c.metadata))
                    for (t, p), c in offsets.items()] for group, offsets in found.renewed.items()})
    return found


def _ours(group: str, wanted: Mapping[Key, Written], held: Mapping[Key, Committed],
          authorship: Authorship) -> tuple[dict[Key, Committed], str | None]:
    """The partitions of `group` to renew (those Kafka holds as zk2kafka wrote them; none once
    someone else committed to the group), and why others are not (None when all are)."""
    gone = sorted(k for k in wanted if k not in held)
    moved = sorted(k for k in wanted if k in held and held[k].offset != wanted[k].offset)
    same = [k for k in wanted if k in held and k not in moved]
    theirs: list[Key] = []
    by_journal_group: dict[str, list[Key]] = {}
    for k in same:
        by_journal_group.setdefault(wanted[k].journal_group, []).append(k)
    for journal_group, keys in by_journal_group.items():
        theirs += authorship.foreign(journal_group, dict(held), keys, {})
    # Someone else committed to the group: it is theirs now (as sync leaves a group taken over),
    # its other partitions too. A partition Kafka no longer holds takes nothing from the rest.
    renew = {} if moved or theirs else {k: held[k] for k in same}
    reasons = []
    if moved:
        shown = ", ".join(f"{label(k)} = {held[k].offset} (zk2kafka wrote {wanted[k].offset})"
                          for k in moved[:3])
        reasons.append(f"{len(moved)} partition(s) moved since zk2kafka wrote them: {shown}: "
                       "someone else committed (a consumer, or a tool), so the group is left alone")
    if theirs:
        shown = ", ".join(f"{label(k)} = {held[k].offset} (metadata {held[k].metadata!r})"
                          for k in sorted(theirs)[:3])
        reasons.append(f"{len(theirs)} partition(s) hold zk2kafka's offset committed by someone "
                       f"else: {shown}: the group is theirs to keep alive")
    if gone:
        reasons.append(f"{len(gone)} partition(s): {GONE} ({', '.join(map(label, gone[:3]))})")
    return renew, "; ".join(reasons) or None


def _commit(writer: KafkaOffsetWriter, group: str, offsets: Mapping[Key, Committed]) -> str | None:
    """Commit `offsets` as Kafka holds them, one OffsetCommit per metadata; why not, or None."""
    by_metadata: dict[str, dict[Key, int]] = {}
    for key, c in offsets.items():
        by_metadata.setdefault(c.metadata or "", {})[key] = c.offset
    try:
        for metadata, values in by_metadata.items():
            writer.commit(group, values, metadata)
    except GroupRejected as exc:
        return LIVE if exc.live else f"Kafka refused the renewal: {exc.reason}"
    except KafkaError as exc:
        return f"Kafka refused the renewal: {type(exc).__name__}: {exc}"
    return None


def _read_back(writer: KafkaOffsetWriter, found: PassResult) -> None:
    """Only renewals Kafka holds afterwards are counted: a group whose value changed meanwhile (a
    consumer committed between) is told as such, never as renewed."""
    if not found.renewed:
        return
    again = writer.committed_many(list(found.renewed))
    for group in list(found.renewed):
        held, offsets = again[group], found.renewed[group]
        if isinstance(held, GroupRejected):
            found.left_alone[group] = f"the renewal could not be read back: {held.reason}"
        elif any(held.get(k, (None, None))[0] != c.offset for k, c in offsets.items()):
            found.left_alone[group] = ("renewed, then moved by someone else before it was read "
                                       "back: no longer zk2kafka's value")
        else:
            continue
        del found.renewed[group]
