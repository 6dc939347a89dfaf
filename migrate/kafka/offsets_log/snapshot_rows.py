"""What the Kafka snapshot takes from `__consumer_offsets`, in one read by the one reader
(reader.py): when each Empty consumer group became Empty, when the offsets of the groups
with no member that expire by commit time were committed, and, for the groups holding a value
that names no zk2kafka run, who committed each value and when (the snapshot's `commit` rows,
which the diff judges a takeover by: migrate/diff/judge.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kafka.admin import KafkaAdminClient

from migrate.connection import Connection
from migrate.kafka import takeover
from migrate.kafka.clocks import UNMEASURED, Lead
from migrate.kafka.compat import BrokerFeatures
from migrate.kafka.members import IDLE_STATES
from migrate.kafka.offsets_log.group import GroupLog
from migrate.kafka.offsets_log.kept import Kept
from migrate.kafka.offsets_log.reader import OffsetsLog, Unreadable

log = logging.getLogger(__name__)

READ_BUDGET = 300.0    # seconds reading __consumer_offsets may take (docs/performance.md)
COMMIT = "commit"      # the snapshot's kind of row


@dataclass
class LogRead:
    """What the snapshot keeps of the read."""

    empty_since: dict[str, int] = field(default_factory=dict)
    empty_since_unknown: str | None = None
    commit_clocks: dict[str, list[tuple[int, int | None]]] = field(default_factory=dict)
    commit_clocks_unknown: str | None = None
    asked: dict[str, GroupLog] = field(default_factory=dict)   # the groups of the commit rows
    lead: Lead = UNMEASURED


def read_log(admin: KafkaAdminClient, features: BrokerFeatures, listed: Mapping[str, dict],
             unexplained: set[str], commit_clocks: bool, evidence: bool = True,
             registered: Sequence = (), connection: Connection | None = None) -> LogRead:
    """One read of `__consumer_offsets` for `listed` groups (ListGroups' answers): the Empty
    consumer groups' clocks (2.1+), the commit clocks of the idle groups that expire by commit
    time (when `commit_clocks`), and the commits of the `unexplained` groups (when `evidence`).
    The lead of Kafka's clock over ZooKeeper's is measured by the records read and the brokers'
    `registered` registrations. `connection`: a large read split over processes (offsets_log)."""
    by_commit = features.at_least(2, 1) is False     # before 2.1 every offset expires by commit
    empty = sorted(g for g, info in listed.items()
                   if not by_commit and info.get("group_state") == "Empty"
                   and info.get("protocol_type"))
    idle = sorted(g for g, info in listed.items() if info.get("group_state") in IDLE_STATES
                  and g not in empty) if commit_clocks else []
    asked = set(unexplained if evidence else ()) & set(listed)
    reader = OffsetsLog(admin, features, connection=connection)
    for r in registered:
        reader.clocks.broker_registered(r.broker, r.timestamp_ms, r.ctime_ms)
    # The diff writes nothing, not even the gate's clock probe (migrate/zk/clock.py).
    reader.clocks.zk_unmeasured = "the diff makes no clock probe (it writes nothing)"
    if not (empty or idle or asked):
        return LogRead(lead=reader.clocks.lead())
    try:
        reader.follow(set(empty) | set(idle) | asked)
        why = reader.read(READ_BUDGET)
    except Unreadable as exc:
        why = str(exc)
    found = LogRead(lead=reader.clocks.lead())
    if why is not None:
        log.warning("could not read __consumer_offsets: %s", why)
        found.empty_since_unknown = why if empty else None
        found.commit_clocks_unknown = why if idle or asked else None
        return found
    groups = reader.groups
    found.empty_since = {g: groups[g].empty_since for g in empty
                         if groups[g].empty_since is not None}
    missing = len(empty) - len(found.empty_since)
    if missing:
        found.empty_since_unknown = (f"{missing} group(s) have no state timestamp in "
                                     f"__consumer_offsets (a record older than Kafka 2.1, or none)")
    found.commit_clocks = {g: sorted(set(groups[g].commits)) for g in idle if groups[g].commits}
    found.asked = {name: groups[name] for name in sorted(asked)}
    return found


# The columns of a `commit` row, in the order commit_rows gives them
COMMIT_COLUMNS = ("group", "topic", "partition", "committed_offset", "commit_ms", "commit_by",
                  "commit_who")


def commit_rows(read: LogRead, kept: Kept | None = None) -> Iterator[tuple]:
    """The snapshot's `commit` rows of the groups asked about (COMMIT_COLUMNS), one at a time (a
    million of them are never all rows at once): each value's record, its time and who made it
    (`kept`: the member commits the state dir keeps, used where the log was cleaned since)."""
    for name, group in read.asked.items():
        for key in sorted(group.keys):
            commit = group.committed(key)
            if commit is None:
                continue
            if kept is not None:
                commit = kept.use(name, key, commit)
            by, who = takeover.committer(commit, None, watching=False)
            yield name, key[0], key[1], commit.offset, commit.commit_ms, by, who
