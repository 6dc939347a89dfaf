"""`migrate --execute --writers N`: the write phase sharded over N writer processes.

One process is the limit of the writer: on a small machine it is CPU-bound on kafka-python's and
kazoo's encoding, under one GIL. So, as `scan --zk-readers N` does for reading, N processes each
open their own Kafka and ZooKeeper sessions and take whole groups, a batch at a time (batch k goes
to process k mod N). Each Kafka request stays per coordinator inside a process; each group's
ZooKeeper transaction stays whole in the one process that owns the group.

The journal stays one: every writer process opens the run's SQLite journal and journals its own
groups' transitions, each one transaction after its effect was confirmed, exactly as the single
process does; SQLite serialises the processes' transactions. The command's process holds the
state dir's writers' lock for all of them, and its writer processes die with it (`kill -9`
included), so resume, rollback and verify read the same journal as after a one-process run.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import NamedTuple

from migrate import processes as workers
from migrate.errors import EXIT_ERROR, MigrateError, StateDirError, WorkerFailed
from migrate.journal.journal import Journal
from migrate.progress import Progress
from migrate.write.batches import Batched, run_batches
from migrate.write.dual_commit import WRITER_PARENT_ENV
from migrate.write.review import Review
from migrate.write.sessions import WriterOptions, migrate_writer, open_writers

log = logging.getLogger(__name__)


class Sharded(NamedTuple):
    """What the writer processes did: as run_batches' answer, plus the groups that moved."""

    batched: Batched
    moved: set[str]


class _Done(NamedTuple):
    """One writer process's answer: its outcomes, or the error that stopped it, by kind."""

    batched: Batched | None
    moved: set[str]
    state_dir_error: tuple[str, str] | None = None   # (path, reason)
    error: tuple[str, int] | None = None   # (its one line, its exit code)


def warm_up(writers: int) -> None:
    """Start the writer processes' server now, when --writers asks for more than one: it starts
    while the command reads and journals the plan (migrate/processes.py)."""
    if writers > 1:
        workers.warm_up(__name__)


def processes(writers: int, groups: list[str], batch: int) -> int:
    """How many writer processes a run of `groups` gets: `writers` (--writers), at most one per
    batch."""
    return max(1, min(writers, -(-len(groups) // batch)))


def write(options: WriterOptions, journal_dir: Path, run_id: str, groups: list[str], batch: int,
          review: Review | None, dry_run: bool, progress: Progress) -> Sharded:
    """The dual commit of `groups` over `processes()` writer processes; their outcomes merged.

    Ctrl-C tells every process to finish its batches in flight and start no more. Raises
    StateDirError when a process could not journal a step, MigrateError when one failed
    otherwise (the journal says what it had done; a resume finishes the rest).
    """
    n = processes(options.writers, groups, batch)
    batches = [groups[i:i + batch] for i in range(0, len(groups), batch)]
    shards = [[g for chunk in batches[k::n] for g in chunk] for k in range(n)]
    ctx = workers.context()
    counts, stop = ctx.Array("q", 2), ctx.Event()
    writers = workers.Workers(_shard, [
        (os.getpid(), options, journal_dir, run_id, shard, batch,
         None if review is None else review.of(shard), dry_run, counts, stop) for shard in shards],
        "zk2kafka-writer")
    try:
        answers = _collect(writers, counts, stop, progress)
    except BaseException:
        # A second Ctrl-C, or this process failing: its writer processes stop where they are,
        # as a kill would stop them; the journal says what they did.
        writers.kill()
        raise
    finally:
        writers.close(timeout=30)
    return _merge(answers, stop.is_set())


def _collect(writers: workers.Workers, counts, stop, progress: Progress) -> list[_Done]:
    """Each process's answer, the progress bar kept up meanwhile; Ctrl-C sets `stop`."""
    answers: dict[int, _Done] = {}
    while len(answers) < len(writers):
        try:
            for k, pipe in enumerate(writers.pipes):
                if k not in answers and pipe.poll(0.1):
                    answers[k] = _receive(k, pipe)
                elif k not in answers and not writers.alive(k) and not pipe.poll(0):
                    answers[k] = _Done(None, set(), error=(
                        f"writer process {k} died (exit {writers.exitcode(k)}); the journal "
                        "holds what was written: resume the run", EXIT_ERROR))
            done, offsets = counts[0], counts[1]
            progress.advance(done - progress.done, offsets - progress.offsets)
        except KeyboardInterrupt:
            if stop.is_set():
                raise   # a second Ctrl-C: stop now; the journal says what was done
            log.warning("interrupted: each writer process finishes its batches in flight, "
                        "starting no more")
            stop.set()
    progress.advance(counts[0] - progress.done, counts[1] - progress.offsets)
    return [answers[k] for k in range(len(writers))]


def _receive(k: int, pipe) -> _Done:
    try:
        return pipe.recv()
    except EOFError:
        return _Done(None, set(), error=(f"writer process {k} ended without an answer; the "
                                         "journal holds what was written: resume the run",
                                         EXIT_ERROR))


def _merge(answers: list[_Done], stopped: bool) -> Sharded:
    for done in answers:
        if done.state_dir_error is not None:
            raise StateDirError(Path(done.state_dir_error[0]), done.state_dir_error[1])
    errors = [done.error for done in answers if done.error is not None]
    if errors:
        raise WorkerFailed(*errors[0])
    outcomes = [o for done in answers for o in done.batched.outcomes]
    interrupted = stopped or any(done.batched.interrupted for done in answers)
    return Sharded(Batched(outcomes, interrupted), set().union(*(d.moved for d in answers)))


# -- in a writer process ---------------------------------------------------------------------------

class _Shared:
    """run_batches' progress, added to the counts the command's process shows."""

    def __init__(self, counts):
        self.counts = counts

    def advance(self, n: int = 1, offsets: int = 0) -> None:
        with self.counts.get_lock():
            self.counts[0] += n
            self.counts[1] += offsets


def _shard(pipe, parent: int, options: WriterOptions, journal_dir: Path, run_id: str,
           groups: list[str], batch: int, review: Review | None, dry_run: bool, counts,
           stop) -> None:
    """A writer process of the command's process `parent`: its groups through the dual commit,
    its answer sent down `pipe`."""
    os.environ[WRITER_PARENT_ENV] = str(parent)   # see crash_point()
    try:
        with (Journal.open(journal_dir) as journal,
              open_writers(options.connection, options.parallelism,
                           zk=options.reads_zk, renamed=options.renamed) as writers):
            writer = migrate_writer(options, journal, run_id, writers, review, dry_run)
            batched = run_batches(groups, writer.migrate, batch, 2, _Shared(counts), stop.is_set)
            answer = _Done(batched, writer.moved)
    except StateDirError as exc:
        answer = _Done(None, set(), state_dir_error=(str(exc.path), exc.reason))
    except MigrateError as exc:   # e.g. a store that cannot be reached: the line it would print
        answer = _Done(None, set(), error=(str(exc), exc.exit_code))
    except Exception as exc:  # noqa: BLE001 - sent to the command's process, which says it
        log.debug("writer process failed", exc_info=True)
        answer = _Done(None, set(), error=(f"writer process: {type(exc).__name__}: {exc}",
                                           EXIT_ERROR))
    pipe.send(answer)
    pipe.close()
