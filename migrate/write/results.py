"""What a writing run's command prints and judges: the run's data after a pass of the write phase
(or a dry run's, or a rollback's), with what its terminal repeats of the plan, and the exit code
each earns."""

from __future__ import annotations

from typing import Any

from migrate.diff.plan import BLOCKED_SHOWN
from migrate.diff.schema import blocked_groups
from migrate.errors import EXIT_BLOCKERS, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from migrate.journal.journal import DONE, FAILED, PARTIAL, Run
from migrate.write.batches import Batched
from migrate.write.dual_commit import WOULD_WRITE
from migrate.write.phase import Written


def of_run(run: Run, written: Written, summary: dict[str, Any], *,
           moved: bool = False) -> dict[str, Any]:
    """A journaled run after a pass of the write phase: the journal's view, what the pass did,
    and what the terminal repeats of the run's plan (`summary`: its summary.json). `moved`: name
    the groups whose stores moved since the plan (a reviewed plan's run)."""
    data = _after_pass(run, written.batched, summary)
    return {**data, "moved": sorted(written.moved)} if moved else data


def of_rollback(run: Run, batched: Batched) -> dict[str, Any]:
    """A rollback run after its pass: as of_run, with no plan of its own."""
    return _after_pass(run, batched, None)


def of_dry_run(written: Written, summary: dict[str, Any]) -> dict[str, Any]:
    """A dry run's pass (migrate --plan or --resume without --execute): what would be written,
    and which groups would not be, why."""
    batched, moved = written
    would = [o for o in batched.outcomes if o.state == WOULD_WRITE]
    failed = {o.group: o.reason for o in batched.outcomes if o.state != WOULD_WRITE}
    return {"dry_run": True, "would_write": {o.group: o.offsets for o in would},
            "moved": {g: failed[g] for g in sorted(moved)},
            "unchecked": {g: why for g, why in failed.items() if g not in moved},
            "interrupted": batched.interrupted,
            "failed": failed,   # moved and unchecked, in the order the groups were settled
            **_of_plan(summary)}


def _after_pass(run: Run, batched: Batched, summary: dict[str, Any] | None) -> dict[str, Any]:
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


def exit_code(data: dict[str, Any]) -> int:
    """A run's exit code: 130 when Ctrl-C stopped it, 1 while it is unfinished, 3 when its plan
    has blockers."""
    if data.get("interrupted"):
        return EXIT_INTERRUPTED
    if data["state"] != DONE:
        return EXIT_ERROR
    return EXIT_BLOCKERS if data["blockers"] else EXIT_OK


def dry_run_exit_code(data: dict[str, Any]) -> int:
    """130 if Ctrl-C cut it short, 1 if the dry run could not check every group, 3 if groups
    moved or the plan has blockers."""
    if data["interrupted"]:
        return EXIT_INTERRUPTED
    if len(data["failed"]) > len(data["moved"]):
        return EXIT_ERROR
    return EXIT_BLOCKERS if data["moved"] or data["blockers"] else EXIT_OK


def applied_exit_code(data: dict[str, Any]) -> int:
    """A plan applied again, every group already holding what an earlier run wrote: 0, or 3
    when the plan has blockers (left alone, as the first run left them)."""
    return EXIT_BLOCKERS if data["blockers"] else EXIT_OK
