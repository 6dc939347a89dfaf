"""Which ZooKeeper row stands for a partition found under more than one layout.

This is the one rule `diff` and `sync` share.

Kafka 1.1.0's v0 OffsetCommit wrote under `offset/` (singular) beside the usual `offsets/`,
so one partition can have two znodes. The one written last is the consumer's latest progress,
whatever it holds: a newer value that is MALFORMED or UNREADABLE must stand for the partition
(and block it), never an older readable one that would move the consumer back. Where the
order cannot be told (a znode whose stat could not be read, or two writes in the same
millisecond) the doubtful row wins, so the doubt blocks rather than a guess writes.

`pick` is the rule; the Spark stage (`migrate.diff.offset_diff.dedupe_zk`) orders a Window
by the same four terms as `preference`, and tests/unit/test_layouts.py checks the two agree.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

OK = "OK"


def preference(status: str, mtime: dt.datetime | int | None, layout: str | None) -> tuple:
    """Sort key of one of a partition's rows; the smallest key stands for the partition.

    In order: a row whose mtime is unknown first (it may be the newest); then the newest mtime;
    on equal mtimes a row that is not OK first; then the layout name, only to be deterministic.
    """
    known = mtime is not None
    return (known, -_instant(mtime) if known else 0.0, status == OK, layout or "")


def pick(rows: Iterable[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The row (with at least `status`, `mtime`, `layout`) that stands for a partition.

    Raises ValueError when there is none.
    """
    return min(rows, key=lambda r: preference(r["status"], r["mtime"], r["layout"]))


def _instant(mtime: dt.datetime | int) -> float:
    # Snapshot rows carry a datetime (Arrow timestamp); a raw ZooKeeper stat carries epoch
    # milliseconds.
    return mtime.timestamp() if isinstance(mtime, dt.datetime) else mtime / 1000.0
