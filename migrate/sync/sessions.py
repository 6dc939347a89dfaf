"""One follower's sessions and the Follower built on them, for the command's own process
(OneFollower) and for each follower process of `sync --writers N` (follower_shards.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kafka.admin import KafkaAdminClient
from kazoo.client import KazooClient

from migrate.journal.journal import Journal
from migrate.kafka.client import open_admin
from migrate.kafka.compat import BrokerFeatures, group_states
from migrate.kafka.retry import RetryPolicy
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.settings import Settings
from migrate.sync.follower import Follower
from migrate.sync.service import Health
from migrate.zk.client import close, connect
from migrate.zk.scan import make_reader


def make_follower(settings: Settings, client: KazooClient, admin: KafkaAdminClient,
                  journal: Journal | None, run_id: str, metadata: str, status_file: Path | None,
                  **options: Any) -> Follower:
    """A Follower over these sessions, as the settings ask; `options` go to Follower."""
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

    return Follower(client, make_reader(client, settings),
                    KafkaOffsetWriter(admin, policy, settings.parallelism),
                    kafka_groups, kafka_partitions, journal, run_id, metadata,
                    settings.rescan_every, settings.renew_every, status_file,
                    dry_run=not settings.execute,
                    per_group_metrics=not settings.no_group_metrics,
                    quiet_for=settings.quiet_for, **options)


def open_sessions(settings: Settings) -> tuple[KafkaAdminClient, KazooClient]:
    """A Kafka admin and a ZooKeeper session for one follower."""
    admin = open_admin(settings.connection, in_flight=settings.parallelism + 4)
    try:
        return admin, connect(settings.connection)
    except BaseException:
        admin.close()
        raise


def kafka_probe(admin: KafkaAdminClient):
    """/healthz's sign of life from Kafka. A metadata request for no topic: any client may send
    it, whatever the ACLs (DescribeCluster would need Describe on the cluster)."""
    return lambda: admin.describe_topics([])


class OneFollower:
    """Every selected group followed by one Follower, in this process."""

    def __init__(self, settings: Settings, journal: Journal | None, run_id: str, metadata: str,
                 status_file: Path):
        self.settings = settings
        self.admin, self.client = open_sessions(settings)
        self.follower = make_follower(settings, self.client, self.admin, journal, run_id,
                                      metadata, status_file)
        self.registry = self.follower.metrics.registry

    def health(self) -> Health:
        return Health(self.client, kafka_probe(self.admin), lambda: self.follower.last_rescan,
                      self.settings.rescan_every)

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
