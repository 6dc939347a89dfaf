"""The retention clock as sync's series: when Kafka deletes the offsets of each followed group it
holds with no member, by the same rules `ready-for-kraft` goes by (migrate/ready/expiry.py and
migrate/diff/retention.py `offsets_expire`), over the follower's reader of __consumer_offsets
(migrate/kafka/offsets_log/followed.py), which its passes share and which reads only what is new.

A days-long cutover can lose a group's offsets in Kafka without any error: a ready group left
unswitched whose offsets sync never commits again (no `--renew-every`, or an Empty consumer group
on Kafka 2.1+, which no commit renews), or a switched group whose new consumers left. The clocks
are read from __consumer_offsets on a thread of their own, every `EVERY` seconds and soon after a
followed group comes, goes or changes state (mirroring, ready, stopped: no sooner than `GAP`
seconds, nor than twice the last read took, and not before `EVERY` after a read that ran out of
its budget), never at scrape time (the first read of a large topic takes seconds); a scrape serves
the last read. It starts with the first
collection: a scrape of the command's endpoint, or a follower process's first report (--writers).

Series (the group label as the other per-group series, `old -> new` when renamed):
- `zk2kafka_sync_group_offsets_expire_timestamp_seconds{group}`: when Kafka deletes the first of
  the group's offsets, for each group it holds with no member whose clock is known (per group,
  dropped by `--no-group-metrics`);
- `zk2kafka_sync_groups_expiry_unknown`: groups held with no member whose clock cannot be told
  (the reason is logged);
- `zk2kafka_sync_expiry_reads_total{result="ok|failed"}`: reads of the clocks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any

from kafka.admin import KafkaAdminClient
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from migrate.diff.retention import offsets_expire
from migrate.kafka import compat
from migrate.kafka.members import IDLE_STATES
from migrate.kafka.offsets_log.followed import FollowedLog
from migrate.ready.expiry import release, window
from migrate.sync.metrics import state_of

log = logging.getLogger(__name__)

PREFIX = "zk2kafka_sync"
EVERY = 600.0     # seconds between two reads of the clocks when the followed groups stay the same
# Seconds one read of __consumer_offsets may take: the first reads the followed partitions from
# their start, the later ones only what is new; an unfinished read goes on at the next.
BUDGET = 120.0
POLL = 1.0        # seconds between two looks at the set of followed groups
# A change reads again no sooner than this, nor than twice the last read took.
GAP = 10.0
RETENTION_KEY = "offsets.retention.minutes"


class Expiry(dict):
    """The last read: {group (its label): first deletion, seconds since the epoch}, with the
    groups whose clock is unknown in `unknown`."""

    unknown: int = 0


def read(admin: KafkaAdminClient, features: compat.BrokerFeatures, followed: FollowedLog,
         kafka_names: Mapping[str, str]) -> tuple[Expiry, str | None]:
    """When Kafka deletes the first offset of each group of `kafka_names` ({label: Kafka group})
    that it holds with no member, and why some could not be told (or None), from the follower's
    reader of __consumer_offsets (`followed`). Raises KafkaError when Kafka does not answer."""
    states = compat.group_states(admin, features)
    protocols = {g["group_id"]: g.get("protocol_type")
                 for g in compat.list_groups(admin, features)}
    idle = {label: kafka for label, kafka in kafka_names.items()
            if states.get(kafka) in IDLE_STATES}
    found = Expiry()
    if not idle:
        return found, None
    cluster = compat.describe_cluster(admin, features)
    minutes = None
    if cluster.brokers:
        setting = compat.broker_setting(admin, features, cluster.brokers[0], RETENTION_KEY)
        minutes = int(setting.value) if setting.value and setting.value.isdigit() else None
    effective, _ = window(minutes, features.release if features.version else None)
    # Every followed group is followed in __consumer_offsets, not only those idle now: a group
    # turning idle later is then read on from where the reader stands, not from the start.
    clocks, why = followed.read(sorted(set(kafka_names.values())), BUDGET)
    reasons = []
    for label, kafka in sorted(idle.items()):
        clock = clocks.get(kafka)
        expiry = offsets_expire(release(features.release if features.version else None),
                                effective, protocols.get(kafka), states.get(kafka),
                                clock.empty_since if clock else None,
                                clock.commits if clock else ())
        if expiry.first_ms is not None:
            found[label] = expiry.first_ms / 1000
        else:
            found.unknown += 1
            reasons.append(f"{label}: {why or expiry.unknown}")
    return found, ("; ".join(reasons[:5]) + (f"; and {len(reasons) - 5} more"
                                             if len(reasons) > 5 else "")) if reasons else None


class ExpiryClock(Collector):
    """The expiry series of one follower's groups. `groups`: () -> the followed groups by their
    ZooKeeper names; `kafka_name` and `named`: a group's Kafka group and its label; `followed`:
    the follower's reader of __consumer_offsets (one of its own when None). `version`:
    () -> a value that changes whenever a group comes, goes or changes state; without it the
    groups' states are compared, every second, at a cost in sync's CPU that grows with the groups
    (docs/performance.md)."""

    def __init__(self, admin: KafkaAdminClient, groups: Callable[[], Mapping[str, Any]],
                 kafka_name: Callable[[str], str], named: Callable[[str], str], per_group: bool,
                 every: float = EVERY, version: Callable[[], Hashable] | None = None,
                 followed: FollowedLog | None = None):
        self.admin, self.groups, self.kafka_name, self.named = admin, groups, kafka_name, named
        self.followed = followed
        self.per_group, self.every, self.version = per_group, every, version
        self.last = Expiry()
        self.reads = {"ok": 0, "failed": 0}
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.halt = threading.Event()

    def describe(self) -> list[Metric]:
        return []   # read at scrape time: nothing to describe before

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="zk2kafka-sync-expiry")
                self._thread.start()
        last = self.last
        if self.per_group:
            expire = GaugeMetricFamily(f"{PREFIX}_group_offsets_expire_timestamp_seconds",
                                       "When Kafka deletes the first of the group's offsets, for"
                                       " a group it holds with no member (the retention clock)",
                                       labels=["group"])
            for label, at in sorted(last.items()):
                expire.add_metric([label], at)
            yield expire
        yield GaugeMetricFamily(f"{PREFIX}_groups_expiry_unknown",
                                "Groups Kafka holds with no member whose retention clock cannot"
                                " be told", value=last.unknown)
        reads = CounterMetricFamily(f"{PREFIX}_expiry_reads", "Reads of the retention clocks in"
                                    " __consumer_offsets, by result", labels=["result"])
        for result, n in self.reads.items():
            reads.add_metric([result], n)
        yield reads

    def _loop(self) -> None:
        features, seen, read_at, took = None, None, 0.0, 0.0
        while not self.halt.wait(POLL):
            # A group ready, stopped or new is read again soon (its Kafka group may have gained
            # or lost members); not after a read that ran out of its budget, which a new state
            # would not make finish: it took a core for BUDGET seconds, and told nothing.
            states = self._states() if self.version is None else self.version()
            since = time.monotonic() - read_at
            soon = states != seen and took < BUDGET
            if since < (max(GAP, 2 * took) if soon else self.every):
                continue
            began = time.monotonic()
            try:
                features = features or compat.BrokerFeatures.of(self.admin)
                self.followed = self.followed or FollowedLog(self.admin, features)
                found, why = read(self.admin, features, self.followed,
                                  {self.named(g): self.kafka_name(g) for g in dict(self.groups())})
            except Exception as exc:  # noqa: BLE001 - counted and logged; the next read retries
                self.reads["failed"] += 1
                log.warning("sync: could not read the retention clocks: %s: %s",
                            type(exc).__name__, exc)
                seen, read_at = states, time.monotonic()   # tried again in `every`
                continue
            self.last, seen, read_at = found, states, time.monotonic()
            took = read_at - began
            self.reads["ok"] += 1
            if why:
                log.warning("sync: when Kafka deletes these groups' offsets cannot be told: %s",
                            why)

    def _states(self) -> frozenset[tuple[str, str]]:
        # dict() copies in one step under the GIL: the Follower adds groups on its thread.
        return frozenset((g, state_of(group)) for g, group in dict(self.groups()).items())

    def close(self) -> None:
        self.halt.set()
