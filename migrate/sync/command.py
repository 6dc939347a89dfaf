"""The sync command: the journal, signal handling, the stop timer and the metrics endpoint
(migrate/endpoint.py, with sync/service.py's checks) around the followers: one Follower
(sync/follower.py) in this process (sync/sessions.py), its status said while ZooKeeper is away
(sync/outage.py), or `--writers N` follower processes (sync/follower_shards.py). Returns what the
sync command prints."""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

from migrate import stores
from migrate.endpoint import Endpoint
from migrate.group_map import RECORD_KEY, renames_text
from migrate.journal.journal import DONE, Journal
from migrate.durations import exact_duration
from migrate.settings import Settings
from migrate.state import StateDir, new_run_id
from migrate.sync.follower_shards import FollowerShards
from migrate.sync.outage import AwayStatus
from migrate.sync.renames import resolved_at_start
from migrate.sync.sessions import FollowOptions, OneFollower
from migrate.kafka.values import run_metadata

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
    options = FollowOptions.of(settings)   # a --map-group-file read, its rules checked
    # What needs no server first: the endpoint's address, bound (a typo or a port in use is said
    # at once, not after a wait on ZooKeeper); then the writers' lock, so that a second writer
    # stops before it connects to anything.
    endpoint = (Endpoint(settings.metrics_address) if settings.metrics_address is not None
                else None)
    try:
        journal = (Journal.open(settings.state_dir, writer=f"sync --execute, run {run_id}")
                   if settings.execute else None)
    except BaseException:
        if endpoint is not None:
            endpoint.close()
        raise
    # As migrate: an explicit --metadata, even "", is what is written; the journal records it
    # for later runs.
    metadata = settings.metadata if settings.metadata is not None else run_metadata("sync", run_id)
    stop = threading.Event()
    followers = away = None
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        # The mapping over the groups listed now, refused (exit 2) before Kafka is reached; the
        # groups later re-scans find are admitted by the followers (sync/renames.py).
        renamed = resolved_at_start(options.mapping, options)
        if options.mapping:
            log.info("sync %s: renamed: %s (each mirrored into its Kafka group; ZooKeeper stays"
                     " the old group's)", run_id, renames_text(renamed))
        if options.writers > 1:
            followers = FollowerShards(options, run_id, metadata, report / "sync-status.json")
        else:
            followers = OneFollower(options, journal, run_id, metadata,
                                    report / "sync-status.json")
            away = AwayStatus(followers.follower).start()   # its status while ZooKeeper is away
        if endpoint is not None:
            endpoint.serve(followers.registry, followers.health())
        if journal is not None:
            # Sync only reads ZooKeeper.
            reached = stores.reach(settings.connection, zookeeper=False)
            record = {**settings.recorded(), "stores": reached.to_json(), "no_zk_write": True,
                      RECORD_KEY: renamed}
            journal.create_run(run_id, "sync", "", record, {}, report=str(report))
        if settings.stop_after:
            timer = threading.Timer(settings.stop_after, stop.set)
            timer.daemon = True   # never what keeps the process alive
            timer.start()
        log.info("sync %s: following %s%s into %s%s, re-scanning every %s, %s%s; stop with"
                 " Ctrl-C or SIGTERM", run_id, settings.zookeeper, settings.zk_root,
                 settings.bootstrap_server,
                 f" over {settings.writers} processes" if settings.writers > 1 else "",
                 exact_duration(settings.rescan_every),
                 f"renewing every {exact_duration(settings.renew_every)}"
                 if settings.renew_every else "renewing nothing (no --renew-every)",
                 "" if settings.execute else " (dry run: nothing is written)")
        begun = time.time()
        status = followers.run(stop)
        if journal is not None:
            journal.set_run(run_id, DONE)
    finally:
        stop.set()
        if away is not None:
            away.stop()
        signal.signal(signal.SIGTERM, previous)
        if endpoint is not None:
            endpoint.close()
        if followers is not None:
            followers.close()
        if journal is not None:
            journal.close()
    return {"run": run_id, "kind": "sync", "dry_run": not settings.execute, "report": str(report),
            **status, "seconds": round(time.time() - begun, 3)}   # how long it followed
