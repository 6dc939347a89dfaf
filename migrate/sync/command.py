"""The sync command: the followers in the service shell it shares with `renew`
(migrate/service_shell.py: the metrics endpoint with sync/service.py's checks, the writers' lock
and the journal, SIGTERM and the stop timer): one Follower
(sync/follower.py) in this process (sync/sessions.py), its status said while ZooKeeper is away
(sync/outage.py), or `--writers N` follower processes (sync/follower_shards.py). Returns what the
sync command prints."""

from __future__ import annotations

import logging
import time
from typing import Any

from migrate.durations import exact_duration
from migrate.group_map import RECORD_KEY, renames_text
from migrate.kafka.values import run_metadata
from migrate.service_shell import ServiceShell
from migrate.settings import Settings
from migrate.state import StateDir, new_run_id
from migrate.sync.follower_shards import FollowerShards
from migrate.sync.outage import AwayStatus
from migrate.sync.renames import resolved_at_start
from migrate.sync.sessions import FollowOptions, OneFollower

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
    # As migrate: an explicit --metadata, even "", is what is written; the journal records it
    # for later runs.
    metadata = settings.metadata if settings.metadata is not None else run_metadata("sync", run_id)
    # What needs no server first (the shell): the endpoint's address, bound, then the writers'
    # lock, so that a second writer stops before it connects to anything.
    with ServiceShell("sync", run_id, settings, address=settings.metrics_address,
                      journal=settings.execute,
                      writer=f"sync --execute, run {run_id}") as shell:
        # The mapping over the groups listed now, refused (exit 2) before Kafka is reached; the
        # groups later re-scans find are admitted by the followers (sync/renames.py).
        renamed = resolved_at_start(options.mapping, options)
        if options.mapping:
            log.info("sync %s: renamed: %s (each mirrored into its Kafka group; ZooKeeper stays"
                     " the old group's)", run_id, renames_text(renamed))
        if options.writers > 1:
            followers = FollowerShards(options, run_id, metadata, report / "sync-status.json")
            shell.closing(followers.close)
        else:
            followers = OneFollower(options, shell.journal, run_id, metadata,
                                    report / "sync-status.json")
            shell.closing(followers.close)
            # its status while ZooKeeper is away; stopped before the follower closes
            shell.closing(AwayStatus(followers.follower).start().stop)
        shell.serve(followers.registry, followers.health())
        if settings.execute:
            shell.begin_run({RECORD_KEY: renamed}, report=str(report))
        shell.stop_after(settings.stop_after)
        log.info("sync %s: following %s%s into %s%s, re-scanning every %s, %s%s; stop with"
                 " Ctrl-C or SIGTERM", run_id, settings.zookeeper, settings.zk_root,
                 settings.bootstrap_server,
                 f" over {settings.writers} processes" if settings.writers > 1 else "",
                 exact_duration(settings.rescan_every),
                 f"renewing every {exact_duration(settings.renew_every)}"
                 if settings.renew_every else "renewing nothing (no --renew-every)",
                 "" if settings.execute else " (dry run: nothing is written)")
        begun = time.time()
        status = followers.run(shell.stop)
        if settings.execute:
            shell.end_run()
    return {"run": run_id, "kind": "sync", "dry_run": not settings.execute, "report": str(report),
            **status, "seconds": round(time.time() - begun, 3)}   # how long it followed
