"""`sync --writers N`: the followed groups sharded over N follower processes.

One process follows about 500 changes a second over 10,000 groups on two cores; past that the
pass, kazoo's and kafka-python's IO threads share one interpreter lock and changes queue (p99
3.4-4.6 s at 1,000 a second, bench_sync.py). So, as `migrate --writers N` does for its write
phase, N processes each open their own ZooKeeper session and Kafka admin and follow the selected
groups whose name hashes to them (crc32 mod N: a group keeps its shard across restarts). A group
is followed whole by one process, so the rules of sync/follower.py hold per group as they do in one
process, and each journals its commits into the one journal.

This process (the command's) holds the writers' lock, and the shards die with it, `kill -9`
included. It serves /metrics and /healthz from the figures each shard sends every second, writes
sync-status.json and logs the status line from them merged, and stops every shard on SIGINT,
SIGTERM or --stop-after. A shard that dies ends the command with an error: a supervisor
restarts it, and a restarted sync takes up every group where Kafka stands (never backwards).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any, NamedTuple

from kazoo.protocol.states import KazooState
from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from migrate import processes
from migrate.errors import EXIT_ERROR, MigrateError, WorkerFailed
from migrate.journal.journal import Journal
from migrate.kafka.client import open_admin
from migrate.state import iso
from migrate.sync.service import Health
from migrate.sync.sessions import FollowOptions, make_follower, open_sessions, with_clock
from migrate.sync.state import group_lists, status_line
from migrate.zk.client import close

log = logging.getLogger(__name__)
REPORT_EVERY = 1.0     # seconds between two reports of a shard's figures
STATUS_EVERY = 10.0    # seconds between two status lines, as one Follower logs them
STOP_WAIT = 60.0       # seconds a shard has to finish its pass and report once stopped
NO_GROUPS = group_lists({})


def shard_of(group: str, shards: int) -> int:
    """The shard that follows `group`: the same in every process and across restarts (Python's
    own hash of a str is salted per process)."""
    return zlib.crc32(group.encode()) % shards


class Report(NamedTuple):
    """A shard's figures, sent every REPORT_EVERY and once more when it stops."""

    shard: int
    families: list[Metric]          # its registry, collected
    figures: dict[str, Any]         # SyncStatus.figures
    # state.group_lists of its groups, sent when they changed, every STATUS_EVERY and at the
    # end (at 10,000 groups they are most of a report); None: as last sent
    groups: dict[str, Any] | None
    zk_state: str                   # its kazoo session's state
    last_rescan: float | None       # time.monotonic() (one clock for every process of the host)
    final: bool = False


class Failed(NamedTuple):
    """A shard stopped on an error: its line and exit code."""

    shard: int
    message: str
    exit_code: int


