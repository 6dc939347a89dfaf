"""Progress: a line per interval when not on a terminal, a bar on one; the final snapshot is exact."""

from __future__ import annotations

import logging

from migrate.progress import Progress


def test_plain_lines_when_not_a_terminal(caplog):
    caplog.set_level(logging.INFO, logger="migrate.progress")
    with Progress("scan: offsets read", tty=False, interval=0) as progress:
        progress.advance(1500)
        progress.advance(500)
    final = progress.close()
    assert (final.done, final.total) == (2000, None)
    assert [r.getMessage().split(" in ")[0] for r in caplog.records] == [
        "scan: offsets read: 1,500", "scan: offsets read: 2,000"]


def test_bar_on_a_terminal_counts_the_same():
    progress = Progress("rows", total=10, tty=True)
    for _ in range(10):
        progress.advance()
    snapshot = progress.close()
    assert (snapshot.done, snapshot.total) == (10, 10)
    assert snapshot.line().startswith("rows: 10/10 in ")
