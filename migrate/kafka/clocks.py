"""How far the two servers' clocks the takeover rule compares are from zk2kafka's, measured from
what zk2kafka reads and writes, never assumed when it can be measured.

The rule (takeover.py) compares a commit's timestamp (the group coordinator's clock) with a
znode's mtime (ZooKeeper's leader's clock). A broker clock ahead of ZooKeeper's makes a commit
look newer than it is: an old commit could pass for a takeover. What bounds each clock:

- a `__consumer_offsets` record stamped later than the moment its answer came back shows the
  broker that stamped it ahead of zk2kafka's clock by at least the difference (every read);
- a commit zk2kafka made, stamped before the moment it was sent, shows that broker ahead by at
  most the difference (sync's commits);
- a znode written before the moment zk2kafka saw the write shows ZooKeeper ahead by at least
  mtime minus that moment (a write seen during a watch; every change sync mirrors);
- the clock probe, an ephemeral znode the gate and `sync --execute` create and delete
  (migrate/zk/clock.py), stamped between the create's send and its answer, bounds the current
  ZooKeeper leader's clock both ways;
- a broker's registration in ZooKeeper (`/brokers/ids/N`: the broker's clock in `timestamp`,
  ZooKeeper's in the znode's ctime, taken a round trip apart) shows that broker's clock ahead of
  ZooKeeper's by at least `timestamp - ctime`.

From them, Kafka's lead over ZooKeeper (`Lead`): at most the highest broker bound less ZooKeeper's
lowest, where both are measured; where one is not, the margin is assumed there, on top of the
largest lead measured (a broker found 5 minutes ahead widens the margin by 5 minutes even when
nothing bounds it from above; so does a ZooKeeper leader shown 5 minutes behind, unless a broker
is shown behind too). Pure: the readers feed it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol


class ClockProbe(Protocol):
    """A znode zk2kafka created to measure ZooKeeper's clock, as migrate/zk/clock.py made it."""

    sent: float
    answered: float
    ctime_ms: int
    how: str


class Bound(NamedTuple):
    """A clock's offset from zk2kafka's (seconds, + ahead) bounded on one side, and by what."""

    seconds: float
    how: str


def _lower(current: Bound | None, seconds: float, how: str) -> Bound:
    return current if current is not None and current.seconds >= seconds else Bound(seconds, how)


def _upper(current: Bound | None, seconds: float, how: str) -> Bound:
    return current if current is not None and current.seconds <= seconds else Bound(seconds, how)


@dataclass
class Clocks:
    """Bounds of each broker's and ZooKeeper's clock against zk2kafka's, as they are measured."""

    brokers_lo: dict[int, Bound] = field(default_factory=dict)
    brokers_hi: dict[int, Bound] = field(default_factory=dict)
    zk_lo: Bound | None = None
    zk_hi: Bound | None = None
    registered: dict[int, Bound] = field(default_factory=dict)   # broker's lead over ZooKeeper
    zk_unmeasured: str | None = None   # why the clock probe did not bound ZooKeeper's from above

    def kafka_read(self, broker: int, stamped_ms: int, read_at: float) -> None:
        """A record broker `broker` stamped, in an answer that came back at `read_at`."""
        self.brokers_lo[broker] = _lower(self.brokers_lo.get(broker), stamped_ms / 1000 - read_at,
                                         "a record of __consumer_offsets read")

    def kafka_sent(self, broker: int, sent_at: float, stamped_ms: int) -> None:
        """A commit zk2kafka sent at `sent_at`, stamped `stamped_ms` by broker `broker`."""
        self.brokers_hi[broker] = _upper(self.brokers_hi.get(broker), stamped_ms / 1000 - sent_at,
                                         "a commit zk2kafka made")

    def zk_seen(self, mtime_ms: int, seen_at: float, how: str = "a znode write seen") -> None:
        """A znode ZooKeeper stamped `mtime_ms`, seen written by `seen_at`."""
        self.zk_lo = _lower(self.zk_lo, mtime_ms / 1000 - seen_at, how)

    def zk_written(self, sent_at: float, mtime_ms: int,
                   how: str = "a znode zk2kafka wrote") -> None:
        """A znode zk2kafka wrote at `sent_at`, stamped `mtime_ms` by ZooKeeper."""
        self.zk_hi = _upper(self.zk_hi, mtime_ms / 1000 - sent_at, how)

    def zk_probed(self, probed: ClockProbe | str) -> None:
        """The clock probe's znode (migrate/zk/clock.py): stamped after the create was sent and
        before its answer came back; or why there was none."""
        if isinstance(probed, str):
            self.zk_unmeasured = probed
            return
        # ctime is whole milliseconds: the stamp may lie up to one later than it says
        self.zk_written(probed.sent, probed.ctime_ms + 1, probed.how)
        self.zk_seen(probed.ctime_ms, probed.answered, probed.how)

    def broker_registered(self, broker: int, timestamp_ms: int, ctime_ms: int) -> None:
        """A broker's registration: its own clock's `timestamp_ms`, ZooKeeper's ctime."""
        self.registered[broker] = Bound((timestamp_ms - ctime_ms) / 1000,
                                        f"broker {broker}'s registration in ZooKeeper")

    def merge(self, other: Clocks) -> None:
        """`other`'s measurements taken in too (another reader's, another process's)."""
        for b, bound in other.brokers_lo.items():
            self.brokers_lo[b] = _lower(self.brokers_lo.get(b), *bound)
        for b, bound in other.brokers_hi.items():
            self.brokers_hi[b] = _upper(self.brokers_hi.get(b), *bound)
        if other.zk_lo is not None:
            self.zk_lo = _lower(self.zk_lo, *other.zk_lo)
        if other.zk_hi is not None:
            self.zk_hi = _upper(self.zk_hi, *other.zk_hi)
        self.registered.update(other.registered)

    def lead(self) -> Lead:
        """Kafka's lead over ZooKeeper, as measured (see the module's docstring)."""
        brokers = set(self.brokers_lo) | set(self.brokers_hi) | set(self.registered)
        measured_hi = bool(brokers) and all(b in self.brokers_hi for b in brokers)
        hi = None
        if measured_hi and self.zk_lo is not None:
            hi = max(self.brokers_hi[b].seconds for b in brokers) - self.zk_lo.seconds
        zk_hi = self.zk_hi.seconds if self.zk_hi is not None else 0.0
        lows = [bound.seconds - zk_hi for bound in self.brokers_lo.values()]
        lows += [bound.seconds for bound in self.registered.values()]
        lo = max(lows) if lows else None
        # ZooKeeper shown behind zk2kafka's clock (the clock probe): Kafka's lead is at least as
        # much where no broker is shown behind too, whatever bounds their clocks from below.
        shown_behind = any(b.seconds < 0 for b in self.brokers_hi.values())
        behind = -zk_hi if zk_hi < 0 and not shown_behind else None
        return Lead(lo, hi, self, behind)


