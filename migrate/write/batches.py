"""Batching for the applying stage: a run's groups taken through the writer a batch at a time,
a few batches in flight, with Ctrl-C finishing those in flight and starting no more."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import NamedTuple

from migrate.progress import Progress
from migrate.write.dual_commit import Outcome

log = logging.getLogger(__name__)


class Batched(NamedTuple):
    """What run_batches() did: each group's outcome, and whether Ctrl-C cut the run short."""

    outcomes: list[Outcome]
    interrupted: bool


def run_batches(groups: list[str], work: Callable[[list[str]], list[Outcome]], batch: int,
                workers: int, progress: Progress,
                stopped: Callable[[], bool] | None = None) -> Batched:
    """Run `work` over batches of groups, `workers` batches at a time; on Ctrl-C (or once
    `stopped()` says so: a writer process told by its parent) finish those in flight, start
    no more.

    Returns the outcomes, in the order the batches finished, and whether it was interrupted.
    """
    outcomes: list[Outcome] = []
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="zk2kafka-writer")
    pending = iter([groups[i:i + batch] for i in range(0, len(groups), max(1, batch))])
    running: set = set()
    interrupted = False

    def take(done) -> None:
        for future in done:
            results = future.result()
            outcomes.extend(results)
            progress.advance(len(results), sum(o.offsets for o in results))

    try:
        while True:
            if stopped is not None and stopped():
                interrupted = True
                log.warning("stopping: finishing %d batch(es) in flight, starting no more",
                            len(running))
                take(running)
                break
            while len(running) < workers and (chunk := next(pending, None)) is not None:
                running.add(pool.submit(work, chunk))
            if not running:
                break
            done, running = wait(running, return_when=FIRST_COMPLETED)
            take(done)
    except KeyboardInterrupt:
        interrupted = True
        log.warning("interrupted: finishing %d batch(es) in flight, starting no more",
                    len(running))
        take(running)
    finally:
        pool.shutdown(wait=True)
    return Batched(outcomes, interrupted)
