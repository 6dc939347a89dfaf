"""What a run wrote, read back from the stores: `verify --run` checks that it still holds, and a
reviewed plan applied again finds the groups an earlier run of it wrote, already applied, not
moved by someone else."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from migrate import stores
from migrate.batches import chunks
from migrate.errors import PlanRefused, ZkUnavailable
from migrate.journal.journal import COMMITTED, PARTIAL, PENDING, SKIPPED, VERIFIED, Journal, Run
from migrate.connection import Connection
from migrate.settings import Settings
from migrate.write import guards
from migrate.write.kafka_half import committed_offset, shown
from migrate.write.renamed import of_run
from migrate.write.sessions import Writers, open_writers
from migrate.zk.writer import encode

log = logging.getLogger(__name__)

BATCH = 250   # groups read back at a time


def still_holds(journal: Journal, run: Run, groups: list[str],
                writers: Writers) -> Iterator[tuple[str, int, list[str]]]:
    """For each of `groups` that `run` wrote: how many offsets were read back, and where Kafka
    (and ZooKeeper, where `writers.zk` is given) no longer hold what the run wrote."""
    semantics = run.settings.get("offset_semantics", "next")
    for chunk in chunks(groups, BATCH):
        parts = journal.partitions_of(run.run_id, chunk)
        kafka_now = writers.kafka.committed_many(chunk)
        zk_now = writers.zk.read([p.zk_path for g in chunk for p in parts[g]]) if writers.zk else {}
        for g in chunk:
            # A group Kafka would not answer for holds nothing the run wrote.
            answer = {} if isinstance(kafka_now[g], Exception) else kafka_now[g]
            differ = []
            for p in parts[g]:
                held = committed_offset(answer.get(p.key))
                if held != p.offset:
                    differ.append(f"{g} {p.topic}-{p.partition}: Kafka holds {shown(held)}, "
                                  f"the run wrote {p.offset} ({_which_way(held, p.offset)})")
                elif writers.zk and zk_now[p.zk_path].value != encode(
                        p.before_zk_value, p.offset, p.layout, semantics):
                    differ.append(f"{g} {p.zk_path}: ZooKeeper holds "
                                  f"{zk_now[p.zk_path].value!r}, not the run's value")
            yield g, len(parts[g]), differ


def verify_run(settings: Settings) -> dict[str, Any]:
    """verify --run RUN_ID: every offset that run wrote (its verified groups) still holds its value.

    Reads the journal and the stores, a batch of groups at a time; no scan, no Spark. Where the
    run wrote ZooKeeper too but ZooKeeper is not given or does not answer (the cluster left it),
    Kafka alone is checked, and the data says ZooKeeper was not consulted and why.
    """
    with Journal.open(settings.state_dir) as journal:
        run = guards.journaled(journal, settings.run, ("migrate",))
        wrote_zk = not run.settings.get("no_zk_write")
        not_consulted = "no --zookeeper given" if wrote_zk and settings.zookeeper is None else None
        reached = None
        if wrote_zk and not not_consulted:
            try:
                reached = stores.reach(settings.connection)
            except ZkUnavailable as exc:
                not_consulted = str(exc)
        if reached is None:
            reached = stores.reach(settings.connection, zookeeper=False)
        if not_consulted:
            log.warning("verify: ZooKeeper was not consulted (%s): Kafka alone is checked "
                        "against what run %s wrote", not_consulted, run.run_id)
        zk = wrote_zk and not not_consulted
        guards.same_stores(run, reached, settings.connection, settings.recorded(), "verify",
                           zookeeper=zk)
        written = [g.name for g in journal.groups(run.run_id) if g.state == VERIFIED]
        checked, differ = 0, []
        with open_writers(settings.connection, settings.parallelism, zk=zk,
                          renamed=of_run(run.settings)) as writers:
            for _, offsets, wrong in still_holds(journal, run, written, writers):
                checked += offsets
                differ += wrong
        rolled_back = journal.rollback_of(run.run_id)
    ok = checked and not differ
    others = {state: n for state, n in run.groups.items() if n and state not in (VERIFIED, SKIPPED)}
    by = None if rolled_back is None else {"run": rolled_back.run_id, "state": rolled_back.state}
    return {**run.to_json(), "reviewed_plan": run.settings.get("reviewed_plan"),
            "checked": checked, "differ": differ, "verified": bool(ok), "not_written": others,
            "groups_written": len(written), "wrote_zookeeper": wrote_zk,
            "zookeeper_not_consulted": not_consulted, "rolled_back_by": by}


def already_applied(journal: Journal, plan_id: str, groups: list[str], connection: Connection,
                    parallelism: int) -> dict[str, str]:
    """The groups of `groups` an earlier run of the plan `plan_id` wrote and whose stores still
    hold exactly what it wrote (read through `connection`, `parallelism` reads in flight), each
    with that run: a second application has nothing to do there.

    Raises PlanRefused when an earlier run of the plan has groups unfinished: resuming it
    finishes them, where a second run would find them half-written.
    """
    earlier = [r for r in journal.runs() if r.kind == "migrate"
               and r.settings.get("reviewed_plan") == plan_id
               and journal.rollback_of(r.run_id) is None]
    for run in earlier:
        left = sum(run.groups[state] for state in (PENDING, COMMITTED, PARTIAL))
        if left:
            raise PlanRefused(plan_id, f"run {run.run_id} of this plan has {left} group(s) "
                                       "unfinished: `zk2kafka migrate --execute --resume "
                                       f"{run.run_id}` finishes them; nothing was written")
    wanted, found = set(groups), {}
    for run in earlier:
        written = [g.name for g in journal.groups(run.run_id)
                   if g.state == VERIFIED and g.name in wanted and g.name not in found]
        if not written:
            continue
        wrote_zk = not run.settings.get("no_zk_write")
        with open_writers(connection, parallelism, zk=wrote_zk,
                          renamed=of_run(run.settings)) as writers:
            for g, _, differ in still_holds(journal, run, written, writers):
                if not differ:
                    found[g] = run.run_id
    if found:
        log.info("plan %s: %d group(s) already applied, holding what an earlier run of it wrote",
                 plan_id, len(found))
    return found


def _which_way(held: int | None, wrote: int) -> str:
    """Why Kafka may no longer hold what a run wrote: a consumer read on, or it was rewound."""
    if held is None:
        return "no offset now: deleted, or expired by retention"
    if held > wrote:
        return "a consumer moved on past it"
    return "rewound below it: a reset, or another writer"
