"""Progress of long work: a bar on a terminal, a plain log line per interval otherwise.

Callers only `advance()`; what is shown is an immutable `Snapshot` rendered by
whichever sink fits the terminal, so a run looks the same in logs and JSON.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass

log = logging.getLogger("migrate.progress")


@dataclass(frozen=True)
class Snapshot:
    what: str
    done: int
    total: int | None
    elapsed: float
    offsets: int = 0   # offsets within the units done (groups), when the caller counts them

    @property
    def rate(self) -> float:
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    def line(self) -> str:
        of = f"/{self.total:,}" if self.total is not None else ""
        offsets = f", {self.offsets:,} offsets" if self.offsets else ""
        return (f"{self.what}: {self.done:,}{of}{offsets} in {self.elapsed:.1f}s "
                f"({self.rate:,.0f}/s)")


class Progress:
    """Counts units of work; a rich bar on a TTY, else a log line every `interval` seconds."""

    def __init__(self, what: str, total: int | None = None, interval: float = 5.0,
                 tty: bool | None = None):
        self.what = what
        self.total = total
        self.interval = interval
        self.done = 0
        self.offsets = 0
        self.started = time.monotonic()
        self._last_line = self.started
        self._bar = None
        if sys.stderr.isatty() if tty is None else tty:
            from rich.progress import (BarColumn, MofNCompleteColumn, TextColumn,
                                       TimeElapsedColumn)
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[offsets]}"), TextColumn("{task.fields[rate]}"),
                            TimeElapsedColumn(), transient=True)
            self._task = self._bar.add_task(what, total=total, rate="", offsets="")
            self._bar.start()

    def snapshot(self) -> Snapshot:
        return Snapshot(self.what, self.done, self.total, time.monotonic() - self.started,
                        self.offsets)

    def advance(self, n: int = 1, offsets: int = 0) -> None:
        self.done += n
        self.offsets += offsets
        now = time.monotonic()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, rate=f"{self.snapshot().rate:,.0f}/s",
                             offsets=f"{self.offsets:,} offsets" if self.offsets else "")
        elif now - self._last_line >= self.interval:
            self._last_line = now
            log.info(self.snapshot().line())

    def close(self) -> Snapshot:
        """Stop showing progress; returns the final snapshot."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        return self.snapshot()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
