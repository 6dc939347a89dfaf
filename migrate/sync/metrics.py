"""sync's Prometheus series, in a registry of their own (never prometheus_client's global one, so
a process that imports zk2kafka as a library exports nothing by surprise).

Counters are counted as sync works; the per-state and per-group figures are read from the
Follower's groups when Prometheus scrapes (a group's lag as its last pass worked it out), so a
group's series need no bookkeeping when it stops. Label cardinality is bounded: `group` at most
(never a partition), and `per_group=False` (`--no-group-metrics`) drops every series labelled by
group, for fleets of 10,000+ groups; the totals over all groups stay. Under --map-group a renamed
group's `group` label is `old -> new` (the label set stays the same).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

if TYPE_CHECKING:
    from migrate.sync.state import GroupState

PREFIX = "zk2kafka_sync"
STATES = ("mirroring", "ready", "stopped")
# Why a group stopped being synced: a fixed set, so the label stays bounded.
STOP_REASONS = ("kafka_members", "taken_over", "differs", "other_run", "offsets_refused",
                "commit_refused", "map_refused")
# Re-arming a batch of groups' watches takes a round trip; a re-scan of 10,000 groups tens of
# seconds (docs/performance.md).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


def state_of(group: GroupState) -> str:
    """The group's state as the series name it: stopped, ready, or mirroring."""
    if group.stopped is not None:
        return "stopped"
    return "ready" if group.ready else "mirroring"


def lag(group: GroupState) -> tuple[int, int]:
    """(partitions whose Kafka offset differs from ZooKeeper's, the sum of the differences). A
    partition Kafka holds no offset for counts its whole ZooKeeper offset."""
    differ = total = 0
    for key, zk in group.offsets.items():
        held = group.kafka.get(key)
        if held != zk.offset:
            differ += 1
            total += abs(zk.offset - (held or 0))
    return differ, total


class SyncMetrics:
    """The counters sync feeds, and the registry a `/metrics` endpoint serves."""

    def __init__(self, groups: Callable[[], dict[str, GroupState]], *, per_group: bool = True,
                 named: Callable[[str], str] = str):
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.offsets_mirrored = Counter(
            f"{PREFIX}_offsets_mirrored",
            "Offset changes committed to Kafka (renewals not counted)", registry=r)
        self.commits = Counter(
            f"{PREFIX}_commits", "OffsetCommits Kafka accepted (changes and renewals)", registry=r)
        self.renewals = Counter(
            f"{PREFIX}_renewals", "Renewals: unchanged offsets committed again (--renew-every)",
            registry=r)
        self.commit_errors = Counter(
            f"{PREFIX}_commit_errors", "Commits Kafka refused or that failed, by error class",
            ["error"], registry=r)
        self.outages = Counter(
            f"{PREFIX}_outages", "Passes cut short by a store away longer than the retries,"
            " by error class", ["error"], registry=r)
        self.sessions_lost = Counter(
            f"{PREFIX}_zookeeper_sessions_lost", "ZooKeeper sessions lost (expired); every"
            " watched group is read again, which re-arms its watches", registry=r)
        self.watches_armed = Counter(
            f"{PREFIX}_watches_armed", "ZooKeeper watches armed or re-armed (one per znode read)",
            registry=r)
        self.rearm_seconds = Histogram(
            f"{PREFIX}_watch_rearm_duration_seconds", "Time to re-arm one batch of groups' watches",
            buckets=BUCKETS, registry=r)
        self.rescan_seconds = Histogram(
            f"{PREFIX}_rescan_duration_seconds", "Time of one full re-scan of the selected groups"
            " (after the first, spread over half of --rescan-every)",
            buckets=BUCKETS, registry=r)
        r.register(_GroupCollector(groups, per_group, named))


