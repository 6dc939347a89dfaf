"""Applying: the journaled runs (migrate --execute of a fresh or a reviewed plan, rollback) and
status, each returning the data its command prints and judges; `write_groups` takes a run's
groups through the dual commit for them and for resume (resume.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, NamedTuple

from migrate import stores
from migrate.diff.plan import (BLOCKED_SHOWN, Plan, PlannedByGroup, ReviewedPlan, commits,
                               writer_digest)
from migrate.diff.schema import blocked_groups
from migrate.errors import EXIT_BLOCKERS, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, StateDirError
from migrate.journal.journal import (COMMITTED, DONE, FAILED, INCOMPLETE, PARTIAL, PENDING,
                                     RUNNING, VERIFIED, Journal, Run)
from migrate.journal.locks import WriterLock
from migrate.progress import Progress
from migrate.settings import Settings
from migrate.state import new_run_id
from migrate.write import guards, writer_shards
from migrate.write.applied import already_applied
from migrate.write.batches import Batched, run_batches
from migrate.write.dual_commit import WOULD_WRITE, DualCommit
from migrate.write.review import Review
from migrate.write.scratch import scratch_journal
from migrate.write.sessions import migrate_writer, open_writers

log = logging.getLogger(__name__)

WRITE_BATCH = 250   # groups per batch of the dual commit
UNFINISHED = (PENDING, COMMITTED, FAILED, PARTIAL)   # the group states a run still has work in
# What status shows for a run journaled running whose process is gone: nothing holds the lock.
INTERRUPTED = "interrupted"


class JournalPlan(NamedTuple):
    """A plan's commit rows per group, and the groups left with nothing to commit (and why)."""

    groups: PlannedByGroup
    skipped: dict[str, str]
    file: Path

    def rows(self) -> Iterator[tuple]:
        """The commit rows as the journal takes them (COMMIT_COLUMNS), a batch at a time."""
        for batch in commits(self.file):
            yield from zip(*(column.to_pylist() for column in batch.columns))


def execute(settings: Settings, plan: Plan) -> dict[str, Any]:
    """migrate --execute: the dual commit of a fresh plan, group by group, journaled."""
    guards.no_conflicts(settings, plan)
    writer_shards.warm_up(settings)
    planned = _journal_plan(plan)
    report = str(plan.files["summary"].parent)
    # The stores the diff reached a moment ago are the ones this run writes.
    reached = stores.Stores.from_json(plan.summary["inputs"].get("stores"))
    with Journal.open(settings.state_dir, writer=f"migrate --execute, run {plan.run}") as journal:
        journal.create_run(plan.run, "migrate", writer_digest(plan.files["plan"]),
                           guards.settings_record(settings, reached), planned.groups,
                           planned.skipped, report=report, rows=planned.rows())
        return write_groups(settings, journal, plan.run, list(planned.groups), plan.summary)


