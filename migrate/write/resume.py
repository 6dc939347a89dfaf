"""migrate --resume RUN: the run goes on with its own selection and policies (from the journal;
options given with it must agree), against the same clusters. Without --execute it is the same
path up to the first write, on a throwaway copy of the run's journal: no lock, nothing changed.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from migrate import stores
from migrate.diff.plan import ReviewedPlan
from migrate.errors import MigrateError, StateDirError
from migrate.journal.journal import Journal
from migrate.journal.locks import WriterLock
from migrate.settings import Settings
from migrate.write import guards, writer_shards
from migrate.write.review import Review
from migrate.write.runs import UNFINISHED, shown, write_groups
from migrate.write.scratch import copy_of_run

log = logging.getLogger(__name__)


def resume(settings: Settings) -> dict[str, Any]:
    """migrate --resume: verified groups stay as they are, the rest are re-checked and finished
    (with --execute), or checked and shown (without).

    Raises MigrateError when the run cannot go on: options given that disagree with the run's,
    other clusters than it wrote, its plan altered, a rollback of it.
    """
    with Journal.open(settings.state_dir) as journal:   # reading: no lock
        run = guards.resumable(journal, settings)
    settings = guards.as_recorded(settings, run)
    # Resume reads ZooKeeper even where the run does not write it.
    reached = stores.reach(settings.connection)
    guards.same_stores(run, settings, reached, "resume", zookeeper=True)
    if not settings.execute:
        return _dry_run(settings, run.run_id)
    writer_shards.warm_up(settings)
    writer = f"migrate --execute --resume {run.run_id}"
    with Journal.open(settings.state_dir, writer=writer) as journal:
        run = guards.resumable(journal, settings)   # again, now that no other writer runs
        todo = _todo(journal, run.run_id)
        log.info("resuming %s: %d group(s) to finish", run.run_id, len(todo))
        data = write_groups(settings, journal, run.run_id, todo, _summary(run.report),
                            **_review(settings, run, todo))
    if run.settings.get("reviewed_plan"):
        return {**data, "plan_id": run.settings["reviewed_plan"]}
    return data


def _dry_run(settings: Settings, run_id: str) -> dict[str, Any]:
    """What the resume would write, on a copy of the run's journal: the state dir's is neither
    locked nor changed."""
    with Journal.open(settings.state_dir) as journal:
        run = journal.run(run_id)
        with copy_of_run(journal, run.run_id) as copy:
            todo = _todo(copy, run.run_id)
            log.info("resume of %s (dry run): %d group(s) to check", run.run_id, len(todo))
            data = write_groups(settings, copy, run.run_id, todo, _summary(run.report),
                                dry_run=True, **_review(settings, run, todo))
    return {**data, "run": run.run_id, "kind": "migrate", "report": run.report,
            "state": shown(run, WriterLock.holder(Path(settings.state_dir)))["state"],
            "groups": run.groups, "plan_id": run.settings.get("reviewed_plan")}


def _todo(journal: Journal, run_id: str) -> list[str]:
    return [g.name for g in journal.groups(run_id) if g.state in UNFINISHED]


def _review(settings: Settings, run, todo: list[str]) -> dict[str, Any]:
    """A reviewed plan's groups are still checked against its review."""
    if not run.settings.get("reviewed_plan"):
        return {}
    return {"review": Review.of_plan(guards.plan_file(run), set(todo)),
            "reviewed": ReviewedPlan.load(str(guards.plan_file(run).parent),
                                          Path(settings.state_dir) / "reports")}


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
