"""`status [RUN]`: the runs in the journal, or one run's groups by state with the reasons of those
that failed and its plan's groups with blocker rows. It only reads: the journal, and the writers'
lock (probed, never held), which tells a run whose process is gone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from migrate.diff.schema import blocked_groups
from migrate.journal.journal import FAILED, PARTIAL, RUNNING, Journal, Run
from migrate.journal.locks import WriterLock
from migrate.write import guards

# What status shows for a run journaled running whose process is gone: nothing holds the lock.
INTERRUPTED = "interrupted"


def status(state_dir: Path, run_id: str | None = None) -> dict[str, Any]:
    """Runs in the journal of `state_dir`, or one run with the reasons of its groups that failed
    and its plan's groups with blocker rows. A run journaled running whose process is gone (the
    writers' lock is free, or held by another run's writer) is `interrupted`."""
    path = Path(state_dir) / "journal.sqlite"
    if not path.exists():
        return {"runs": [], "missing_journal": f"{state_dir}/journal.sqlite"}
    holder = WriterLock.holder(Path(state_dir))
    with Journal.open(state_dir) as journal:
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