def reviewed(settings: Settings) -> dict[str, Any]:
    """migrate --plan: the commit rows of a reviewed plan, as reviewed; no scan, no Spark.

    Without --execute, a dry run: what would be written, and which groups moved since the review.
    Raises PlanRefused for a plan altered since, made against other stores or policies, or too old.
    """
    settings.require("zookeeper")
    settings.require("bootstrap_server")
    plan = ReviewedPlan.load(settings.plan, Path(settings.state_dir) / "reports")
    reached = stores.reach(settings.connection)
    guards.executable(plan, settings, reached)
    writer_shards.warm_up(settings)
    planned = _planned(plan.file, plan.summary["per_group"])
    review = Review.of_plan(plan.file, set(planned.groups))
    record = {**guards.settings_record(settings, reached), "reviewed_plan": plan.id}
    run_id = new_run_id()
    with ExitStack() as stack:
        journal, history = _reviewed_journals(settings, stack, f"migrate --execute --plan "
                                                               f"{plan.id}, run {run_id}")
        done = (already_applied(history, plan.id, list(planned.groups), settings)
                if history is not None else {})
        reviewed_as = {"plan_id": plan.id, "already_applied": done}
        if done and len(done) == len(planned.groups):
            # Nothing left to write: no run is made, and the runs that wrote it stand as they are.
            return {**reviewed_as, "all_applied": True, "run": plan.run,
                    "report": str(plan.report), "dry_run": not settings.execute,
                    "blockers": plan.summary["blockers"]}
        todo = [g for g in planned.groups if g not in done]
        log.info("plan %s: %d group(s) to write, as reviewed", plan.id, len(todo))
        skipped = {**planned.skipped, **{g: f"already applied by run {r}" for g, r in done.items()}}
        journal.create_run(run_id, "migrate", writer_digest(plan.file), record,
                           dict.fromkeys(todo), skipped, report=str(plan.report),
                           rows=(row for row in planned.rows() if row[0] not in done))
        data = write_groups(settings, journal, run_id, todo, plan.summary,
                            review=review, reviewed=plan, dry_run=not settings.execute)
    if settings.execute:
        return {**data, **reviewed_as}
    return {**data, **reviewed_as, "run": plan.run, "report": str(plan.report)}


def _reviewed_journals(settings: Settings, stack: ExitStack,
                       writer: str) -> tuple[Journal, Journal | None]:
    """The journal a reviewed plan's run writes, and the one that tells its earlier runs (None
    when the state dir has no journal yet).

    With --execute both are the state dir's, locked. Without, the run is the real run's path on a
    throwaway journal (the same batches and prechecks, stopping at the first write), and the
    state dir's journal is only read.
    """
    if settings.execute:
        journal = stack.enter_context(Journal.open(settings.state_dir, writer=writer))
        return journal, journal
    history = (stack.enter_context(Journal.open(settings.state_dir))
               if Path(settings.state_dir, "journal.sqlite").exists() else None)
    return stack.enter_context(scratch_journal()), history


def write_groups(settings: Settings, journal: Journal, run_id: str, groups: list[str],
                 summary: dict[str, Any], *, review: Review | None = None,
                 reviewed: ReviewedPlan | None = None, dry_run: bool = False) -> dict[str, Any]:
    """The dual commit over `groups` of a journaled run, then the run's state, as data, with
    what the terminal repeats of its plan's `summary` (blockers, warnings).

    `review` and `reviewed`: a reviewed plan's groups and logs as the diff saw them, and the
    plan (migrate --plan).
    `dry_run`: the same path, stopping before the first write (on a throwaway journal).
    """
    label = "groups checked" if dry_run else "groups written"
    try:
        journal.set_run(run_id, RUNNING)
        if writer_shards.processes(settings, groups, WRITE_BATCH) > 1:
            with Progress(label, total=len(groups)) as progress:
                batched, moved = writer_shards.write(settings, journal.path.parent, run_id, groups,
                                              WRITE_BATCH, review, dry_run, progress)
        else:
            with open_writers(settings, zk=True) as writers:
                writer = migrate_writer(settings, journal, run_id, writers, review, dry_run)
                with Progress(label, total=len(groups)) as progress:
                    # Two batches in flight: one's reads and journal writes overlap the other's
                    # commits.
                    batched = run_batches(groups, writer.migrate, WRITE_BATCH, 2, progress)
                moved = writer.moved
        run = journal.run(run_id)
        finished = not batched.interrupted and all(run.groups[s] == 0 for s in UNFINISHED)
        journal.set_run(run_id, DONE if finished else INCOMPLETE)
    except StateDirError as exc:
        # The journal could not record a step (a full disk): the step it missed is re-checked
        # on resume.
        raise StateDirError(exc.path, exc.reason,
                            resume=f"zk2kafka migrate --execute --resume {run_id}") from exc
    if dry_run:
        return _dry_run_data(batched, moved, summary)
    data = _run_data(journal.run(run_id), batched, summary)
    if reviewed is None:
        return data
    return {**data, "moved": sorted(moved)}


