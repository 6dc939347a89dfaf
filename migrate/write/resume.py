"""migrate --resume RUN: the run goes on with its own selection and policies (from the journal;
options given with it must agree), against the same clusters. Without --execute it is the same
path up to the first write, on a throwaway copy of the run's journal: no lock, nothing changed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

from migrate import stores
from migrate.diff.plan import ReviewedPlan
from migrate.errors import MigrateError, StateDirError
from migrate.journal.journal import Journal, Run
from migrate.journal.locks import WriterLock
from migrate.settings import RECORDED, Settings
from migrate.write import guards, results, writer_shards
from migrate.write.phase import UNFINISHED, write_phase
from migrate.write.review import Review
from migrate.write.scratch import copy_of_run
from migrate.write.sessions import WriterOptions
from migrate.write.renamed import of_run
from migrate.write.status import shown

log = logging.getLogger(__name__)


def resume(settings: Settings) -> dict[str, Any]:
    """migrate --resume: verified groups stay as they are, the rest are re-checked and finished
    (with --execute), or checked and shown (without).

    Raises MigrateError when the run cannot go on: options given that disagree with the run's,
    other clusters than it wrote, its plan altered, a rollback of it.
    """
    # The recorded options the operator gave: they must agree with the run's.
    given = {k: v for k, v in settings.recorded().items() if k in settings.given}
    with Journal.open(settings.state_dir) as journal:   # reading: no lock
        run = guards.resumable(journal, settings.resume, given)
    settings = _as_recorded(settings, run)
    # Resume reads ZooKeeper even where the run does not write it.
    reached = stores.reach(settings.connection)
    guards.same_stores(run, reached, settings.connection, settings.recorded(), "resume",
                       zookeeper=True)
    options = WriterOptions.of(settings, of_run(run.settings))
    if not settings.execute:
        return _dry_run(options, settings.state_dir, run.run_id)
    writer_shards.warm_up(options.writers)
    writer = f"migrate --execute --resume {run.run_id}"
    with Journal.open(settings.state_dir, writer=writer) as journal:
        run = guards.resumable(journal, run.run_id, given)   # again, now that no other writer runs
        todo = _todo(journal, run.run_id)
        log.info("resuming %s: %d group(s) to finish", run.run_id, len(todo))
        summary = _summary(run.report)
        review = _review(run, todo, settings.state_dir)
        written = write_phase(options, journal, run.run_id, todo, review=review)
        data = results.of_run(journal.run(run.run_id), written, summary, moved=review is not None)
    if run.settings.get("reviewed_plan"):
        return {**data, "plan_id": run.settings["reviewed_plan"]}
    return data


def _as_recorded(settings: Settings, run: Run) -> Settings:
    """`settings` with the run's own recorded options wherever the operator gave none: a resume
    goes on with the selection and policies its run began with."""
    taken = {k: tuple(v) if isinstance(v, list) else v for k, v in run.settings.items()
             if k in RECORDED and k not in settings.given}
    return dataclasses.replace(settings, **taken)


def _dry_run(options: WriterOptions, state_dir: Path, run_id: str) -> dict[str, Any]:
    """What the resume would write, on a copy of the run's journal: the state dir's is neither
    locked nor changed."""
    with Journal.open(state_dir) as journal:
        run = journal.run(run_id)
        with copy_of_run(journal, run.run_id) as copy:
            todo = _todo(copy, run.run_id)
            log.info("resume of %s (dry run): %d group(s) to check", run.run_id, len(todo))
            summary = _summary(run.report)
            review = _review(run, todo, state_dir)
            written = write_phase(options, copy, run.run_id, todo, review=review, dry_run=True)
    return {**results.of_dry_run(written, summary), "run": run.run_id, "kind": "migrate",
            "report": run.report, "state": shown(run, WriterLock.holder(Path(state_dir)))["state"],
            "groups": run.groups, "plan_id": run.settings.get("reviewed_plan")}


def _todo(journal: Journal, run_id: str) -> list[str]:
    return [g.name for g in journal.groups(run_id) if g.state in UNFINISHED]


def _review(run: Run, todo: list[str], state_dir: Path) -> Review | None:
    """A reviewed plan's groups are still checked against its review (None: not a reviewed plan's
    run). Raises PlanRefused when the plan is no longer the one reviewed."""
    if not run.settings.get("reviewed_plan"):
        return None
    review = Review.of_plan(guards.plan_file(run), set(todo))
    ReviewedPlan.load(str(guards.plan_file(run).parent), Path(state_dir) / "reports")
    return review


def _summary(report: str | None) -> dict[str, Any]:
    """The summary.json of the run's plan: its blockers, groups and warnings."""
    path = Path(report or "", "summary.json")
    try:
        summary = json.loads(path.read_text())
    except OSError as exc:
        raise StateDirError(path, f"cannot read the run's summary: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise MigrateError(f"{path}: not a summary zk2kafka wrote ({exc})") from exc
    if not isinstance(summary, dict) or "blockers" not in summary:
        raise MigrateError(f"{path}: not a summary zk2kafka wrote (no blockers)")
    return summary
