"""`migrate --execute`: a journaled run of a fresh plan (`fresh`) or of a reviewed one
(`reviewed`, `--plan`, which without --execute is the same run up to the first write, on a
throwaway journal).

Each reads top to bottom: the plan, loaded; checked against the stores and options now; journaled
with the options the run records; written (write_phase); reported (results.py). Each step is
given only what it uses.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, NamedTuple

from migrate import group_map, stores
from migrate.diff.plan import Plan, PlannedByGroup, ReviewedPlan, commits, writer_digest
from migrate.diff.schema import blocked_groups
from migrate.journal.journal import Journal
from migrate.settings import Settings
from migrate.state import new_run_id
from migrate.write import guards, results, writer_shards
from migrate.write.applied import already_applied
from migrate.write.phase import write_phase
from migrate.write.renamed import RECORD_KEY
from migrate.write.review import Review
from migrate.write.scratch import scratch_journal
from migrate.write.sessions import WriterOptions
from migrate.write.snapshot_plan import for_writing

log = logging.getLogger(__name__)


class JournalPlan(NamedTuple):
    """A plan's commit rows per group, and the groups left with nothing to commit (and why)."""

    groups: PlannedByGroup
    skipped: dict[str, str]
    file: Path

    def rows(self) -> Iterator[tuple]:
        """The commit rows as the journal takes them (COMMIT_COLUMNS), a batch at a time."""
        for batch in commits(self.file):
            yield from zip(*(column.to_pylist() for column in batch.columns))


def fresh(settings: Settings, plan: Plan) -> dict[str, Any]:
    """migrate --execute: the dual commit of a fresh plan (the diff just made), group by group,
    journaled; the run's data."""
    settings, rechecked = for_writing(settings, plan.summary["inputs"])
    renamed = (plan.summary["inputs"].get("group_map") or {}).get("renamed") or {}
    options = WriterOptions.of(settings, renamed)
    guards.no_conflicts(settings.on_conflict, plan)
    writer_shards.warm_up(options.writers)
    planned = _journal_plan(plan)
    # The stores the diff reached a moment ago are the ones this run writes.
    reached = stores.Stores.from_json(plan.summary["inputs"].get("stores"))
    record, report = {**settings.recorded(), "stores": reached.to_json(),
                      RECORD_KEY: renamed}, plan.files["summary"]
    with Journal.open(settings.state_dir, writer=f"migrate --execute, run {plan.run}") as journal:
        journal.create_run(plan.run, "migrate", writer_digest(plan.files["plan"]), record,
                           planned.groups, planned.skipped, report=str(report.parent),
                           rows=planned.rows())
        written = write_phase(options, journal, plan.run, list(planned.groups))
        return _rechecked(results.of_run(journal.run(plan.run), written, plan.summary),
                          rechecked, settings)


