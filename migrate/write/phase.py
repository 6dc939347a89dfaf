"""The write phase of a journaled run: its groups through the dual commit, a batch at a time, in
this process or over `--writers N` writer processes (writer_shards.py), and the run's state
journaled after it (done, or incomplete with work left for resume)."""

from __future__ import annotations

from typing import NamedTuple

from migrate.errors import StateDirError
from migrate.journal.journal import (COMMITTED, DONE, FAILED, INCOMPLETE, PARTIAL, PENDING,
                                     RUNNING, Journal)
from migrate.progress import Progress
from migrate.write import writer_shards
from migrate.write.batches import Batched, run_batches
from migrate.write.review import Review
from migrate.write.sessions import WriterOptions, migrate_writer, open_writers

WRITE_BATCH = 250   # groups per batch of the dual commit
UNFINISHED = (PENDING, COMMITTED, FAILED, PARTIAL)   # the group states a run still has work in


class Written(NamedTuple):
    """What one pass of the write phase did: each group's outcome and whether Ctrl-C cut it short
    (as run_batches answers), and the groups whose stores moved since the plan."""

    batched: Batched
    moved: set[str]


def write_phase(options: WriterOptions, journal: Journal, run_id: str, groups: list[str], *,
                review: Review | None = None, dry_run: bool = False) -> Written:
    """The dual commit over `groups` of the journaled run `run_id`; the run is then journaled
    done, or incomplete where groups are left.

    `review`: a reviewed plan's groups and logs as the diff saw them (migrate --plan).
    `dry_run`: the same path, stopping before the first write (on a throwaway journal).
    Raises StateDirError naming the resume when the journal could not record a step.
    """
    label = "groups checked" if dry_run else "groups written"
    try:
        journal.set_run(run_id, RUNNING)
        if writer_shards.processes(options.writers, groups, WRITE_BATCH) > 1:
            with Progress(label, total=len(groups)) as progress:
                batched, moved = writer_shards.write(options, journal.path.parent, run_id, groups,
                                                     WRITE_BATCH, review, dry_run, progress)
        else:
            with open_writers(options.connection, options.parallelism,
                              zk=options.reads_zk, renamed=options.renamed) as writers:
                writer = migrate_writer(options, journal, run_id, writers, review, dry_run)
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
    return Written(batched, moved)