class FollowerShards:
    """`options.writers` follower processes, started at once; `run` follows until `stop`."""

    def __init__(self, options: FollowOptions, run_id: str, metadata: str, status_file: Path):
        self.options, self.status_file = options, status_file
        self.started = time.time()
        self.reports: dict[int, Report] = {}
        self.groups: dict[int, dict[str, Any]] = {}   # each shard's group lists, as last sent
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(Merged(self._families))
        ctx = processes.context()
        # `go`: the shards open their sessions at once, and follow (write) only once `run` is
        # called, after the command has bound its endpoint and journaled the run.
        self._stop, self._go = ctx.Event(), ctx.Event()
        self._admin = None
        n = options.writers
        self.workers = processes.Workers(_follow_shard, [
            (options, run_id, metadata, k, n, self._stop, self._go) for k in range(n)],
            "zk2kafka-sync")
        try:
            # /healthz's Kafka probe; the shards' sessions are theirs.
            self._admin = open_admin(options.connection)
        except BaseException:
            self.close()
            raise

    def health(self) -> Health:
        return Health(_Sessions(self), lambda: self._admin.describe_topics([]),
                      self.last_rescan, self.options.rescan_every)

    def last_rescan(self) -> float | None:
        """When the oldest of the shards' last re-scans finished: all groups re-read since."""
        with self._lock:
            reports = list(self.reports.values())
        if len(reports) < len(self.workers) or any(r.last_rescan is None for r in reports):
            return None
        return min(r.last_rescan for r in reports)

    def run(self, stop: threading.Event) -> dict[str, Any]:
        """Follow until `stop` is set (or Ctrl-C); the shards' figures merged. Raises WorkerFailed
        when a shard fails or dies."""
        self._go.set()
        next_status = time.monotonic() + STATUS_EVERY
        final: set[int] = set()
        deadline = None
        while len(final) < len(self.workers):
            try:
                if stop.is_set() and deadline is None:
                    self._stop.set()
                    deadline = time.monotonic() + STOP_WAIT
                changed = self._receive(final, deadline)
                now = time.monotonic()
                if now >= next_status:
                    log.info(status_line(self.status()))
                    next_status = now + STATUS_EVERY
                if changed:   # a shard's group lists came
                    self._write_status()
            except KeyboardInterrupt:
                stop.set()
        log.info(status_line(self.status()))
        self._write_status()
        return self.status()

    def _receive(self, final: set[int], deadline: float | None) -> bool:
        """Read the shards' reports for up to a tenth of a second; whether group lists came."""
        came = False
        for k, pipe in enumerate(self.workers.pipes):
            if k in final:
                continue
            try:
                message = pipe.recv() if pipe.poll(0.1 / len(self.workers)) else None
            except EOFError:   # its end of the pipe closed: the process is gone
                self.workers.wait(k, timeout=5)
                raise self._died(k) from None
            if isinstance(message, Failed):
                raise WorkerFailed(f"follower process {k}: {message.message}", message.exit_code)
            if isinstance(message, Report):
                with self._lock:
                    self.reports[k] = message
                    if message.groups is not None:
                        self.groups[k] = message.groups
                        came = True
                if message.final:
                    final.add(k)
            elif not self.workers.alive(k) and not pipe.poll(0):
                raise self._died(k)
            if deadline is not None and time.monotonic() > deadline:
                raise WorkerFailed(f"follower process {k} did not stop within {STOP_WAIT:g}s")
        return came

    def _died(self, k: int) -> WorkerFailed:
        return WorkerFailed(f"follower process {k} died (exit {self.workers.exitcode(k)}); start"
                            " sync again: it takes up every group where Kafka stands")

    def status(self) -> dict[str, Any]:
        """The shards' SyncStatus figures as one sync's."""
        with self._lock:
            parts = [{**r.figures, **self.groups.get(k, NO_GROUPS)}
                     for k, r in self.reports.items()]
        return merged_status(parts, len(self.workers), self.started)

    def _families(self) -> list[list[Metric]]:
        with self._lock:
            return [r.families for r in self.reports.values()]

    def _write_status(self) -> None:
        tmp = self.status_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.status(), indent=2) + "\n")
        tmp.replace(self.status_file)

    def close(self) -> None:
        self._stop.set()
        self.workers.close(timeout=STOP_WAIT)
        if self._admin is not None:
            self._admin.close()


class _Sessions:
    """The shards' ZooKeeper sessions as one, for /healthz: the worst state among them."""

    def __init__(self, shards: FollowerShards):
        self.shards = shards

    @property
    def state(self) -> str:
        with self.shards._lock:
            states = {r.zk_state for r in self.shards.reports.values()}
        for worst in (KazooState.LOST, KazooState.SUSPENDED):
            if worst in states:
                return worst
        return KazooState.CONNECTED


def merged_status(parts: list[dict[str, Any]], shards: int, started: float) -> dict[str, Any]:
    """The SyncStatus figures (to_json) of the shards that reported, as one sync's."""
    latest = max((p for p in parts if p["last_change_at"]), default=None,
                 key=lambda p: p["last_change_at"])
    renamed = dict(sorted((g, new) for p in parts
                          for g, new in p.get("groups_renamed", {}).items()))
    return {"started": iso(started), "updated": iso(time.time()),
            **({"groups_renamed": renamed} if renamed else {}),
            **{k: sum(p[k] for p in parts)
               for k in ("commits", "offsets_mirrored", "renewals", "errors")},
            # whole re-scans: as many as every shard finished
            "rescans": min(p["rescans"] for p in parts) if len(parts) == shards else 0,
            "last_change": latest["last_change"] if latest else None,
            "last_change_at": latest["last_change_at"] if latest else None,
            # ZooKeeper away for any shard: since the first lost it
            "zookeeper_away_since": min((p["zookeeper_away_since"] for p in parts
                                         if p.get("zookeeper_away_since")), default=None),
            "groups_synced": sorted(g for p in parts for g in p["groups_synced"]),
            "groups_ready": sorted(g for p in parts for g in p["groups_ready"]),
            "groups_unmirrored": dict(sorted(
                (g, rows) for p in parts for g, rows in p["groups_unmirrored"].items())),
            "groups_stopped": dict(sorted(
                (g, why) for p in parts for g, why in p["groups_stopped"].items()))}