def reviewed(settings: Settings) -> dict[str, Any]:
    """migrate --plan: the commit rows of a reviewed plan, as reviewed; no scan, no Spark.

    Without --execute, a dry run: what would be written, and which groups moved since the review.
    Raises PlanRefused for a plan altered since, made against other stores or policies, or too old.
    """
    settings.require("bootstrap_server")
    plan = ReviewedPlan.load(settings.plan, Path(settings.state_dir) / "reports")
    settings, rechecked = for_writing(settings, plan.summary.get("inputs", {}))
    if rechecked is None:
        settings.require("zookeeper")
    # The mapping now, over the plan's groups: another than the plan's is refused as drift.
    renamed = group_map.chosen(settings).resolve(g["group"] for g in plan.summary["per_group"])
    options, dry_run = WriterOptions.of(settings, renamed), not settings.execute
    zookeeper = options.reads_zk
    reached = stores.reach(settings.connection, zookeeper=zookeeper)
    recorded = {**settings.recorded(), RECORD_KEY: renamed}
    guards.executable(plan, reached, settings.connection, recorded, execute=settings.execute,
                      max_plan_age=settings.max_plan_age, zookeeper=zookeeper)
    writer_shards.warm_up(options.writers)
    planned = _planned(plan.file, plan.summary["per_group"])
    review = Review.of_plan(plan.file, set(planned.groups))
    run_id = new_run_id()
    with ExitStack() as stack:
        journal, history = _reviewed_journals(settings.state_dir, dry_run, stack,
                                              f"migrate --execute --plan {plan.id}, run {run_id}")
        done = (already_applied(history, plan.id, list(planned.groups), options.connection,
                                options.parallelism) if history is not None else {})
        reviewed_as = {"plan_id": plan.id, "already_applied": done,
                       # what a fresh diff and its plan, printed as advice, repeat
                       "group_map_flags": (plan.summary["inputs"].get("group_map") or {}).get(
                           "flags", [])}
        if done and len(done) == len(planned.groups):
            # Nothing left to write: no run is made, and the runs that wrote it stand as they are.
            return {**reviewed_as, "all_applied": True, "run": plan.run,
                    "report": str(plan.report), "dry_run": dry_run,
                    "blockers": plan.summary["blockers"]}
        todo = [g for g in planned.groups if g not in done]
        log.info("plan %s: %d group(s) to write, as reviewed", plan.id, len(todo))
        skipped = {**planned.skipped, **{g: f"already applied by run {r}" for g, r in done.items()}}
        record = {**recorded, "stores": reached.to_json(), "reviewed_plan": plan.id}
        journal.create_run(run_id, "migrate", writer_digest(plan.file), record,
                           dict.fromkeys(todo), skipped, report=str(plan.report),
                           rows=(row for row in planned.rows() if row[0] not in done))
        written = write_phase(options, journal, run_id, todo, review=review, dry_run=dry_run)
        if dry_run:
            return _rechecked({**results.of_dry_run(written, plan.summary), **reviewed_as,
                               "run": plan.run, "report": str(plan.report)}, rechecked, settings)
        return _rechecked({**results.of_run(journal.run(run_id), written, plan.summary,
                                            moved=True), **reviewed_as}, rechecked, settings)


def _rechecked(data: dict[str, Any], rechecked: str | None,
               settings: Settings) -> dict[str, Any]:
    """A run's data, with what a plan read from a snapshot checked ZooKeeper against (the
    ZooKeeper of `settings`, the write's, None when none answered), and whether it wrote it (the
    dual commit, --dual-commit)."""
    if rechecked is None:
        return data
    dual = not settings.no_zk_write
    return {**data, "zookeeper_side": {"from": "snapshot", "rechecked": rechecked,
                                        "zookeeper": settings.zookeeper, "dual_commit": dual,
                                        "zk_write": "the dual commit (--dual-commit)" if dual
                                        else "none (--no-zk-write implied)"}}


def _reviewed_journals(state_dir: Path, dry_run: bool, stack: ExitStack,
                       writer: str) -> tuple[Journal, Journal | None]:
    """The journal a reviewed plan's run writes, and the one that tells its earlier runs (None
    when the state dir has no journal yet).

    A real run writes the state dir's, locked, and reads it. A dry run is the real run's path
    on a throwaway journal (the same batches and prechecks, stopping at the first write), and
    the state dir's journal is only read.
    """
    if not dry_run:
        journal = stack.enter_context(Journal.open(state_dir, writer=writer))
        return journal, journal
    history = (stack.enter_context(Journal.open(state_dir))
               if Path(state_dir, "journal.sqlite").exists() else None)
    return stack.enter_context(scratch_journal()), history


def _journal_plan(plan: Plan) -> JournalPlan:
    """A fresh plan's commit rows per group for the journal, and the groups it leaves alone."""
    return _planned(plan.files["plan"], plan.summary["per_group"])


def _planned(plan_file: Path, per_group: list[dict[str, Any]]) -> JournalPlan:
    groups = PlannedByGroup(plan_file)
    planned, blocked = set(groups), blocked_groups(per_group)
    skipped = {g["group"]: "nothing to commit: " + (blocked.get(g["group"]) or ", ".join(
               f"{k} {n}" for k, n in g["counts"].items()))
               for g in per_group if g["group"] not in planned}
    return JournalPlan(groups, skipped, plan_file)
