"""The retention preflight: when Kafka will delete the offsets a migration leaves there, by the
broker's release and its offsets.retention.minutes, and the warnings a diff and a run repeat.

A pure policy over the plan's per-group figures and what the Kafka snapshot read of the broker;
the summary (summary.py) carries its answer as `retention`.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

from migrate.durations import duration_text, left_text, minutes_text
from migrate.kafka.compat import RETENTION_DEFAULT_BEFORE_2_0, RETENTION_DEFAULT_SINCE_2_0
from migrate.kafka.snapshot import IDLE_STATES
from migrate.options import OPTIONS_BY_NAME
from migrate.state import iso
from migrate.zk.reader import Selection

# Kafka's default before 2.0 (KIP-186) and after: used when neither the broker nor its release says.
RETENTION_FALLBACK = "1 day before Kafka 2.0, 7 days since"
EMPTY_TIME_UNKNOWN = ("the broker did not say when the group became Empty (no admin API carries "
                      "it; it is read from the group's record in __consumer_offsets)")


# The clock Kafka deletes a group's offsets by.
EMPTY_CLOCK = "became Empty"   # all at once, retention after the group became Empty (2.1+)
COMMIT_CLOCK = "commit"        # each offset retention after its own commit
COMMIT_TIME_UNREAD = ("by its last commit, which only `zk2kafka diff` and `ready-for-kraft` "
                      "read")
# How many expiring groups a terminal line names before it counts the rest.
SHOWN = 5
RENEW_FLOOR = OPTIONS_BY_NAME["renew_every"].floor   # what --renew-every takes at the least


class Expiry(NamedTuple):
    """When Kafka deletes a group's offsets: by which clock, the first and the last moment (ms
    since the epoch), or why that cannot be told."""

    clock: str
    first_ms: int | None
    last_ms: int | None
    unknown: str | None


def renewal_period(window_minutes: int | None) -> float:
    """Seconds between renewals: a quarter of the retention window (a day's: every 6h), and never
    below --renew-every's floor, a minute (a window of minutes is counted in minutes)."""
    return max((window_minutes or RETENTION_DEFAULT_BEFORE_2_0) * 60 / 4, RENEW_FLOOR)


def offsets_expire(version: tuple[int, ...] | None, window_minutes: int | None,
                   protocol_type: str | None, group_state: str | None,
                   empty_since_ms: int | None,
                   commits: Iterable[tuple[int, int | None]] = ()) -> Expiry:
    """When Kafka deletes the offsets of a group with no members, by its release's rules.

    From 2.1 (KIP-211, or an unknown release, taken at its riskiest) an Empty group with a
    protocol type loses all its offsets `window_minutes` after it became Empty (`empty_since_ms`),
    whatever is committed since. Otherwise (no protocol type, or a release before 2.1) each offset
    goes `window_minutes` after its own commit, or at the expiry a v1 commit record set (before
    2.1 the broker writes one with every commit): `commits` as (commit ms, expire ms or None).
    """
    window_ms = None if window_minutes is None else window_minutes * 60_000
    if protocol_type and group_state == "Empty" and not (version and version < (2, 1)):
        if empty_since_ms is None:
            return Expiry(EMPTY_CLOCK, None, None, EMPTY_TIME_UNKNOWN)
        if window_ms is None:
            return Expiry(EMPTY_CLOCK, None, None, "offsets.retention.minutes is unknown")
        return Expiry(EMPTY_CLOCK, empty_since_ms + window_ms, empty_since_ms + window_ms, None)
    deadlines = [expire if expire is not None else None if window_ms is None else commit + window_ms
                 for commit, expire in commits]
    if not deadlines:
        return Expiry(COMMIT_CLOCK, None, None,
                      "no commit of its offsets was found in __consumer_offsets")
    if None in deadlines:
        return Expiry(COMMIT_CLOCK, None, None, "offsets.retention.minutes is unknown")
    return Expiry(COMMIT_CLOCK, min(deadlines), max(deadlines), None)


class _TimeLeft(NamedTuple):
    """Seconds until an Empty group's offsets expire, or why that cannot be told."""

    seconds: int | None
    unknown: str | None


def retention_preflight(per_group: list[dict], minutes: int | None,
                        broker_version: str | None = None, why_unknown: str | None = None,
                        default_minutes: int | None = None,
                        empty_since: dict[str, int] | None = None,
                        empty_since_unknown: str | None = None,
                        now: float | None = None, selection: str | None = "",
                        commit_clocks: dict[str, list[tuple[int, int | None]]] | None = None,
                        commit_clocks_unknown: str | None = None,
                        renewal: str = "sync") -> dict[str, Any]:
    """When Kafka will delete the offsets the migration leaves there, per the broker's release and
    retention.

    - Before Kafka 2.1 every committed offset expires offsets.retention.minutes after its own commit
      (1 day by default before 2.0, KIP-186), unless a consumer commits it again.
    - From 2.1 (KIP-211) a group without a protocol type (a migration commit creates one) still
      expires by commit time, and a re-commit (`sync --renew-every`) renews it. But a group that has
      a protocol type (a real consumer group) and is Empty loses *all* its offsets retention
      minutes after it became Empty: a commit does not move that clock, nothing but a consumer
      joining does. Those groups are named, with the time left where the broker says it
      (`empty_since`: when each became Empty, from __consumer_offsets) and why not elsewhere.
    Groups already in Kafka with no member and nothing to commit go by the commits that put
    their offsets there: `commit_clocks` (group -> its (commit ms, expire ms or None) pairs, from
    __consumer_offsets), and why some could not be told; None when not read.
    `selection`: the diff's selection as flags (and its --map-group, which sync repeats to renew
    the renamed groups under their new names), for the sync command the warnings advise; None
    where no sync is to be advised (reset-offsets.csv committed again instead).
    `renewal`: the command that renews: `sync` while ZooKeeper answers (it follows ZooKeeper),
    `renew` on the road without it (a --zk-snapshot side), which renews from Kafka and the
    journal alone what zk2kafka wrote; the selection then names no mapping (the journal has it).
    Returns the figures for summary.json, with the warnings to print.
    """
    version = _release(broker_version)
    if minutes is not None:
        window_minutes, source = minutes, "broker"
    else:
        window_minutes, source = default_minutes, "release default"
    if window_minutes is None:
        source = None
    if window_minutes is not None:
        window = f"{minutes_text(window_minutes)} (offsets.retention.minutes={window_minutes})"
        if minutes is None:
            window = (f"{window} if unchanged (Kafka {broker_version}'s default; "
                      f"the broker cannot tell its own)")
    else:
        window = f"offsets.retention.minutes (unknown: {RETENTION_FALLBACK})"
    renew = duration_text(renewal_period(window_minutes))
    renewing = ((f"`zk2kafka renew --execute --renew-every {renew}{selection}`"
                 if renewal == "renew" else
                 f"`zk2kafka sync --execute --renew-every {renew}{selection}`")
                if selection is not None else
                f"reset-offsets.csv committed again under the Kafka names within every {renew}")
    # Before KIP-211 every offset expires by its commit.
    by_commit_time = version is not None and version < (2, 1)
    # An unknown release is taken at its riskiest: the Empty clock applies.
    empty_clock = not by_commit_time

    def consumer_group_empty(g: dict) -> bool:
        return g["group_state"] == "Empty" and bool(g["protocol_type"])

    created = [g["group"] for g in per_group
               if g["planned"] and (g["group_state"] is None or (g["group_state"] in IDLE_STATES
                                                                   and not g["protocol_type"])
                                    or (by_commit_time and consumer_group_empty(g)))]
    empty = [g for g in per_group if empty_clock and consumer_group_empty(g)]
    # In Kafka with no member and nothing to commit: they expire by the commit that put them
    # there, a time only __consumer_offsets holds (`commit_clocks`).
    named = set(created) | {g["group"] for g in empty}
    committed_before = [g["group"] for g in per_group
                        if g["group_state"] in IDLE_STATES and g["group"] not in named]
    empty_since, now = empty_since or {}, time.time() if now is None else now

    def time_left(group: str) -> _TimeLeft:
        if group not in empty_since:
            return _TimeLeft(None, empty_since_unknown or EMPTY_TIME_UNKNOWN)
        if window_minutes is None:
            return _TimeLeft(None, "offsets.retention.minutes is unknown")
        return _TimeLeft(round(empty_since[group] / 1000 + window_minutes * 60 - now), None)

    def expires_at(group: str) -> str | None:
        if group not in empty_since or window_minutes is None:
            return None
        return iso(empty_since[group] / 1000 + window_minutes * 60)
    warnings = []
    if created:
        warnings.append(
            f"{len(created)} group(s) would hold offsets in Kafka with no consumer yet "
            f"({_names(created)}); Kafka deletes them {window} after the commit "
            "unless a consumer joins first: start the new consumers within that window, "
            f"or keep the offsets alive with {renewing}")
    if empty:
        lefts = [time_left(g["group"]) for g in empty]
        told = [f"{_name(g['group'])} {left_text(left.seconds)}"
                for g, left in zip(empty, lefts) if left.seconds is not None]
        untold = [left.unknown for left in lefts if left.seconds is None]
        parts = []
        if told:
            parts.append(f"time left: {', '.join(told[:5])}{' ...' if len(told) > 5 else ''}")
        if untold:
            parts.append(f"time left unknown for {len(untold)}: {untold[0]}")
        left = "; ".join(parts)
        warnings.append(
            f"{len(empty)} Empty consumer group(s) with a protocol type "
            f"({_names([g['group'] for g in empty])}): "
            f"Kafka{' (2.1+, KIP-211)' if version else ''} deletes all their offsets {window} "
            "after the group became Empty, whatever is committed since, and "
            f"`{renewal} --renew-every` cannot renew them: only a consumer joining "
            f"the group stops that clock. {left[0].upper()}{left[1:]}")
    if by_commit_time:
        if version < (2, 0):
            default = RETENTION_DEFAULT_BEFORE_2_0
        else:
            default = RETENTION_DEFAULT_SINCE_2_0
        if minutes is None:
            told = (f"This broker cannot tell its own setting ({why_unknown}): "
                    "check offsets.retention.minutes in the brokers' server.properties.")
        else:
            told = f"This broker's setting: {minutes}."
        warnings.append(f"Kafka {broker_version} keeps offsets "
                        f"{minutes_text(default)} by default "
                        f"(offsets.retention.minutes={default}) and, before Kafka 2.1, "
                        "deletes every offset that long after its own commit, "
                        "a consumer group's too, unless it is committed again: "
                        f"start the new consumers (or {renewing}) "
                        f"well inside that window. {told}")
    if version is None:
        expiry = ("unknown release: from Kafka 2.1 Empty consumer groups expire by the time they "
                  "became Empty")
    elif by_commit_time:
        expiry = "by commit time, for every offset (before Kafka 2.1)"
    else:
        expiry = ("by commit time for groups without a protocol type; by the time it became Empty "
                  "for consumer groups (Kafka 2.1+, KIP-211)")
    return {
        "minutes": minutes, "effective_minutes": window_minutes, "source": source,
        "unknown_reason": why_unknown if minutes is None else None,
        "release_default_minutes": default_minutes, "broker_version": broker_version,
        "expiry": expiry,
        "groups_created": len(created),
        "empty_consumer_groups": [
            {"group": g["group"], "protocol_type": g["protocol_type"], "offsets": g["offsets"],
             "planned": g["planned"], "expires_within_minutes": window_minutes,
             "empty_since": _iso(empty_since.get(g["group"])),
             "time_left_seconds": time_left(g["group"]).seconds,
             "time_left_unknown": time_left(g["group"]).unknown,
             "expires_at": expires_at(g["group"])} for g in empty],
        # Every group whose offsets Kafka will delete with no consumer in it, and when: the
        # Empty consumer groups by the time they became Empty, the groups the migration would
        # leave without a consumer `window` after its commit, the others by their last commit.
        "expiring": _expiring(empty, created, window_minutes, expires_at, time_left)
        + [_by_last_commit(g, version, window_minutes, commit_clocks, commit_clocks_unknown, now)
           for g in per_group if g["group"] in committed_before],
        "warning": warnings[0] if warnings else None,   # the first, as summary.json always had
        "warnings": warnings,
    }


def _expiring(empty: list[dict], created: list[str], window_minutes: int | None, expires_at,
              time_left) -> list[dict[str, Any]]:
    by_empty = [{"group": g["group"], "clock": EMPTY_CLOCK, "expires_at": expires_at(g["group"]),
                 "time_left_seconds": time_left(g["group"]).seconds,
                 "after_commit_minutes": None, "unknown": time_left(g["group"]).unknown}
                for g in empty]
    by_commit = [{"group": group, "clock": COMMIT_CLOCK, "expires_at": None,
                  "time_left_seconds": None, "after_commit_minutes": window_minutes,
                  "unknown": None if window_minutes is not None
                  else "offsets.retention.minutes is unknown"}
                 for group in created]
    return by_empty + by_commit


def _by_last_commit(g: dict, version: tuple[int, ...] | None, window_minutes: int | None,
                    clocks: dict[str, list[tuple[int, int | None]]] | None,
                    unknown: str | None, now: float) -> dict[str, Any]:
    """A group in Kafka with no member and nothing to commit: when the commits that put its
    offsets there expire (the first of them), as __consumer_offsets tells, or why not."""
    entry = {"group": g["group"], "clock": COMMIT_CLOCK, "expires_at": None,
             "time_left_seconds": None, "after_commit_minutes": None}
    if clocks is None or g["group"] not in clocks:
        return {**entry, "unknown": COMMIT_TIME_UNREAD if clocks is None
                else unknown or "no commit of its offsets was found in __consumer_offsets"}
    expiry = offsets_expire(version, window_minutes, g["protocol_type"], g["group_state"], None,
                            clocks[g["group"]])
    if expiry.first_ms is None:
        return {**entry, "unknown": expiry.unknown}
    return {**entry, "expires_at": _iso(expiry.first_ms),
            "time_left_seconds": round(expiry.first_ms / 1000 - now), "unknown": None}


def left_without_consumer(retention: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The groups expiring by commit time, by when they go (`after_commit`): the ones the
    migration would leave with no consumer, and those already in Kafka with none."""
    by_when: dict[str, list[str]] = {}
    by_commit = [g for g in retention.get("expiring") or [] if g["clock"] == COMMIT_CLOCK]
    told = sorted((g for g in by_commit if g["expires_at"] is not None),
                  key=lambda g: g["expires_at"])
    if told:
        # Each group's time is its own commit's: one line from the first to go, not one a group.
        first = told[0]
        when = (after_commit(first) if len(told) == 1 else
                f"from {first['expires_at']} ({left_text(first['time_left_seconds'])}) on, "
                "each by its last commit")
        by_when[when] = [g["group"] for g in told]
    for g in by_commit:
        if g["expires_at"] is None:
            by_when.setdefault(after_commit(g), []).append(g["group"])
    return list(by_when.items())


def after_commit(g: dict[str, Any]) -> str:
    """When a group expiring by commit time loses its offsets, as a page says it."""
    if g["expires_at"] is not None:
        return f"at {g['expires_at']} ({left_text(g['time_left_seconds'])}; by its last commit)"
    if g["after_commit_minutes"] is None:
        return f"at an unknown time ({g['unknown']})"
    return f"{minutes_text(g['after_commit_minutes'])} after the migration's commit"


def expiry_lines(retention: dict[str, Any], most: int = SHOWN) -> list[str]:
    """The diff's terminal lines on expiry: how many groups, and when for the first `most`."""
    expiring = retention.get("expiring") or []
    if not expiring:
        return []
    lines = [f"expiry: {len(expiring):,} group(s) whose offsets Kafka deletes with no consumer "
             f"in the group (clock: {retention['expiry']})"]
    for g in expiring[:most]:
        if g["clock"] == EMPTY_CLOCK and g["expires_at"] is not None:
            left = left_text(g["time_left_seconds"])
            at = f"at {g['expires_at']} ({left}; since it became Empty)"
        else:
            at = after_commit(g)
        lines.append(f"  {g['group']}: {at}")
    if len(expiring) > most:
        lines.append(f"  ... and {len(expiring) - most:,} more (report.md, summary.json "
                     "retention.expiring)")
    return lines


def selection_flags(selection: Selection) -> str:
    """The selection (its groups, excluded groups and topics) as flags to paste after a command:
    ` --group 'billing.*'`, or ""."""
    given = (("--group", selection.groups), ("--exclude-group", selection.exclude_groups),
             ("--topic", selection.topics))
    return "".join(f" {flag} {_name(shlex.quote(pattern))}" for flag, patterns in given
                   for pattern in patterns)


def _iso(ms: int | None) -> str | None:
    return None if ms is None else iso(ms / 1000)


def _names(groups: list[str]) -> str:
    return f"{', '.join(map(_name, groups[:5]))}{' ...' if len(groups) > 5 else ''}"


def _name(text: str) -> str:
    """A name in a warning: its backticks escaped, so that only the warning's own `code spans`
    read as such (as in Markdown)."""
    return text.replace("`", "\\`")


def _release(version: str | None) -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in version.split(".")) if version else None
    except ValueError:
        return None
