"""A large first read of `__consumer_offsets` split over worker processes (migrate/processes.py),
each reading a share of the partitions with a reader of its own and sending back what its groups'
records built (their GroupLogs, where each partition stands, its open transactions, the clocks it
measured). The decoding is Python, under one interpreter lock: on N cores, N readers read N times
the records a second, less what sending the state back costs (docs/performance.md).

Only partitions read from their start are shared out: a partition read on from a position needs
the state its groups have, which stays in the command's process. The command's reader takes the
answers in place of reading those partitions itself (reader.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from migrate import processes
from migrate.connection import Connection
from migrate.errors import WorkerFailed
from migrate.kafka.clocks import Clocks
from migrate.kafka.offsets_log.group import GroupLog

# A share: (partition, the followed groups of it, the watch's mark there or None)
Share = list[tuple[int, list[str], int | None]]


@dataclass
class ShareRead:
    """What a worker read: per partition, where it stands, its open transactions and its groups'
    state; the clocks measured, the records applied; why it did not finish (or None)."""

    why: str | None
    partitions: dict[int, tuple[int, dict, dict[str, GroupLog]]] = field(default_factory=dict)
    clocks: Clocks = field(default_factory=Clocks)
    records: int = 0


def read_shares(target, connection: Connection, shares: list[Share],
                budget: float) -> list[ShareRead]:
    """Each share read by a worker process of its own running `target(pipe, connection, share,
    budget)` (reader.read_share), within `budget` seconds; their answers. Raises
    WorkerFailed when one dies without an answer."""
    workers = processes.Workers(target, [(connection, share, budget) for share in shares],
                                "zk2kafka-offsets-reader")
    answers: dict[int, ShareRead] = {}
    try:
        deadline = time.monotonic() + budget + 60   # the answer's own way back, besides
        while len(answers) < len(workers):
            for k, pipe in enumerate(workers.pipes):
                if k in answers:
                    continue
                if pipe.poll(0.1):
                    try:
                        answers[k] = pipe.recv()
                    except EOFError:
                        raise WorkerFailed(f"reader process {k} of __consumer_offsets ended "
                                           f"without an answer") from None
                elif not workers.alive(k) and not pipe.poll(0):
                    raise WorkerFailed(f"reader process {k} of __consumer_offsets died "
                                       f"(exit {workers.exitcode(k)})")
            if time.monotonic() > deadline:
                raise WorkerFailed("a reader process of __consumer_offsets did not answer")
    except BaseException:
        workers.kill()
        raise
    finally:
        workers.close(timeout=10)
    return [answers[k] for k in range(len(workers))]
