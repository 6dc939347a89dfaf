"""When Kafka deletes the offsets of the groups ready-for-kraft found in Kafka with no member, and
what keeps them: pure, over the Kafka snapshot's group rows and what __consumer_offsets says of
each group (its GroupLog, migrate/kafka/offsets_log/group.py), by the broker's release rules
(migrate/diff/retention.py `offsets_expire`).

This is information, never a blocker: the offsets are in Kafka now; the section says until when,
and how to keep them (start the new consumers, or renew while ZooKeeper answers) or put them back
once ZooKeeper is gone (from the run's evidence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from migrate.diff.retention import COMMIT_CLOCK, offsets_expire, renewal_period
from migrate.durations import duration_text
from migrate.kafka.compat import RETENTION_DEFAULT_BEFORE_2_0, RETENTION_DEFAULT_SINCE_2_0
from migrate.state import iso


class HeldGroup(NamedTuple):
    """A group Kafka holds offsets of, as the Kafka snapshot saw it."""

    group: str
    state: str | None
    protocol_type: str | None
    offsets: int


def release(version: str | None) -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in version.split(".")) if version else None
    except ValueError:
        return None


def window(minutes: int | None, broker_version: str | None) -> tuple[int | None, str | None]:
    """offsets.retention.minutes to count with and where it comes from: the broker's own, else
    its release's default (1 day before 2.0, 7 days since), else unknown."""
    if minutes is not None:
        return minutes, "broker"
    version = release(broker_version)
    if version is None:
        return None, None
    default = RETENTION_DEFAULT_BEFORE_2_0 if version < (2, 0) else RETENTION_DEFAULT_SINCE_2_0
    return default, "release default"


def expiring(held: Iterable[HeldGroup], clocks: Mapping[str, Any], why: str | None,
             minutes: int | None, broker_version: str | None, now: float,
             evidence: str) -> dict[str, Any]:
    """Per group in Kafka with no member, when Kafka deletes its offsets (the first and the
    last), whether a re-commit renews them, and the renewal's period (a quarter of the window).

    `clocks`: group -> its GroupLog (kafka/offsets_log/); `why`: why they could not be read (or
    None);
    `evidence`: this run's ZooKeeper snapshot, what puts the offsets back once ZooKeeper is gone.
    """
    effective, source = window(minutes, broker_version)
    version = release(broker_version)
    groups = []
    for g in held:
        clock = clocks.get(g.group)
        expiry = offsets_expire(version, effective, g.protocol_type, g.state,
                                clock.empty_since if clock else None,
                                clock.commits if clock else ())
        unknown = expiry.unknown if clock or why is None else why
        first = None if expiry.first_ms is None else expiry.first_ms / 1000
        groups.append({"group": g.group, "group_state": g.state,
                       "protocol_type": g.protocol_type or "", "offsets": g.offsets,
                       "clock": expiry.clock,
                       "expires_at": None if first is None else iso(first),
                       "all_expire_at": (None if expiry.last_ms is None
                                         else iso(expiry.last_ms / 1000)),
                       "time_left_seconds": None if first is None else round(first - now),
                       # A re-commit moves a commit-time clock only.
                       "renewable": expiry.clock == COMMIT_CLOCK,
                       "unknown": None if first is not None else unknown})
    groups.sort(key=lambda g: (g["expires_at"] is None, g["expires_at"] or "", g["group"]))
    return {"retention_minutes": minutes, "effective_minutes": effective, "source": source,
            "broker_version": broker_version,
            "renew_every": duration_text(renewal_period(effective)),
            "clocks_unknown": why, "evidence": evidence, "groups": groups}
