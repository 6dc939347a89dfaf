"""Follow mode's setup: the journal, signal handling, the stop timer and the metrics endpoint
(apply/service.py) around the followers: one Follower (apply/sync.py) in this process, or
`--writers N` follower processes (apply/sync_shards.py). Returns what the sync command prints."""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from typing import Any

from kafka.admin import KafkaAdminClient
from kazoo.client import KazooClient

from migrate import stores
from migrate.write.guards import settings_record
from migrate.journal.journal import DONE, Journal
from migrate.apply.service import Endpoint, Health
from migrate.apply.sync import Follower
from migrate.kafka.client import open_admin
from migrate.kafka.compat import BrokerFeatures, group_states
from migrate.kafka.retry import RetryPolicy
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.settings import Settings
from migrate.state import StateDir, new_run_id
from migrate.zk.client import close, connect
from migrate.zk.scan import make_reader

log = logging.getLogger(__name__)


def follow(settings: Settings) -> dict[str, Any]:
    """Mirror each ZooKeeper offset change into Kafka until SIGINT/SIGTERM or --stop-after.

    Without --execute it only says what it would commit. With it, the run is journaled
    (kind sync) like migrate, so `status` shows it and `rollback` can undo it in Kafka.
    """
    settings.require("zookeeper")
    settings.require("bootstrap_server")
    run_id, state = new_run_id(), StateDir(settings.state_dir)
    report = state.reports(run_id)
    # The writers' lock first: a second writer stops before it connects to anything.
    journal = (Journal.open(settings.state_dir, writer=f"sync --execute, run {run_id}")
               if settings.execute else None)
    # As migrate: an explicit --metadata, even "", is what is written; the journal records it
    # for later runs.
    metadata = settings.metadata if settings.metadata is not None else f"zk2kafka sync {run_id}"
    stop = threading.Event()
    followers = endpoint = None
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if settings.writers > 1:
            from migrate.apply.sync_shards import Shards
            followers = Shards(settings, run_id, metadata, report / "sync-status.json")
        else:
            followers = OneFollower(settings, journal, run_id, metadata,
                                    report / "sync-status.json")
        if settings.metrics_address is not None:
            endpoint = Endpoint(settings.metrics_address, followers.registry,
                                followers.health()).start()
        if journal is not None:
            # After the endpoint is bound: a port in use journals no run that never ran.
            # Sync only reads ZooKeeper.
            record = {**settings_record(settings, stores.reach(settings, zookeeper=False)),
                      "no_zk_write": True}
            journal.create_run(run_id, "sync", "", record, {}, report=str(report))
        if settings.stop_after:
            timer = threading.Timer(settings.stop_after, stop.set)
            timer.daemon = True   # never what keeps the process alive
            timer.start()
        log.info("sync %s: following %s%s into %s%s%s; stop with Ctrl-C or SIGTERM", run_id,
                 settings.zookeeper, settings.zk_root, settings.bootstrap_server,
                 f" over {settings.writers} processes" if settings.writers > 1 else "",
                 "" if settings.execute else " (dry run: nothing is written)")
        begun = time.time()
        status = followers.run(stop)
        if journal is not None:
            journal.set_run(run_id, DONE)
    finally:
        stop.set()
        signal.signal(signal.SIGTERM, previous)
        if endpoint is not None:
            endpoint.close()
        if followers is not None:
            followers.close()
        if journal is not None:
            journal.close()
    return {"run": run_id, "kind": "sync", "dry_run": not settings.execute, "report": str(report),
            **status, "seconds": round(time.time() - begun, 3)}   # how long it followed


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
    admin = open_admin(settings, in_flight=settings.parallelism + 4)
    try:
        return admin, connect(settings)
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
