"""When Kafka's offset of a partition supersedes ZooKeeper's: the one rule `ready-for-kraft`,
`sync`, `diff` and `migrate` judge a takeover by, and the words all of them say it in.

A value in Kafka that zk2kafka did not write is no evidence of a new consumer by itself: an admin
tool commits as readily as a consumer, a canary may commit once and leave while the old
consumers go on committing to ZooKeeper, a seed plants values. A partition is taken over only
when `__consumer_offsets` shows a consumer there (offsets_log/ reads it as the coordinator
does: an aborted or open transaction's commit is no commit, and the value is dated by the record
that wrote it):
- the record that wrote Kafka's value is newer than ZooKeeper's last write of the znode (its
  mtime) by more than the margin, widened by the measured lead of Kafka's clock over
  ZooKeeper's (clocks.py), and it was made
  - by a member: the group's records show members at that moment (and, where the assignment is
    told, one of them assigned the partition); a commit made while the group had no member came
    from outside, whatever the group's protocol type; or
  - by a consumer that assigns itself partitions (as Flink and Spark do), seen consuming: the
    partition committed at least twice during zk2kafka's watch, the offset moving forward. One
    commit, or commits that do not move, show no consumer; zk2kafka's own commits (its runs'
    metadata) never count.

Being assigned the partition by a live member of the Kafka group is no evidence by itself: a
member whose process is gone holds it until its session times out (minutes, up to half an hour),
a static member (KIP-345) sends no LeaveGroup. Its holder is named where the verdict differs.

Anything else is DIFFERS, said with both values, both times and who wrote Kafka's. Pure: the
callers read the stores.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from migrate.kafka.offsets_log.group import Commit, GroupLog, Membership, Watched
from migrate.kafka.offsets_log.kept import Kept

MARGIN = 60.0   # seconds: --clock-margin's default, far above NTP-kept servers' skew

# Who wrote the value Kafka holds, as far as the evidence tells.
ZK2KAFKA = "zk2kafka"
MEMBER = "member"          # a member of the group at the moment of the commit
WATCHED = "watched"        # a client of no group, seen consuming during the watch
UNASSIGNED = "unassigned"  # while the group had members, none of them assigned the partition
TRANSACTIONAL = "transactional"  # a transaction's commit while the group had members
OUTSIDE = "outside"        # while the group had no member
COMPACTED = "compacted"    # the group's records before it removed by the log cleaner
UNKNOWN = "unknown"        # the record of Kafka's value could not be read
CONSUMERS = (MEMBER, WATCHED)


class Seen(NamedTuple):
    """What `__consumer_offsets` shows of the value Kafka holds of a partition: the record that
    wrote it (None: not found), the commits of it during the watch (None: none, or no watch),
    and why it could not be read (None: it was)."""

    commit: Commit | None
    watched: Watched | None = None
    unknown: str | None = None


NO_RECORD = "no commit record of it was read"

# Times Kafka's values and __consumer_offsets are read again where they disagree: a consumer
# committing all along moves its value between the read of Kafka's values and the read of the
# log, and each try reads both within moments of each other.
AGREE_TRIES = 3


def disagree(group: GroupLog | None, held: Mapping[tuple[str, int], tuple],
             keys: Iterable[tuple[str, int]]) -> bool:
    """Whether the newest commit record read of any of `keys` holds another value than Kafka's
    (`held`: key -> (offset, ...)); then both are to be read again (AGREE_TRIES)."""
    if group is None:
        return False
    for key in keys:
        newest = group.newest_offset(key)
        if newest is not None and key in held and newest != held[key][0]:
            return True
    return False


def until_agreed(disagreeing: Callable[[], list[str]], ask_again: Callable[[list[str]], bool],
                 read_on: Callable[[], str | None]) -> str | None:
    """Kafka's values and the log read again until they agree, as the gate and `sync` both do:
    while `disagreeing()` names groups, up to AGREE_TRIES times, Kafka's values of those groups
    are asked again (`ask_again`: False when Kafka did not answer, and the values read stand)
    and then the log is read on (`read_on`), so that the record of a value Kafka answered is in
    the log by then. Why the log could not be read on, or None."""
    for _ in range(AGREE_TRIES):
        moved = disagreeing()
        if not moved or not ask_again(moved):
            return None
        why = read_on()
        if why is not None:
            return why
    return None


def seen(group: GroupLog | None, key: tuple[str, int], offset: int, why: str | None,
         own: frozenset[str] = frozenset(), kept: Kept | None = None) -> Seen:
    """What `group`'s records show of Kafka's value `offset` of `key`; `why`: why the records
    could not be read (then nothing is shown); `own`: the custom --metadata zk2kafka's runs
    committed with (their commits during the watch, like those naming a run, are no consumer's);
    `kept`: the member commits the state dir keeps, used where the log was cleaned since."""
    if why is not None:
        return Seen(None, None, why)
    commit = group.committed(key) if group is not None else None
    if commit is None:
        return Seen(None, None, NO_RECORD)
    if commit.offset != offset:
        return Seen(None, None, f"the newest commit record read holds {commit.offset}, not "
                                f"Kafka's {offset}")
    if kept is not None:
        commit = kept.use(group.name, key, commit)
    return Seen(commit, group.watched(key, own))


class Finding(NamedTuple):
    """The verdict on one partition where Kafka holds another value than ZooKeeper."""

    taken_over: bool
    writer: str            # ZK2KAFKA, MEMBER, WATCHED, UNASSIGNED, TRANSACTIONAL, OUTSIDE,
    #                        COMPACTED, UNKNOWN
    words: str             # what the evidence shows, in parentheses after the two values


def stamp(seconds: float | None) -> str:
    """A time as the verdicts show it: 2026-11-28T09:15:02Z."""
    if seconds is None:
        return "unknown"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


# The words, as templates: the diff (migrate/diff/judge.py) fills the same ones with Spark's
# columns, so that a row reads alike in every command (tests/unit/test_takeover.py holds them
# to it).
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


def committer(commit: Commit, watched: Watched | None, watching: bool) -> tuple[str, str]:
    """Who made `commit`, as the records show it: (writer, the words after "Kafka's commit
    <time>"). `watched`: the partition's commits during the watch; `watching`: whether there was
    a watch at all (the diff watches nothing)."""
    by = commit.by
    if by.transactional and by.members:
        # A transaction's commit does not show the generation it carried: the watch may show
        # its producer consuming, the record alone shows no member.
        if watched is not None and watching and watched.consuming:
            return _watched(watched)
        return TRANSACTIONAL, (f"in a transaction while the group had {by.members} member(s): "
                               f"the record does not show the member's generation, so not "
                               f"shown to be a member's")
    if watched is None or not watching or by.members:
        return _member_or_outside(by)     # the same words for many partitions: cached
    return _watched(watched)


@functools.lru_cache(maxsize=4096)
def _member_or_outside(by: Membership) -> tuple[str, str]:
    if by.compacted:
        return COMPACTED, HISTORY_COMPACTED
    kind = f"protocol type {by.protocol_type}" if by.protocol_type else "no protocol type"
    if by.members:
        at = (f"generation {by.generation}" if by.generation is not None else "a KIP-848 group")
        if by.covered is False:
            return UNASSIGNED, (f"while the group had {by.members} member(s) at {at}, none of "
                                f"them assigned it ({kind}): not a member's")
        kept = "; seen by zk2kafka before __consumer_offsets was cleaned" if by.kept else ""
        if by.member is not None:
            return MEMBER, f"by member {by.member.member_id} of {at}, assigned it ({kind}{kept})"
        return MEMBER, f"by a member of the group ({by.members} member(s) at {at}; {kind}{kept})"
    if by.generation is not None:
        return OUTSIDE, f"from outside: the group had no member then ({kind}, Empty)"
    return OUTSIDE, "from outside: no consumer had joined the group then"


HISTORY_COMPACTED = ("with the group's earlier records compacted away (__consumer_offsets is "
                     "cleaned): whether a consumer had joined then is not shown")


def _watched(watched: Watched) -> tuple[str, str]:
    """A client of no group's commits during the watch: consuming, or not shown to be."""
    if watched.consuming:
        return WATCHED, (f"by a client of no consumer group seen consuming: {watched.count} "
                         f"commits during the watch, {watched.first} to {watched.last}")
    if watched.count == 1:
        return OUTSIDE, "one commit during the watch: not shown to be a consumer"
    return OUTSIDE, (f"{watched.count} commits during the watch that did not move forward "
                     f"({watched.first} to {watched.last}): not shown to be a consumer")


def judge(*, zk_written: float | None, seen: Seen, margin: float = MARGIN,
          watching: bool = False, zk2kafka: str | None = None) -> Finding:
    """Whether a value Kafka holds, not equal to ZooKeeper's and not assigned to a live member,
    is a new consumer's.

    `zk_written`: the znode's mtime (seconds since the epoch; None when not known); `seen`: what
    `__consumer_offsets` shows of Kafka's value; `margin`: the clock margin in force (the
    configured one widened by the measured lead, clocks.Lead.widened); `watching`: whether
    zk2kafka watched the group (`seen.watched` then counts); `zk2kafka`: how zk2kafka wrote the
    value (its metadata), None when it did not.
    """
    if zk2kafka is not None:
        return Finding(False, ZK2KAFKA, BY_ZK2KAFKA.format(metadata=zk2kafka))
    if seen.commit is None:
        return Finding(False, UNKNOWN, NO_TIME.format(why=seen.unknown or NO_RECORD))
    writer, who = committer(seen.commit, seen.watched, watching)
    committed = seen.commit.commit_ms / 1000
    return verdict(zk_written, committed, writer, who, margin)


def verdict(zk_written: float | None, committed: float, writer: str, who: str,
            margin: float) -> Finding:
    """The rule's verdict once the committer is known (judge's last step; the diff's rows
    are judged the same way over the plan's columns)."""
    words = {"kafka": KAFKA.format(committed=stamp(committed), who=who), "who": who,
             "committed": stamp(committed), "zk": stamp(zk_written), "margin": f"{margin:g}"}
    if zk_written is None:
        return Finding(False, writer, NO_ZK_TIME.format(**words))
    if committed < zk_written - margin:
        return Finding(False, writer, BEFORE.format(**words))
    if committed <= zk_written + margin:
        return Finding(False, writer, WITHIN.format(**words))
    if writer not in CONSUMERS:
        return Finding(False, writer, NO_CONSUMER.format(**words))
    return Finding(True, writer, TAKEN.format(**words))


HOLDS = "assigned to live member {member}{since}, not shown consuming it"
COMMITTED_NOTHING = "it has committed nothing of it"


def holding(member: str, group: GroupLog | None, finding: Finding | None) -> str:
    """The words for a partition a live member holds (its assignment) without showing that it
    consumes it: no commit of it (`finding` None), or its value not shown to be a new consumer's
    (`finding`'s words say why). A member whose process is gone holds its partitions until its
    session times out, and a static member (group.instance.id) sends no LeaveGroup: holding is
    no evidence by itself."""
    stable = group.stable_since if group is not None else None
    since = f" (the group's generation since {stamp(stable / 1000)})" if stable is not None else ""
    held = HOLDS.format(member=member or "(no id)", since=since)
    return f"{held}: {finding.words if finding is not None else COMMITTED_NOTHING}"
