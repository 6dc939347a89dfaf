"""Follow mode's setup: the journal, the Kafka admin, the ZooKeeper client, signal handling, the
stop timer and the metrics endpoint (apply/service.py) around a Follower (apply/sync.py); returns
what the sync command prints."""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

from migrate.apply.guards import settings_record
from migrate.apply.journal import DONE, Journal
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
    admin = open_admin(settings, in_flight=settings.parallelism + 4)
    client = connect(settings)
    stop = threading.Event()
    endpoint = None
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
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

        # As migrate: an explicit --metadata, even "", is what is written; the journal records it
        # for later runs.
        metadata = settings.metadata if settings.metadata is not None else f"zk2kafka sync {run_id}"
        follower = Follower(client, make_reader(client, settings),
                            KafkaOffsetWriter(admin, policy, settings.parallelism),
                            kafka_groups, kafka_partitions, journal, run_id, metadata,
                            settings.rescan_every, settings.renew_every,
                            report / "sync-status.json", dry_run=not settings.execute,
                            per_group_metrics=not settings.no_group_metrics)
        if settings.metrics_address is not None:
            # A metadata request for no topic: any client may send it, whatever the ACLs
            # (DescribeCluster would need Describe on the cluster).
            health = Health(client, lambda: admin.describe_topics([]),
                            lambda: follower.last_rescan, settings.rescan_every)
            endpoint = Endpoint(settings.metrics_address, follower.metrics.registry,
                                health).start()
        if journal is not None:
            # After the endpoint is bound: a port in use journals no run that never ran.
            # Sync only reads ZooKeeper.
            record = {**settings_record(settings), "no_zk_write": True}
            journal.create_run(run_id, "sync", "", record, {}, report=str(report))
        if settings.stop_after:
            timer = threading.Timer(settings.stop_after, stop.set)
            timer.daemon = True   # never what keeps the process alive
            timer.start()
        log.info("sync %s: following %s%s into %s%s; stop with Ctrl-C or SIGTERM", run_id,
                 settings.zookeeper, settings.zk_root, settings.bootstrap_server,
                 "" if settings.execute else " (dry run: nothing is written)")
        try:
            status = follower.run(stop)
        except KeyboardInterrupt:
            status = follower.status
        if journal is not None:
            journal.set_run(run_id, DONE)
    finally:
        stop.set()
        signal.signal(signal.SIGTERM, previous)
        if endpoint is not None:
            endpoint.close()
        admin.close()
        close(client)
        if journal is not None:
            journal.close()
    return {"run": run_id, "kind": "sync", "dry_run": not settings.execute, "report": str(report),
            **status.to_json(follower.groups),
            "seconds": round(time.time() - status.started, 3)}   # how long it followed
