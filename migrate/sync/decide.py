"""What one pass of sync commits, per group, against what Kafka holds now: ZooKeeper's offsets where
Kafka's differ, and (on a renewal) the unchanged ones zk2kafka wrote; or why the group is to be
stopped instead (its offsets refused, a new consumer took it over, another zk2kafka run wrote it).

Never backwards by surprise: a value zk2kafka did not write (`Authorship`) is never written over.
This module only decides; the Follower commits, and stops the groups it is told to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from migrate.journal.authorship import Authorship, Held, other_run, taken_over
from migrate.kafka.writer import GroupRejected, Key
from migrate.sync.state import GroupState


class Commits(NamedTuple):
    """What one pass commits, per group: offsets that changed, and unchanged ones renewed."""

    changes: dict[str, dict[Key, int]]
    renewals: dict[str, dict[Key, int]]


def decide(names: list[str], groups: Mapping[str, GroupState],
           committed: Mapping[str, Held | GroupRejected], renew: frozenset[str],
           authorship: Authorship, stop: Callable[[str, str, str], None]) -> Commits:
    """Per group of `names`, what to commit against what Kafka holds (`committed`), renewing
    those in `renew`. A group to leave alone instead is told to `stop(group, why, reason)` (the
    reason one of metrics.STOP_REASONS) as it is found."""
    todo = Commits({}, {})
    for name in names:
        group, held = groups[name], committed[name]
        if isinstance(held, Exception):
            stop(name, f"Kafka refused to show its offsets: {held.reason}", "offsets_refused")
            continue
        wanted = group.wanted()
        changed = {k: o for k, o in wanted.items() if k not in held or held[k][0] != o}
        # A value zk2kafka did not write, where sync would write ZooKeeper's differing value or
        # where this run wrote before: a new consumer took over, and writing would move it.
        # The group is left alone.
        asked = sorted(set(changed) | set(group.mirrored))
        foreign = authorship.foreign(name, held, asked, group.mirrored)
        others = authorship.other_runs(held, foreign)
        if foreign and len(others) == len(foreign):
            stop(name, other_run(foreign, held, wanted), "other_run")
        elif foreign:
            stop(name, taken_over(foreign, held, wanted), "taken_over")
        elif changed:
            todo.changes[name] = changed
        elif name in renew and wanted:
            # A renewal re-commits only what zk2kafka wrote: an equal value someone else
            # committed is theirs to keep alive, and is not overwritten with zk2kafka's
            # metadata.
            theirs = set(authorship.foreign(name, held, list(wanted), group.mirrored))
            if len(theirs) < len(wanted):
                todo.renewals[name] = {k: o for k, o in wanted.items() if k not in theirs}
    return todo
