"""The checks a run passes before it touches a store: the run exists, the options and stores are
the ones it was made with, its plan is unaltered. Each refusal is one MigrateError.

Each check is given what it compares, never the whole settings: the options as a run records
them (`Settings.recorded()`, JSON values), the stores reached now and the connection that
reached them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from migrate.connection import Connection
from migrate.diff.plan import Plan, ReviewedPlan, readable_writer_digest
from migrate.errors import MigrateError, PlanRefused
from migrate.journal.journal import DONE, Journal, Run
from migrate.options import flag, shown
from migrate.stores import Stores, same_clusters

# The addresses of the stores: compared by the clusters' identity, not as spelled.
ADDRESSES = ("bootstrap_server", "zookeeper")
# Where in ZooKeeper the offsets are: compared as written.
ZK_PLACE = ("zk_root", "path_template")


def changes(before: Mapping[str, Any], now: Mapping[str, Any], keys: tuple[str, ...]) -> list[str]:
    """Each of `keys` whose value differs, as `--flag: then, now`."""
    return [f"{flag(k)}: {shown(k, before.get(k))} then, {shown(k, now.get(k))} now"
            for k in keys if before.get(k) != now.get(k)]


def journaled(journal: Journal, run_id: str, kinds: tuple[str, ...] = ()) -> Run:
    """The run `run_id` of one of `kinds` (any kind when empty); MigrateError if there is none."""
    run = journal.run(run_id)
    if run is None or (kinds and run.kind not in kinds):
        kind = " or ".join(kinds) + " " if kinds else ""
        raise MigrateError(f"no {kind}run {run_id} in {journal.path}; "
                           "`zk2kafka status` lists them")
    return run


def plan_file(run: Run) -> Path:
    """The plan.parquet a migrate run was made from."""
    return Path(run.report or "", "plan.parquet")


def resumable(journal: Journal, run_id: str, given: Mapping[str, Any]) -> Run:
    """The migrate run `run_id`, if it may go on with its plan and with the options `given` (those
    of the recorded options the operator gave with --resume, as JSON values)."""
    run = journaled(journal, run_id, ("migrate",))
    rolled_back = journal.rollback_of(run.run_id)
    if rolled_back is not None:
        # The rollback put its groups' before-values back: resuming would write them again over
        # that.
        raise MigrateError(f"cannot resume {run.run_id}: it was rolled back by "
                           f"{rolled_back.run_id} ({rolled_back.state}); "
                           "start a new run to migrate again")
    changed = changes(run.settings, given, tuple(k for k in given if k not in ADDRESSES))
    if changed:
        raise MigrateError(f"cannot resume {run.run_id}: the options changed since it began "
                           f"({'; '.join(changed)}); leave them out (a resume takes its run's "
                           "own), or start a new run")
    if readable_writer_digest(plan_file(run)) != run.plan_hash:
        raise MigrateError(f"cannot resume {run.run_id}: "
                           f"its plan {plan_file(run)} is missing or was altered")
    return run


def same_stores(run: Run, now: Stores, connection: Connection, recorded: Mapping[str, Any],
                verb: str, *, zookeeper: bool | None = None) -> bool:
    """Whether the run wrote ZooKeeper too; MigrateError unless the stores reached now (`now`,
    through `connection`) are the clusters it wrote, whatever address reaches them, and its
    offsets are where `recorded` (the options now, as a run records them) says. `zookeeper`:
    compare ZooKeeper too (by default where the run wrote it).

    Restoring or checking other stores than the run's would "succeed" at nothing.
    """
    wrote_zk = not run.settings.get("no_zk_write")
    zookeeper = wrote_zk if zookeeper is None else zookeeper
    elsewhere = same_clusters(Stores.from_json(run.settings.get("stores")), now, run.settings,
                              connection, f"run {run.run_id}", zookeeper=zookeeper)
    elsewhere += changes(run.settings, recorded, ZK_PLACE if zookeeper else ())
    if elsewhere:
        raise MigrateError(f"cannot {verb} {run.run_id}: it wrote to other stores than these "
                           f"({'; '.join(elsewhere)}); "
                           "point the connection options at the ones it wrote")
    return wrote_zk


def not_rolled_back(journal: Journal, run_id: str) -> Run | None:
    """The unfinished rollback of `run_id` to go on with, if any; MigrateError if one finished."""
    previous = journal.rollback_of(run_id)
    if previous is not None and previous.state == DONE:
        # Its znodes now carry the rollback's versions: a second pass would only fail every group.
        raise MigrateError(f"run {run_id} was already rolled back by {previous.run_id}; "
                           "nothing to do")
    return previous


def no_conflicts(on_conflict: str, plan: Plan) -> None:
    """--on-conflict fail: a fresh plan with CONFLICT rows is not written at all."""
    counts = plan.summary["counts"]
    if on_conflict == "fail" and counts["CONFLICT"]:
        raise MigrateError(f"--on-conflict fail: {counts['CONFLICT']} CONFLICT row(s) "
                           f"(see {plan.files['markdown']}); nothing was written")


def executable(reviewed: ReviewedPlan, now: Stores, connection: Connection,
               recorded: Mapping[str, Any], *, execute: bool, max_plan_age: float,
               zookeeper: bool = True) -> None:
    """PlanRefused for a reviewed plan made against other stores than `now` (by identity, reached
    through `connection`) or with other policies or selection than `recorded` (the options now,
    as a run records them), older than `max_plan_age`, or with CONFLICT rows under --on-conflict
    fail. `zookeeper`: compare ZooKeeper too (not when a plan read from a snapshot finds no
    ZooKeeper to check against)."""
    current = {**recorded, "execute": execute,
               "zk_root": recorded["path_template"] or recorded["zk_root"]}
    inputs = reviewed.summary.get("inputs", {})
    elsewhere = same_clusters(Stores.from_json(inputs.get("stores")), now, inputs, connection,
                              f"plan {reviewed.id}", zookeeper=zookeeper)
    refusals = reviewed.refusals(current, max_plan_age, elsewhere)
    if refusals:
        raise PlanRefused(reviewed.id, "; ".join(refusals) + "; nothing was written")
    policies = reviewed.summary.get("policies", {})
    could_move_zk = (policies.get("on_conflict") in ("kafka", "max")
                     or policies.get("out_of_range") == "clamp")
    if (could_move_zk and not inputs.get("no_zk_write")
            and "zk_change" not in pq.read_schema(reviewed.file).names):
        # Its rows may set ZooKeeper to Kafka's offset or a log bound, which it never showed.
        raise PlanRefused(reviewed.id, "made by an older zk2kafka, which did not show what each "
                                       "row does to ZooKeeper's offset; make and review a fresh "
                                       "`zk2kafka diff`; nothing was written")
    counts = reviewed.summary["counts"]
    if recorded["on_conflict"] == "fail" and counts.get("CONFLICT"):
        raise PlanRefused(reviewed.id, f"--on-conflict fail: {counts['CONFLICT']} CONFLICT row(s) "
                                       f"(see {reviewed.report / 'report.md'}); "
                                       "nothing was written")
