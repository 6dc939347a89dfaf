"""When Kafka's offset of a partition supersedes ZooKeeper's: the one rule `ready-for-kraft`,
`sync`, `diff` and `migrate` judge a takeover by, and the words all of them say it in.

A value in Kafka that zk2kafka did not write is no evidence of a new consumer by itself: an admin
tool commits as readily as a consumer, a canary may commit once and leave while the old
consumers go on committing to ZooKeeper, a seed plants values. A partition is taken over only
when there is evidence that a new consumer owns it now:
- it is assigned to a live member of the Kafka group (classic or KIP-848); or
- Kafka's commit of it (the commit timestamp `__consumer_offsets` keeps) is newer than
  ZooKeeper's last write of its znode (the znode's mtime) by more than a stated margin, and
  either the group is a consumer group (it has a protocol type: consumers joined it, by either
  rebalance protocol) or the commit was made while zk2kafka watched (consumers that assign
  partitions themselves, as Flink and Spark do, join no group and commit as they go).

The two times come from two servers' clocks: a pair closer than the margin shows nothing.
Anything else is DIFFERS, said with both values, both times and who wrote Kafka's: a zk2kafka
run, a consumer group's member, a client during the watch, or a client that never joined the
group. Pure: the callers read the stores.
"""

from __future__ import annotations

import re
import time
from typing import NamedTuple

MARGIN = 60.0   # seconds: --clock-margin's default, far above NTP-kept servers' skew

# zk2kafka's default commit metadata, which names the run that wrote the value.
NAMES_A_RUN = re.compile(r"zk2kafka (migrate|sync) (\S+)")

# Who wrote the value Kafka holds, as far as the evidence tells.
ZK2KAFKA = "zk2kafka"
MEMBER = "member"          # the group has a protocol type: a member of a consumer group
WATCHED = "watched"        # committed while zk2kafka watched, by a client of no consumer group
OUTSIDE = "outside"        # by a client that never joined the group (no protocol type)
UNKNOWN = "unknown"        # the commit's time could not be read


class CommitEvidence(NamedTuple):
    """What __consumer_offsets says of a Kafka group, for the rule: its protocol type, when each
    of its offsets was committed (seconds), or why that could not be read."""

    protocol_type: str | None
    committed: dict[tuple[str, int], float]
    unknown: str | None = None


def evidence_of(clocks: dict, why: str | None, groups) -> dict[str, CommitEvidence]:
    """Each of `groups`' CommitEvidence from group_clock.read_clocks' answer (`clocks`, `why`)."""
    out = {}
    for group in groups:
        clock = clocks.get(group)
        out[group] = (CommitEvidence(None, {}, why or "no record of the group was read")
                      if clock is None else CommitEvidence(
                          clock.protocol_type,
                          {key: c.commit_ms / 1000 for key, c in clock.partitions.items()}))
    return out


class Finding(NamedTuple):
    """The verdict on one partition where Kafka holds another value than ZooKeeper."""

    taken_over: bool
    writer: str            # ZK2KAFKA, MEMBER, WATCHED, OUTSIDE or UNKNOWN
    words: str             # what the evidence shows, in parentheses after the two values


def named_run(metadata: str | None) -> str | None:
    """The run a commit's metadata names in zk2kafka's default form ("zk2kafka migrate <run>"),
    or None."""
    named = NAMES_A_RUN.fullmatch(metadata or "")
    return named.group(2) if named else None


def stamp(seconds: float | None) -> str:
    """A time as the verdicts show it: 2026-11-28T09:15:02Z."""
    if seconds is None:
        return "unknown"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


# The words, as templates: the diff (migrate/diff/judge.py) fills the same ones with Spark's
# columns, so that a row reads alike in every command (tests/unit/test_takeover.py holds them
# to it).
WHO = {MEMBER: "by a consumer group's member (protocol type {protocol_type})",
       WATCHED: "during the watch by a client in no consumer group",
       OUTSIDE: "from outside (no protocol type: no consumer joined the group)"}
KAFKA = "Kafka's commit {committed} {who}"
NO_ZK_TIME = "{kafka}; when ZooKeeper's znode was last written is unknown"
BEFORE = ("{kafka}, before ZooKeeper's last write {zk}: the old consumers committed after it "
          "(clock margin {margin}s)")
WITHIN = ("{kafka}, within the clock margin {margin}s of ZooKeeper's last write {zk}: which came "
          "last is not shown")
NO_CONSUMER = "{kafka}, after ZooKeeper's last write {zk}: no consumer is shown"
TAKEN = ("committed by a new consumer {committed}, {who}, after ZooKeeper's last write {zk} "
         "(clock margin {margin}s)")
BY_ZK2KAFKA = "written by zk2kafka: {metadata}"
NO_TIME = "committed at an unknown time ({why}): not shown to be a new consumer's"
NO_RECORD = "no commit record of it was read"


def judge(*, zk_written: float | None, committed: float | None, protocol_type: str | None,
          watched: tuple[float, float] | None, margin: float = MARGIN,
          zk2kafka: str | None = None, clocks_unknown: str | None = None) -> Finding:
    """Whether a value Kafka holds, not equal to ZooKeeper's and not assigned to a live member,
    is a new consumer's.

    `zk_written`: the znode's mtime, `committed`: Kafka's commit timestamp of it (both seconds
    since the epoch; None when not known); `protocol_type`: the Kafka group's ("" for a group
    only ever committed to from outside); `watched`: the window (from, to) during which zk2kafka
    watched the group (a commit after its start counts as seen during it), or None; `zk2kafka`:
    how zk2kafka wrote the value (its metadata), None when it did not; `clocks_unknown`: why the
    commit times could not be read.
    """
    if zk2kafka is not None:
        return Finding(False, ZK2KAFKA, BY_ZK2KAFKA.format(metadata=zk2kafka))
    if committed is None:
        return Finding(False, UNKNOWN, NO_TIME.format(why=clocks_unknown or NO_RECORD))
    # The watch's start is zk2kafka's clock, the commit the broker's: the margin between them too.
    during = watched is not None and committed >= watched[0] + margin
    writer = MEMBER if protocol_type else WATCHED if during else OUTSIDE
    who = WHO[writer].format(protocol_type=protocol_type)
    words = {"kafka": KAFKA.format(committed=stamp(committed), who=who), "who": who,
             "committed": stamp(committed), "zk": stamp(zk_written), "margin": f"{margin:g}"}
    if zk_written is None:
        return Finding(False, writer, NO_ZK_TIME.format(**words))
    if committed < zk_written - margin:
        return Finding(False, writer, BEFORE.format(**words))
    if committed <= zk_written + margin:
        return Finding(False, writer, WITHIN.format(**words))
    if writer == OUTSIDE:
        return Finding(False, writer, NO_CONSUMER.format(**words))
    return Finding(True, writer, TAKEN.format(**words))


ASSIGNED = Finding(True, MEMBER, "assigned to a live member")