class _GroupCollector(Collector):
    """The per-state and per-group series, read from the Follower's groups at scrape time."""

    def __init__(self, groups: Callable[[], dict[str, GroupState]], per_group: bool,
                 named: Callable[[str], str]):
        # `named`: a group as its label names it (`old -> new` when renamed)
        self.groups, self.per_group, self.named = groups, per_group, named

    def describe(self) -> list[Metric]:
        return []   # read at scrape time: nothing to describe before

    def collect(self) -> Iterator[Metric]:
        # dict() copies in one step under the GIL: the Follower adds groups on its own thread.
        groups = dict(self.groups())
        by_state = GaugeMetricFamily(f"{PREFIX}_groups", "Selected groups by sync state",
                                     labels=["state"])
        counts = dict.fromkeys(STATES, 0)
        stopped = dict.fromkeys(STOP_REASONS, 0)
        differ_all = total_all = 0
        per_group = []
        for name, group in groups.items():
            state = state_of(group)
            counts[state] += 1
            if group.stop_reason is not None:
                stopped[group.stop_reason] += 1
            differ, total = group.lag if state != "stopped" else (0, 0)
            differ_all, total_all = differ_all + differ, total_all + total
            if self.per_group:
                per_group.append((self.named(name), state, group, differ, total))
        for state, n in counts.items():
            by_state.add_metric([state], n)
        yield by_state
        reasons = GaugeMetricFamily(f"{PREFIX}_groups_stopped",
                                    "Groups sync no longer mirrors, by reason", labels=["reason"])
        for reason, n in stopped.items():
            reasons.add_metric([reason], n)
        yield reasons
        yield GaugeMetricFamily(f"{PREFIX}_lag_partitions",
                                "Partitions whose Kafka offset differs from ZooKeeper's, over the"
                                " groups still mirrored, as of sync's last read", value=differ_all)
        yield GaugeMetricFamily(f"{PREFIX}_lag_offsets",
                                "Sum of the differences between ZooKeeper's and Kafka's offsets,"
                                " over the groups still mirrored", value=total_all)
        if not self.per_group:
            return
        state = GaugeMetricFamily(f"{PREFIX}_group_state", "1 for the group's sync state",
                                  labels=["group", "state"])
        last = GaugeMetricFamily(f"{PREFIX}_group_last_mirrored_timestamp_seconds",
                                 "When Kafka last accepted a change of the group's offsets"
                                 " (0: none this run)", labels=["group"])
        mirrored = CounterMetricFamily(f"{PREFIX}_group_offsets_mirrored",
                                       "Offset changes of the group committed to Kafka",
                                       labels=["group"])
        lag_partitions = GaugeMetricFamily(f"{PREFIX}_group_lag_partitions",
                                           "The group's partitions whose Kafka offset differs"
                                           " from ZooKeeper's", labels=["group"])
        lag_offsets = GaugeMetricFamily(f"{PREFIX}_group_lag_offsets",
                                        "Sum of the differences between the group's ZooKeeper"
                                        " and Kafka offsets", labels=["group"])
        # The samples add_metric would make, made directly: its call, zip and dict per sample were a
        # quarter of a scrape of 10,000 groups (docs/performance.md).
        new = tuple.__new__
        states, lasts, counts = state.samples, last.samples, mirrored.samples
        lag_rows, lag_sums = lag_partitions.samples, lag_offsets.samples
        state_name, last_name = state.name, last.name
        count_name = f"{mirrored.name}_total"
        rows_name, sums_name = lag_partitions.name, lag_offsets.name
        no = (None, None, None)   # timestamp, exemplar, native histogram
        for name, group_state, group, differ, total in sorted(per_group, key=lambda row: row[0]):
            for s in STATES:
                states.append(new(Sample, (state_name, {"group": name, "state": s},
                                           1 if s == group_state else 0, *no)))
            label = {"group": name}
            lasts.append(new(Sample, (last_name, label, group.last_mirrored, *no)))
            counts.append(new(Sample, (count_name, label, group.offsets_mirrored, *no)))
            lag_rows.append(new(Sample, (rows_name, label, differ, *no)))
            lag_sums.append(new(Sample, (sums_name, label, total, *no)))
        yield from (state, last, mirrored, lag_partitions, lag_offsets)


class DryRun(Collector):
    """`zk2kafka_sync_dry_run`: 1 for a sync without --execute, which commits nothing (so its lag
    never closes), 0 for one that writes; the alert rules leave a dry run's lag alone."""

    def __init__(self, dry_run: bool):
        self.dry_run = dry_run

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(f"{PREFIX}_dry_run", "1 without --execute: nothing is committed",
                                value=1 if self.dry_run else 0)
