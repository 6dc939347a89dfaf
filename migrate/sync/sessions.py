"""One follower's sessions and the Follower built on them, for the command's own process
(OneFollower) and for each follower process of `sync --writers N` (follower_shards.py); what
they are made from is `FollowOptions`, the part of the settings a follower uses."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError
from kazoo.client import KazooClient

from migrate import group_map
from migrate.connection import Connection
from migrate.errors import MigrateError
from migrate.group_map import GroupMap
from migrate.journal.journal import Journal
from migrate.kafka.offsets_log.kept import Kept
from migrate.kafka import takeover
from migrate.kafka.client import open_admin
from migrate.kafka.compat import BrokerFeatures, describe_cluster, group_states
from migrate.kafka.offsets_log.followed import FollowedLog
from migrate.kafka.retry import RetryPolicy
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.settings import Settings
from migrate.sync.decide import Takeover
from migrate.sync.expiry_clock import ExpiryClock
from migrate.sync.follower import Follower
from migrate.sync.metrics import DryRun
from migrate.sync.renames import SyncRenames
from migrate.sync.service import Health
from migrate.zk.brokers import registrations
from migrate.zk.client import close, connect
from migrate.zk.clock import DRY_RUN, NOT_PROBED, probe
from migrate.zk.scan import ReaderOptions, make_reader


# Seconds a pass spends at most reading __consumer_offsets for a takeover's evidence (what is new
# since the last read: a read that did not finish goes on at the next), and waits at most for a
# read under way on the retention clock's thread.
EVIDENCE_BUDGET = 10.0
EVIDENCE_WAIT = 1.0


@dataclass(frozen=True)
class FollowOptions:
    """What a follower takes from the settings: how to reach the stores, what to read there, the
    state dir its journal is in, and how it follows (--parallelism, --rescan-every,
    --renew-every, --quiet-for, --no-group-metrics, --writers; a dry run without --execute), and
    the group mapping (--map-group, --map-group-file)."""

    connection: Connection
    reading: ReaderOptions
    state_dir: Path
    dry_run: bool
    parallelism: int
    rescan_every: float
    renew_every: float | None
    quiet_for: float
    per_group_metrics: bool
    writers: int
    mapping: GroupMap = GroupMap()
    clock_margin: float = takeover.MARGIN
    no_clock_probe: bool = False

    @classmethod
    def of(cls, settings: Settings) -> FollowOptions:
        return cls(settings.connection, ReaderOptions.of(settings), settings.state_dir,
                   not settings.execute, settings.parallelism, settings.rescan_every,
                   settings.renew_every, settings.quiet_for, not settings.no_group_metrics,
                   settings.writers, group_map.chosen(settings), settings.clock_margin,
                   settings.no_clock_probe)


def make_follower(options: FollowOptions, client: KazooClient, admin: KafkaAdminClient,
                  journal: Journal | None, run_id: str, metadata: str, status_file: Path | None,
                  **extra: Any) -> Follower:
    """A Follower over these sessions, as `options` ask; `extra` goes to Follower."""
    policy = RetryPolicy()
    features = BrokerFeatures.of(admin)

    def kafka_groups() -> dict[str, str | None]:
        # Before 2.6 ListGroups carries no state: a live group must not read as idle on old
        # brokers.
        return group_states(admin, features, policy.call)

    def kafka_partitions(topics: list[str]) -> dict[str, set[int]]:
        # A topic Kafka lacks comes back with no partitions (the admin never asks to create it).
        described = policy.call("describe topics", lambda: admin.describe_topics(topics))
        return {t["name"]: {p["partition_index"] for p in t["partitions"]} for t in described}

    writer = KafkaOffsetWriter(admin, policy, options.parallelism)
    followed = FollowedLog(admin, features, writer, metadata,
                           registrations(client, _cluster_id(admin, features)), options.connection)
    followed.start_watch()
    clocks = followed.reader.clocks
    probing = not (options.dry_run or options.no_clock_probe)
    if not probing:   # a dry run writes nothing, not even it
        clocks.zk_probed(DRY_RUN if options.dry_run else NOT_PROBED)

    def probe_zookeeper() -> None:
        # At each re-scan. A probe that fails (ZooKeeper away) keeps the bounds measured before.
        probed = probe(client) if probing else None
        if probed is not None and (not isinstance(probed, str) or clocks.zk_hi is None):
            clocks.zk_probed(probed)

    def commit_evidence(groups: list[str]):
        # Once a pass, for the groups holding values zk2kafka did not write: read on from where
        # the last read stopped; a first read of a large topic under way on the retention
        # clock's thread is not waited for (the groups are judged again at a later pass).
        return followed.read(groups, EVIDENCE_BUDGET, wait=EVIDENCE_WAIT)

    return Follower(client, make_reader(client, options.reading), writer,
                    kafka_groups, kafka_partitions, journal, run_id, metadata,
                    options.rescan_every, options.renew_every, status_file,
                    dry_run=options.dry_run, per_group_metrics=options.per_group_metrics,
                    quiet_for=options.quiet_for, renames=SyncRenames(options.mapping),
                    takeover=Takeover(commit_evidence, options.clock_margin, followed.lead,
                                      followed.zookeeper_read, followed, Kept(options.state_dir),
                                      probe_zookeeper), **extra)


def _cluster_id(admin: KafkaAdminClient, features: BrokerFeatures) -> str | None:
    try:
        return describe_cluster(admin, features).cluster_id
    except (KafkaError, MigrateError):
        return None   # its brokers' registrations are then not read: they may be another's


def with_clock(follower: Follower, admin: KafkaAdminClient, options: FollowOptions) -> Follower:
    """`follower`, serving with its own series the retention clock of its groups
    (sync/expiry_clock.py) and whether it writes (`zk2kafka_sync_dry_run`)."""
    registry = follower.metrics.registry
    registry.register(ExpiryClock(admin, lambda: follower.groups, follower.renames.kafka_name,
                                  follower.renames.named, options.per_group_metrics,
                                  version=follower.states_version,
                                  followed=follower.takeover.followed))
    registry.register(DryRun(options.dry_run))
    return follower


def open_sessions(options: FollowOptions) -> tuple[KafkaAdminClient, KazooClient]:
    """A Kafka admin and a ZooKeeper session for one follower."""
    admin = open_admin(options.connection, in_flight=options.parallelism + 4)
    try:
        return admin, connect(options.connection)
    except BaseException:
        admin.close()
        raise


def kafka_probe(admin: KafkaAdminClient):
    """/healthz's sign of life from Kafka. A metadata request for no topic: any client may send
    it, whatever the ACLs (DescribeCluster would need Describe on the cluster)."""
    return lambda: admin.describe_topics([])


class OneFollower:
    """Every selected group followed by one Follower, in this process."""

    def __init__(self, options: FollowOptions, journal: Journal | None, run_id: str,
                 metadata: str, status_file: Path):
        self.options = options
        self.admin, self.client = open_sessions(options)
        self.follower = with_clock(make_follower(options, self.client, self.admin, journal,
                                                 run_id, metadata, status_file),
                                   self.admin, options)
        self.registry = self.follower.metrics.registry

    def health(self) -> Health:
        return Health(self.client, kafka_probe(self.admin), lambda: self.follower.last_rescan,
                      self.options.rescan_every)

    def run(self, stop: threading.Event) -> dict[str, Any]:
        """Follow until `stop` is set (or Ctrl-C); the figures of the run."""
        try:
            self.follower.run(stop)
        except KeyboardInterrupt:
            pass
        return self.follower.status.to_json(self.follower.groups)

    def close(self) -> None:
        self.admin.close()
        close(self.client)
