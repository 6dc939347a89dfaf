"""The renew command: the passes every --renew-every until SIGINT, SIGTERM or --stop-after, in
the service shell it shares with `sync` (migrate/service_shell.py: its endpoint, the writers' lock
and the journal), and what it prints. Reads Kafka and the journal,
never ZooKeeper.

A dry run (no --execute) takes no lock, journals nothing and makes one pass up to the commit.
With --execute and no --renew-every it renews once and ends (for a scheduler: cron, a systemd
timer); with --renew-every it renews at once and then at that period, a service
(docker/zk2kafka-renew.service): a pass that fails on a store away is logged, counted and tried
again a minute later, and with --metrics-address its series and /healthz (renew/service.py) show
a renewal that stopped or failed long before the offsets are gone.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from kafka.errors import KafkaError

from migrate.durations import exact_duration
from migrate.endpoint import split_address
from migrate.errors import EXIT_ERROR, ConfigError, KafkaUnavailable, MigrateError
from migrate.group_map import RECORD_KEY
from migrate.journal.authorship import Authorship
from migrate.journal.journal import INCOMPLETE, Journal
from migrate.kafka.client import open_admin
from migrate.kafka.compat import BrokerFeatures
from migrate.kafka.members import describe
from migrate.kafka.retry import RetryPolicy
from migrate.kafka.values import run_metadata
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.renew.renewer import PassResult, renewal_pass
from migrate.renew.service import RenewHealth, RenewMetrics
from migrate.renew.written import written
from migrate.service_shell import ServiceShell
from migrate.settings import Settings
from migrate.state import iso, new_run_id
from migrate.zk.reader import Selection

log = logging.getLogger(__name__)
# Seconds before a pass that failed on a store away is tried again (the floor of --renew-every).
RETRY_AFTER = 60.0
# What a pass that failed is tried again after: Kafka away past the retries.
OUTAGES = (KafkaError, KafkaUnavailable, OSError)


class NothingToRenew(MigrateError):
    """The journal holds no offset zk2kafka wrote for the selection: nothing was renewed, and
    that is never success."""

    exit_code = EXIT_ERROR

    def __init__(self, journal: str, selection: str):
        super().__init__(f"renew: the journal {journal} holds no offset a migrate or sync run "
                         f"wrote for {selection}; nothing was renewed (a migration not run yet? "
                         "another --state-dir? a selection that matches no migrated group? the "
                         "selection names groups as ZooKeeper did)")


def renew(settings: Settings) -> dict[str, Any]:
    """Re-commit the offsets zk2kafka wrote, as Kafka holds them, once or every --renew-every.

    Raises ConfigError when the state dir does not exist (nothing is created) or the flag
    --metrics-address is given to a renewal that does not keep running; NothingToRenew when the
    journal holds nothing for the selection; WriterBusy when another writer holds the state dir.
    """
    settings.require("bootstrap_server")
    run_id, execute = new_run_id(), settings.execute
    every = settings.renew_every if execute else None
    selection = Selection.of(settings)
    # What needs no server first: the endpoint's address, the state dir, the journal in it.
    address = _served(settings, every)
    path = _journal_path(settings)
    if not path.exists():   # nothing to renew, and nothing created
        raise NothingToRenew(str(path), selection.text)
    with ServiceShell("renew", run_id, settings, address=address, journal=True,
                      writer=f"renew --execute, run {run_id}" if execute else None) as shell:
        journal = shell.journal
        wanted = written(journal, selection)
        if not wanted:
            raise NothingToRenew(str(journal.path), selection.text)
        admin = open_admin(settings.connection)
        shell.closing(admin.close)
        writer, features = KafkaOffsetWriter(admin, RetryPolicy()), BrokerFeatures.of(admin)

        def live(groups: list[str]) -> set[str]:
            return {g for g, m in describe(admin, features, groups).items() if m.live}

        def one_pass() -> PassResult:
            return renewal_pass(wanted, writer, live, authorship, journal if execute else None,
                                run_id, not execute)

        authorship = Authorship(journal, run_metadata("renew", run_id))
        if execute:
            renamed = {v.journal_group: g for g, keys in wanted.items() for v in keys.values()
                       if v.journal_group != g}
            shell.begin_run({"renews": sorted(wanted), RECORD_KEY: dict(sorted(renamed.items()))})
        metrics = health = None
        if shell.endpoint is not None:
            metrics, health = RenewMetrics(every, len(wanted)), RenewHealth(
                lambda: admin.describe_topics([]), every)
            shell.serve(metrics.registry, health)
        shell.stop_after(settings.stop_after)
        offsets = sum(map(len, wanted.values()))
        if execute:
            log.info("renew %s: renewing the %d offset(s) of %d group(s) zk2kafka wrote, %s",
                     run_id, offsets, len(wanted),
                     f"every {exact_duration(every)}; stop with Ctrl-C or SIGTERM" if every
                     else "once")
        begun = time.time()
        try:
            done = _passes(run_id, one_pass, every, shell.stop, execute, metrics, health)
        except BaseException:
            if execute:   # what was renewed is journaled; the run did not end as asked
                shell.end_run(INCOMPLETE)
            raise
        if execute:
            shell.end_run()
    return {"run": run_id, "kind": "renew", "dry_run": not execute,
            "every": exact_duration(every) if every else None,
            "groups": len(wanted), "offsets": offsets, **done,
            "seconds": round(time.time() - begun, 3)}


def _served(settings: Settings, every: float | None) -> str | None:
    """The --metrics-address to serve: only a renewal that keeps running has one. Given as a flag
    to one that does not, it is refused; from the environment or the config file (a shell set
    up for the service), it is left unserved, and said."""
    address = settings.metrics_address
    if address is None:
        return None
    split_address(address)
    if every is not None:
        return address
    if settings.sources.get("metrics_address") == "flag":
        raise ConfigError("--metrics-address serves a renewal that keeps running: give it with "
                          "--execute and --renew-every (a dry run, and --execute alone, renew "
                          "once and end)")
    log.info("renew: --metrics-address (%s) not served: %s renews once and ends",
             settings.sources.get("metrics_address"),
             "--execute alone" if settings.execute else "a dry run")
    return None


def _journal_path(settings: Settings) -> Path:
    """The state dir's journal; ConfigError, naming the state dir and where it came from, when
    the folder does not exist (a mistyped --state-dir is never created)."""
    state = Path(settings.state_dir)
    if not state.is_dir():
        source = settings.sources.get("state_dir", "default")
        given = f"--state-dir {state}" + ("" if source == "flag" else f" ({source})")
        raise ConfigError(f"renew: {given}: no such directory: renew reads the journal of the "
                          "migrate and sync runs in the change's state dir; nothing was created")
    return state / "journal.sqlite"


def _passes(run_id: str, one_pass, every: float | None, stop: threading.Event, execute: bool,
            metrics: RenewMetrics | None, health: RenewHealth | None) -> dict[str, Any]:
    """The passes, until `stop` (one without `every`); what they did."""
    passes = failed = renewals = 0
    renewed_groups: set[str] = set()
    last = PassResult()
    try:
        while True:
            wait = every
            try:
                found = one_pass()
            except OUTAGES as exc:
                if every is None:
                    raise
                failed += 1
                # kafka-python's errors name their class already
                why = (str(exc) if str(exc).startswith(type(exc).__name__)
                       else f"{type(exc).__name__}: {exc}")
                wait = min(every, RETRY_AFTER)
                log.warning("renew %s: a pass failed: %s; trying again at %s", run_id, why,
                            iso(time.time() + wait))
                if metrics is not None:
                    metrics.failed()
                    health.failed(why)
            else:
                last, passes = found, passes + 1
                renewals += last.offsets
                renewed_groups |= set(last.renewed)
                _log_pass(run_id, passes, last, execute, every)
                if metrics is not None:
                    metrics.renewed(last.offsets, len(last.renewed), len(last.left_alone))
                    health.renewed()
            if every is None or stop.wait(wait):
                break
    except KeyboardInterrupt:
        pass
    return {"passes": passes, "failed_passes": failed, "renewals": renewals,
            "renewed_groups": sorted(renewed_groups),
            "last_pass": {"renewed": {g: len(o) for g, o in last.renewed.items()},
                          "left_alone": last.left_alone}}


def _log_pass(run_id: str, n: int, found: PassResult, execute: bool, every: float | None) -> None:
    verb = "renewed" if execute else "would renew (dry run)"
    nxt = f"; next at {iso(time.time() + every)}" if every else ""
    log.info("renew %s: pass %d: %s %d offset(s) in %d group(s); %d group(s) left alone%s",
             run_id, n, verb, found.offsets, len(found.renewed), len(found.left_alone), nxt)
    for group, why in sorted(found.left_alone.items()):
        log.info("renew %s: left alone: %s: %s", run_id, group, why)
    if execute and every and not found.renewed:
        log.warning("renew %s: no group left to renew: each is left alone, for the reason "
                    "above; nothing for this renew to keep alive: it can be stopped", run_id)


def not_a_renewal(state_dir: Path, run_id: str) -> None:
    """Refuses, in words of its own, a rollback of a renew run: a renewal moves no offset.
    Anything else (no such run, another kind) is the rollback's to say."""
    if not (Path(state_dir) / "journal.sqlite").exists():
        return
    with Journal.open(state_dir) as journal:
        run = journal.run(run_id)
    if run is not None and run.kind == "renew":
        raise MigrateError(f"rollback: {run_id} is a renew run: a renewal re-commits each offset "
                           "as Kafka holds it and moves none, so it has nothing to roll back; "
                           "what moved the offsets is the migrate or sync run that wrote them "
                           "(`zk2kafka status` lists the runs)")
