"""How zk2kafka paces Python's cyclic garbage collector: a command's data is millions of
long-lived objects (each offset's row, commit and evidence), which CPython's default thresholds
walk again and again while they are built, and almost none of them is in a cycle: reference
counting frees them.

A command that runs once collects rarely while it runs (collecting_rarely). `sync`, which runs
for days and replaces its state as changes stream in, keeps the defaults and freezes what survives
instead (freeze_survivors, settle_heap).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# Objects allocated (less freed) before the youngest generation is collected (CPython: 700), and
# collections of each generation before the next older one is (10, 10). With the defaults, the
# diff's Kafka snapshot of groups whose consumers joined spent much of its time in collections
# (docs/performance.md, "What the group metadata records add").
RARELY = (100_000, 50, 100)


@contextlib.contextmanager
def collecting_rarely() -> Iterator[None]:
    """Collect cyclic garbage rarely while a command that runs once runs; the thresholds as they
    were afterwards (a test, or a harness, runs more commands in one process: a service too)."""
    before = gc.get_threshold()
    gc.set_threshold(*RARELY)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def settle_heap() -> None:
    """Collect every cycle once, then freeze what is left out of Python's automatic collections.

    At 10,000 groups a full collection walks millions of long-lived objects (the groups' state),
    a 0.15-0.3 s pause every few seconds while changes stream in, straight into their latency.
    Frozen, they are walked once a re-scan instead; unfrozen first, so that cycles that died among
    them since are collected then.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def freeze_survivors() -> None:
    """Freeze what survived a pass, after collecting the young generations' cycles.

    Each change replaces a group's state with new objects, and the old frozen ones die by their
    count: within a minute of 1,000 changes a second the whole state is new and unfrozen again, and
    the automatic full collections it brings back take a large share of sync's CPU
    (docs/performance.md). Frozen a pass at a time, they are never walked; a cycle among them is
    collected at the next re-scan (settle_heap).
    """
    gc.collect(1)
    gc.freeze()