class Lead(NamedTuple):
    """Kafka's clock ahead of ZooKeeper's (seconds): at least `lo`, at most `hi` (None: not
    measured), and the measurements behind them."""

    lo: float | None
    hi: float | None
    clocks: Clocks | None = None
    zk_behind: float | None = None   # ZooKeeper's clock behind zk2kafka's by at least (s)

    def widened(self, margin: float) -> float:
        """The margin a commit must be newer than ZooKeeper's write by: `margin` on top of the
        measured lead (the larger of its bounds: a registration's lower bound may be older than
        a commit's upper one; ZooKeeper shown behind, the brokers not), never below `margin`."""
        lead = max((x for x in (self.hi, self.lo, self.zk_behind) if x is not None), default=None)
        return float(math.ceil(margin + lead)) if lead is not None and lead > 0 else margin

    @property
    def assumed(self) -> bool:
        """No upper bound was measured: the margin is assumed on the side that matters."""
        return self.hi is None

    def to_json(self, margin: float) -> dict[str, Any]:
        c = self.clocks or Clocks()

        def bound(b: Bound | None):
            return None if b is None else {"seconds": round(b.seconds, 3), "by": b.how}
        return {"kafka": {str(b): {"ahead_at_least": bound(c.brokers_lo.get(b)),
                                   "ahead_at_most": bound(c.brokers_hi.get(b)),
                                   "ahead_of_zookeeper_at_least": bound(c.registered.get(b))}
                          for b in sorted(set(c.brokers_lo) | set(c.brokers_hi)
                                          | set(c.registered))},
                "zookeeper": {"ahead_at_least": bound(c.zk_lo), "ahead_at_most": bound(c.zk_hi),
                              "not_measured_from_above": c.zk_unmeasured},
                "lead_at_least": None if self.lo is None else round(self.lo, 3),
                "lead_at_most": None if self.hi is None else round(self.hi, 3),
                "margin": margin, "effective_margin": round(self.widened(margin), 3),
                "assumed": self.assumed}


UNMEASURED = Lead(None, None)


class Margin(NamedTuple):
    """The takeover rule's clock margin, one value on every road (the diff, `sync`, the gate): the
    configured one (--clock-margin) and the measured lead of Kafka's clock over ZooKeeper's it is
    widened by."""

    configured: float
    lead: Lead = UNMEASURED

    @property
    def seconds(self) -> float:
        """The margin in force: what a commit must be newer than ZooKeeper's write by."""
        return self.lead.widened(self.configured)

    def to_json(self) -> dict[str, Any]:
        return self.lead.to_json(self.configured)
