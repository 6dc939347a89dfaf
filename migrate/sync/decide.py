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

import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from migrate.journal.authorship import Authorship, Held, differs, other_run, taken_over
from migrate.kafka import takeover
from migrate.kafka.clocks import UNMEASURED, Lead, Margin
from migrate.kafka.offsets_log.followed import BUSY, FollowedLog
from migrate.kafka.offsets_log.group import GroupLog
from migrate.kafka.offsets_log.kept import Kept
from migrate.kafka.values import Key
from migrate.kafka.writer import GroupRejected
from migrate.sync.state import GroupState

# (Kafka groups) -> ({Kafka group: its records}, why they could not be read or None)
Evidence = Callable[[list[str]], tuple[Mapping[str, GroupLog], str | None]]
# (groups) -> what Kafka holds of each now, or why it refused: the pass's OffsetFetch, asked again
AskAgain = Callable[[list[str]], Mapping[str, Held | GroupRejected]]


def no_evidence(groups: list[str]) -> tuple[Mapping[str, GroupLog], str | None]:
    """Nothing read: every value zk2kafka did not write differs."""
    return {}, "not read"


class Judging(NamedTuple):
    """What one pass judges a takeover with: the evidence, asked by ZooKeeper group; the clock
    margin in force (--clock-margin and the lead measured by then), a hook told each
    pass's latest znode mtime (ZooKeeper's clock, seconds) with the moment its reads were done,
    and Kafka's values asked again by ZooKeeper group (None: not asked again)."""

    evidence: Callable[[list[str]], tuple[Mapping[str, GroupLog], str | None]]
    margin: Callable[[], Margin]
    zookeeper_read: Callable[[float, float], None]
    read_done: float
    committed: AskAgain | None = None
    kept: Kept | None = None


class Takeover(NamedTuple):
    """What the rule reads for sync: `evidence(kafka groups)`, --clock-margin, the
    measured lead of Kafka's clock over ZooKeeper's, where ZooKeeper's reads are told, the
    reader of __consumer_offsets behind them (shared with the retention clock), the members'
    commits kept in the state dir, and the clock probe."""

    evidence: Evidence = no_evidence
    clock_margin: float = takeover.MARGIN
    lead: Callable[[], Lead] = lambda: UNMEASURED
    zookeeper_read: Callable[[float, float], None] = lambda mtime, at: None
    followed: FollowedLog | None = None
    kept: Kept | None = None
    # ZooKeeper's clock measured again, at the start of each re-scan (sync --execute's clock
    # probe, migrate/zk/clock.py: a leader elected during a days-long sync is measured too)
    probe: Callable[[], None] = lambda: None

    def watching(self, kafka_name: Callable[[str], str],
                 committed: AskAgain | None = None) -> Judging:
        """The pass's Judging (called once its ZooKeeper reads are done): the evidence asked by
        ZooKeeper name through `kafka_name`; `committed`: Kafka's values, by ZooKeeper name."""
        def asked(names: list[str]) -> tuple[Mapping[str, GroupLog], str | None]:
            kafka = {name: kafka_name(name) for name in names}
            found, why = self.evidence(sorted(set(kafka.values())))
            return {name: found[k] for name, k in kafka.items() if k in found}, why
        return Judging(asked, lambda: Margin(self.clock_margin, self.lead()), self.zookeeper_read,
                       time.time(), committed, self.kept)


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
    # ZooKeeper's clock from every change the pass read (each written before the reads were done)
    latest = max((zk.mtime for name in names for zk in groups[name].offsets.values()
                  if zk.mtime is not None), default=None)
    if latest is not None:
        judging.zookeeper_read(latest, judging.read_done)
    if suspects:
        _taken_over_or_differs(suspects, groups, committed, stop, judging,
                               authorship.custom_metadata())
    return todo


def taken_over_since(names: list[str], groups: Mapping[str, GroupState],
                     committed: Mapping[str, Held | GroupRejected], authorship: Authorship,
                     judging: Judging) -> dict[str, str]:
    """Of `names`, groups sync left alone as differing, those a consumer is now shown to hold (a
    member's commit, commits seen during sync's watch), each with why: judged as `decide` judges,
    on what they hold now; nothing of it is committed."""
    verdicts: dict[str, tuple[str, str]] = {}
    decide(names, groups, committed, frozenset(), authorship,
           lambda name, why, reason: verdicts.__setitem__(name, (why, reason)), judging)
    return {name: why for name, (why, reason) in verdicts.items() if reason == "taken_over"}


def _taken_over_or_differs(suspects: dict[str, list[Key]], groups: Mapping[str, GroupState],
                           committed: Mapping[str, Held | GroupRejected],
                           stop: Callable[[str, str, str], None], judging: Judging,
                           own: frozenset[str]) -> None:
    """Stop each group holding values zk2kafka did not write: taken over where the rule finds a
    new consumer's commit of every one of them, else differs. A group whose records are still
    being read is left as it is, to be judged again (it is not written meanwhile). `own`: the
    custom --metadata zk2kafka's runs commit with (their commits are no consumer's)."""
    logs, why, committed = _agreed(suspects, committed, judging)
    if why == BUSY:
        return
    margin = judging.margin().seconds
    for name, foreign in suspects.items():
        group, held = groups[name], committed[name]
        findings = {}
        for key in foreign:
            zk = group.offsets.get(key)
            findings[key] = takeover.judge(
                zk_written=zk.mtime if zk is not None else None,
                seen=takeover.seen(logs.get(name), key, held[key][0], why, own, judging.kept),
                margin=margin, watching=True)
        wanted = group.wanted()
        if all(f.taken_over for f in findings.values()):
            stop(name, taken_over(foreign, held, wanted, findings), "taken_over")
        else:
            stop(name, differs(foreign, held, wanted, findings), "differs")
    if judging.kept is not None:
        judging.kept.save()


def _agreed(suspects: dict[str, list[Key]], committed: Mapping[str, Held | GroupRejected],
            judging: Judging) -> tuple[Mapping[str, GroupLog], str | None,
                                       Mapping[str, Held | GroupRejected]]:
    """The suspects' records, and Kafka's values to judge, read again where they disagree (the
    newest commit record read holds another value than Kafka answered) until they agree
    (takeover.until_agreed): a value a consumer moved between the two reads is judged as it
    stands now, by the record that wrote it. Kafka's values are asked first, then the log is
    read on: the record of a value Kafka answered is in the log by then."""
    logs, why = judging.evidence(sorted(suspects))
    committed = dict(committed)
    if why is not None or judging.committed is None:
        return logs, why, committed

    def disagreeing() -> list[str]:
        return [name for name in suspects if not isinstance(committed[name], Exception)
                and takeover.disagree(logs.get(name), committed[name], suspects[name])]

    def ask_again(moved: list[str]) -> bool:
        again = judging.committed(moved)
        for name in moved:
            if not isinstance(again.get(name), Exception) and name in again:
                committed[name] = {**committed[name], **again[name]}
        return True

    def read_on() -> str | None:
        nonlocal logs
        read, why = judging.evidence(sorted(suspects))
        logs = {**logs, **read}
        return why

    why = takeover.until_agreed(disagreeing, ask_again, read_on)
    return logs, why, committed