def _dry_run_data(batched: Batched, moved: set[str], summary: dict[str, Any]) -> dict[str, Any]:
    """A dry run's pass (migrate --plan or --resume without --execute): what would be written,
    and which groups would not be, why."""
    would = [o for o in batched.outcomes if o.state == WOULD_WRITE]
    failed = {o.group: o.reason for o in batched.outcomes if o.state != WOULD_WRITE}
    return {"dry_run": True, "would_write": {o.group: o.offsets for o in would},
            "moved": {g: failed[g] for g in sorted(moved)},
            "unchecked": {g: why for g, why in failed.items() if g not in moved},
            "interrupted": batched.interrupted,
            "failed": failed,   # moved and unchecked, in the order the groups were settled
            **_of_plan(summary)}


def dry_run_exit_code(data: dict[str, Any]) -> int:
    """130 if Ctrl-C cut it short, 1 if the dry run could not check every group, 3 if groups
    moved or the plan has blockers."""
    if data["interrupted"]:
        return EXIT_INTERRUPTED
    if len(data["failed"]) > len(data["moved"]):
        return EXIT_ERROR
    return EXIT_BLOCKERS if data["moved"] or data["blockers"] else EXIT_OK


def _run_data(run: Run, batched: Batched, summary: dict[str, Any] | None) -> dict[str, Any]:
    """A journaled run after this pass: the journal's view, and what this pass did."""
    outcomes = batched.outcomes
    return {**run.to_json(), "written": sum(o.offsets for o in outcomes),
            "interrupted": batched.interrupted,
            "failed": {o.group: o.reason for o in outcomes if o.state == FAILED},
            "partial": {o.group: o.reason for o in outcomes if o.state == PARTIAL},
            **_of_plan(summary),
            # The groups this pass left with a reason, in the order they were settled.
            "reasons": [{"group": o.group, "state": o.state, "reason": o.reason}
                        for o in outcomes if o.reason or o.state in (FAILED, PARTIAL)]}


def _of_plan(summary: dict[str, Any] | None) -> dict[str, Any]:
    """What a run's terminal repeats of its plan: its blocker rows, the groups that have them
    (each with why), and the plan's warnings (Kafka's retention among them)."""
    if summary is None:   # a rollback: no plan of its own
        return {"blockers": 0, "blocked": {}, "warnings": []}
    return {"blockers": summary["blockers"],
            "blocked": blocked_groups(summary.get("per_group", []), BLOCKED_SHOWN),
            "warnings": summary.get("warnings", [])}


def applied_exit_code(data: dict[str, Any]) -> int:
    """A plan applied again, every group already holding what an earlier run wrote: 0, or 3
    when the plan has blockers (left alone, as the first run left them)."""
    return EXIT_BLOCKERS if data["blockers"] else EXIT_OK


def exit_code(data: dict[str, Any]) -> int:
    """A run's exit code: 130 when Ctrl-C stopped it, 1 while it is unfinished, 3 when its plan
    has blockers."""
    if data.get("interrupted"):
        return EXIT_INTERRUPTED
    if data["state"] != DONE:
        return EXIT_ERROR
    return EXIT_BLOCKERS if data["blockers"] else EXIT_OK


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