class Merged(Collector):
    """The shards' series as one sync's. Samples of the same name and labels are summed: each
    group is one shard's, so per-group series are the shard's own, and totals and histogram
    buckets add up; a counter's `_created` time is the earliest. `families`: () -> each shard's
    last collected families."""

    def __init__(self, families: Callable[[], list[list[Metric]]]):
        self.families = families

    def describe(self) -> list[Metric]:
        return []   # read at scrape time: nothing to describe before

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        values: dict[str, dict[tuple, float]] = {}
        for shard in self.families():
            for family in shard:
                if family.name not in families:
                    families[family.name] = Metric(family.name, family.documentation,
                                                   family.type, family.unit)
                    values[family.name] = {}
                merged = values[family.name]
                for sample in family.samples:
                    key = (sample.name, tuple(sorted(sample.labels.items())))
                    if key not in merged:
                        merged[key] = sample.value
                    elif sample.name.endswith("_created"):
                        merged[key] = min(merged[key], sample.value)
                    else:
                        merged[key] += sample.value
        for name, family in families.items():
            for (sample, labels), value in values[name].items():
                family.add_sample(sample, dict(labels), value)
            yield family


# -- in a follower process ------------------------------------------------------------------------

def _follow_shard(pipe, options: FollowOptions, run_id: str, metadata: str, k: int, n: int,
                  stop, go) -> None:
    """A follower process: the groups of shard `k` of `n` followed until `stop`, its figures sent
    down `pipe` every REPORT_EVERY and once more at the end."""
    sending = threading.Lock()   # the reporter thread and this one share the pipe
    try:
        with nullcontext() if options.dry_run else Journal.open(options.state_dir) as journal:
            admin, client = open_sessions(options)
            try:
                follower = make_follower(options, client, admin, journal, run_id, metadata,
                                         None, status_every=None,
                                         owns=lambda group: shard_of(group, n) == k)
                with_clock(follower, admin, options)   # its retention clock's series

                lists_sent = [-1, 0.0]   # the follower's changes then, and when

                def report(final: bool = False) -> None:
                    groups = None
                    now, changes = time.monotonic(), follower.changes
                    if final or changes != lists_sent[0] or now >= lists_sent[1] + STATUS_EVERY:
                        # dict() copies in one step under the GIL: the follower adds groups.
                        groups = group_lists(dict(follower.groups), dict(follower.status.renamed))
                        lists_sent[:] = changes, now
                    message = Report(k, list(follower.metrics.registry.collect()),
                                     follower.status.figures(), groups, str(client.state),
                                     follower.last_rescan, final)
                    with sending:
                        pipe.send(message)

                done = threading.Event()

                def reporter() -> None:
                    while not done.wait(REPORT_EVERY):
                        report()

                thread = threading.Thread(target=reporter, name="zk2kafka-sync-report",
                                          daemon=True)
                thread.start()
                while not go.wait(0.2) and not stop.is_set():
                    pass
                follower.run(stop)
                done.set()
                thread.join()
                report(final=True)
            finally:
                admin.close()
                close(client)
    except MigrateError as exc:   # e.g. a store that cannot be reached: the line it would print
        with sending:
            pipe.send(Failed(k, str(exc), exc.exit_code))
    except Exception as exc:  # noqa: BLE001 - sent to the command's process, which says it
        log.debug("follower process failed", exc_info=True)
        with sending:
            pipe.send(Failed(k, f"{type(exc).__name__}: {exc}", EXIT_ERROR))
    pipe.close()
