"""What one pass of sync commits, per group, against what Kafka holds now: ZooKeeper's offsets where
Kafka's differ, and (on a renewal) the unchanged ones zk2kafka wrote; or why the group is to be
stopped instead (its offsets refused, a new consumer took it over, another zk2kafka run wrote it,
or someone else wrote it and no new consumer is shown to own it).

Never backwards by surprise: a value zk2kafka did not write (`Authorship`) is never written over.
Whether it is a new consumer's is the takeover rule's to say (migrate/kafka/takeover.py), on the
commit times and protocol type __consumer_offsets holds (`evidence`), read once a pass for the
groups that need them. This module only decides; the Follower commits, and stops the groups it is
told to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from migrate.journal.authorship import Authorship, Held, differs, other_run, taken_over
from migrate.kafka import takeover
from migrate.kafka.takeover import CommitEvidence
from migrate.kafka.writer import GroupRejected, Key
from migrate.sync.state import GroupState

Evidence = Callable[[list[str]], Mapping[str, CommitEvidence]]


def no_evidence(groups: list[str]) -> Mapping[str, CommitEvidence]:
    """Nothing read: every value zk2kafka did not write differs."""
    return {}


class Judging(NamedTuple):
    """What one pass judges a takeover with: the evidence, asked by ZooKeeper group; when sync
    started watching (its clock, seconds); the clock margin (--clock-margin)."""

    evidence: Evidence
    watching_since: float
    margin: float


class Takeover(NamedTuple):
    """What the rule reads for sync: `evidence(kafka groups)`, and its margin."""

    evidence: Evidence = no_evidence
    margin: float = takeover.MARGIN

    def watching(self, since: float, kafka_name: Callable[[str], str]) -> Judging:
        """The pass's Judging: the evidence asked by ZooKeeper name through `kafka_name`."""
        def asked(names: list[str]) -> Mapping[str, CommitEvidence]:
            kafka = {name: kafka_name(name) for name in names}
            found = self.evidence(sorted(set(kafka.values())))
            return {name: found[k] for name, k in kafka.items() if k in found}
        return Judging(asked, since, self.margin)


class Commits(NamedTuple):
    """What one pass commits, per group: offsets that changed, and unchanged ones renewed."""

    changes: dict[str, dict[Key, int]]
    renewals: dict[str, dict[Key, int]]


def decide(names: list[str], groups: Mapping[str, GroupState],
           committed: Mapping[str, Held | GroupRejected], renew: frozenset[str],
           authorship: Authorship, stop: Callable[[str, str, str], None],
           judging: Judging) -> Commits:
    """Per group of `names`, what to commit against what Kafka holds (`committed`), renewing
    those in `renew`. A group to leave alone instead is told to `stop(group, why, reason)` (the
    reason one of metrics.STOP_REASONS). `judging.evidence(groups)`: what __consumer_offsets says
    of those groups, asked once for every group holding values zk2kafka did not write."""
    todo = Commits({}, {})
    suspects: dict[str, list[Key]] = {}
    for name in names:
        group, held = groups[name], committed[name]
        if isinstance(held, Exception):
            stop(name, f"Kafka refused to show its offsets: {held.reason}", "offsets_refused")
            continue
        wanted = group.wanted()
        changed = {k: o for k, o in wanted.items() if k not in held or held[k][0] != o}
        # A value zk2kafka did not write, where sync would write ZooKeeper's differing value or
        # where this run wrote before: someone else's, which writing would move. The group is
        # left alone, as taken over or differing (_taken_over_or_differs).
        asked = sorted(set(changed) | set(group.mirrored))
        foreign = authorship.foreign(name, held, asked, group.mirrored)
        others = authorship.other_runs(held, foreign)
        if foreign and len(others) == len(foreign):
            stop(name, other_run(foreign, held, wanted), "other_run")
        elif foreign:
            suspects[name] = foreign
        elif changed:
            todo.changes[name] = changed
        elif name in renew and wanted:
            # A renewal re-commits only what zk2kafka wrote: an equal value someone else
            # committed is theirs to keep alive, and is not overwritten with zk2kafka's
            # metadata.
            theirs = set(authorship.foreign(name, held, list(wanted), group.mirrored))
            if len(theirs) < len(wanted):
                todo.renewals[name] = {k: o for k, o in wanted.items() if k not in theirs}
    if suspects:
        _taken_over_or_differs(suspects, groups, committed, stop,
                               judging.evidence(sorted(suspects)), judging)
    return todo


def _taken_over_or_differs(suspects: dict[str, list[Key]], groups: Mapping[str, GroupState],
                           committed: Mapping[str, Held | GroupRejected],
                           stop: Callable[[str, str, str], None],
                           facts: Mapping[str, CommitEvidence], judging: Judging) -> None:
    """Stop each group holding values zk2kafka did not write: taken over where the rule finds a
    new consumer's commit of every one of them, else differs."""
    watched = (judging.watching_since, float("inf"))
    for name, foreign in suspects.items():
        group, held = groups[name], committed[name]
        known = facts.get(name) or CommitEvidence(None, {}, "not read")
        findings = {}
        for key in foreign:
            zk = group.offsets.get(key)
            findings[key] = takeover.judge(
                zk_written=zk.mtime if zk is not None else None,
                committed=known.committed.get(key), protocol_type=known.protocol_type,
                watched=watched, margin=judging.margin, clocks_unknown=known.unknown)
        wanted = group.wanted()
        if all(f.taken_over for f in findings.values()):
            stop(name, taken_over(foreign, held, wanted, findings), "taken_over")
        else:
            stop(name, differs(foreign, held, wanted, findings), "differs")
