"""Whether a group's offsets are still: the one rule `sync` (ready to switch) and
`ready-for-kraft` (nothing left writing ZooKeeper) both apply.

An empty `ids/` does not mean nobody writes a group's offsets. The old high-level consumer
registers there, but a client that commits through the broker with OffsetCommit v0 (kafka-python
with api_version=(0, 8, 1), early Sarama, kafka_ex) or writes the znodes itself never does: only
its writes tell it is there. So a group is still only when none of its offset znodes changed
within a window. The default window is twice the old consumer's default auto-commit interval
(auto.commit.interval.ms, 60 s), so one commit cycle and its delays fit in it.

When a znode changed is ZooKeeper's own mtime of it, the server's clock; where the caller saw a
change itself (a watch, a new version between two reads), its own clock counts too, so a
ZooKeeper clock running behind the caller's cannot make a moving group look still.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable, Mapping
from typing import NamedTuple

QUIET_FOR = 120.0   # seconds: twice the old consumer's default auto.commit.interval.ms (60 s)


class Stamp(NamedTuple):
    """An offset znode and when ZooKeeper last changed it (seconds since the epoch; None when
    it could not be read)."""

    path: str
    mtime: float | None


class Moved(NamedTuple):
    """An offset znode that changed within the window, and when it last did."""

    path: str
    at: float


def moved_within(stamps: Iterable[Stamp], since: float,
                 seen: Mapping[str, float] | None = None) -> list[Moved]:
    """The znodes of `stamps` that changed at or after `since` (seconds since the epoch), by
    ZooKeeper's mtime or by `seen` (path -> when the caller saw it change); latest first."""
    seen = seen or {}
    out = []
    for path, mtime in stamps:
        times = [t for t in (mtime, seen.get(path)) if t is not None]
        if times and max(times) >= since:
            out.append(Moved(path, max(times)))
    return sorted(out, key=lambda m: (-m.at, m.path))


def still_at(moved: list[Moved], window: float) -> float | None:
    """When a group whose znodes `moved` becomes still, if nothing moves again; None if none
    moved."""
    return max(m.at for m in moved) + window if moved else None


def seconds(mtime: object) -> float | None:
    """A znode's mtime as seconds since the epoch: from a stat's milliseconds or from the
    timestamp a snapshot row carries."""
    if mtime is None:
        return None
    if isinstance(mtime, dt.datetime):
        return mtime.timestamp()
    return float(mtime) / 1000.0


def when(at: float) -> str:
    """`at` as the UTC time the logs and reports show, to the second."""
    return time.strftime("%H:%M:%SZ", time.gmtime(at))


def shown(moved: list[Moved], most: int = 3) -> str:
    """The znodes that moved, each with when, for one log line."""
    text = ", ".join(f"{m.path} at {when(m.at)}" for m in moved[:most])
    return text + (f" (+{len(moved) - most} more)" if len(moved) > most else "")