def rollback(settings: Settings, run_id: str) -> dict[str, Any]:
    """Put back the values a run journaled before it wrote, in Kafka and ZooKeeper (with --execute);
    without it, what would be restored."""
    writer = f"rollback --execute {run_id}" if settings.execute else None   # a dry run only reads
    with Journal.open(settings.state_dir, writer=writer) as journal:
        original = guards.journaled(journal, run_id, ("migrate", "sync"))
        wrote_zk = not original.settings.get("no_zk_write")
        touched = [g.name for g in journal.groups(run_id) if g.before_recorded]
        offsets = sum(map(len, journal.partitions_of(run_id, touched).values()))
        if not settings.execute:
            return {"run": run_id, "groups": len(touched), "offsets": offsets, "dry_run": True,
                    "wrote_zookeeper": wrote_zk}
        reached = stores.reach(settings.connection, zookeeper=wrote_zk)
        guards.same_stores(original, settings, reached, "roll back")
        previous = guards.not_rolled_back(journal, run_id)
        # Both stores are reachable before anything is journaled.
        with open_writers(settings, zk=wrote_zk) as writers:
            if previous is not None:
                rollback_id = previous.run_id  # an interrupted rollback goes on
            else:
                rollback_id = new_run_id()
                journal.create_run(rollback_id, "rollback", original.plan_hash, original.settings,
                                   {g: [] for g in touched}, rolls_back=run_id,
                                   report=original.report)
            todo = [g.name for g in journal.groups(rollback_id) if g.state != VERIFIED]
            journal.set_run(rollback_id, RUNNING)
            # The run's own semantics: they decide which znode bytes are the ones it wrote.
            writer = DualCommit(journal, rollback_id, writers.kafka, writers.zk, "",
                                original.settings["offset_semantics"])
            with Progress("groups rolled back", total=len(todo)) as progress:
                batched = run_batches(todo, lambda gs: [writer.rollback(g, run_id) for g in gs],
                                      1, settings.parallelism, progress)
        run = journal.run(rollback_id)
        done = not batched.interrupted and run.groups[VERIFIED] == len(touched)
        journal.set_run(rollback_id, DONE if done else INCOMPLETE)
        return _run_data(journal.run(rollback_id), batched, None)


def status(settings: Settings, run_id: str | None = None) -> dict[str, Any]:
    """Runs in the journal, or one run with the reasons of its groups that failed and its plan's
    groups with blocker rows. A run journaled running whose process is gone (the writers' lock is
    free, or held by another run's writer) is `interrupted`."""
    path = Path(settings.state_dir) / "journal.sqlite"
    if not path.exists():
        return {"runs": [], "missing_journal": f"{settings.state_dir}/journal.sqlite"}
    holder = WriterLock.holder(Path(settings.state_dir))
    with Journal.open(settings.state_dir) as journal:
        if run_id is None:
            return {"runs": [shown(r, holder) for r in journal.runs()]}
        run = guards.journaled(journal, run_id)
        groups = journal.groups(run_id)
    blocked = _blocked(run.report) if run.kind == "migrate" else {}
    return {**shown(run, holder), "failed": {g.name: g.reason for g in groups if g.state == FAILED},
            "partial": {g.name: g.reason for g in groups if g.state == PARTIAL},
            "blocked": blocked}


def shown(run: Run, holder: str | None) -> dict[str, Any]:
    """A run's data as status shows it: `interrupted` where the journal says running and no
    writer of it is alive (its process was killed, or crashed). `holder`: who holds the writers'
    lock now (WriterLock.holder)."""
    data = run.to_json()
    if run.state == RUNNING and not _writing(run, holder):
        data["state"] = INTERRUPTED
    return data


def _writing(run: Run, holder: str | None) -> bool:
    """Whether the lock's holder is the writer of `run`: it names the run (a rollback: the run
    it rolls back); one that has not written its name yet may be."""
    if holder is None:
        return False
    if not holder or run.run_id in holder:
        return True
    return run.kind == "rollback" and f"rollback --execute {run.rolls_back}" in holder


def _blocked(report: str | None) -> dict[str, str]:
    """The groups of the run's plan with blocker rows, with why (from its summary.json)."""
    try:
        per_group = json.loads(Path(report or "", "summary.json").read_text())["per_group"]
    except (OSError, ValueError, KeyError):   # a report moved away: status still answers
        return {}
    return blocked_groups(per_group)
