"""Runs stopped on purpose, and what a run leaves behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq

from migrate.journal.journal import Journal


def killed_run(args: list[str], crash_at: str, state_dir: Path, *extra: str) -> str:
    """A `migrate --execute` killed -9 at `crash_at`; its run id."""
    killed = subprocess.run([sys.executable, "-m", "migrate", "migrate", *args, "--execute", "--parallelism", "1",
                             "-q", *extra], env={**os.environ, "ZK2KAFKA_CRASH_AT": crash_at},
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    with Journal.open(state_dir) as journal:
        (run,) = journal.runs()
    return run.run_id


def plan_rows(report: str) -> dict[tuple[str, str, int], dict]:
    rows = pq.read_table(Path(report, "plan.parquet")).to_pylist()
    return {(r["group"], r["topic"], r["partition"]): r for r in rows}


# A writer held at its first commit until the file named by its first argument exists (it touches
# <that>.waiting when it gets there); the rest of its arguments are a zk2kafka command line.
HELD_WRITER = textwrap.dedent("""\
    import pathlib, sys, time
    from migrate import cli
    from migrate.kafka.writer import KafkaOffsetWriter

    release = pathlib.Path(sys.argv[1])
    real = KafkaOffsetWriter.commit_many

    def held(self, commits, metadata):
        release.with_suffix(".waiting").touch()
        deadline = time.monotonic() + 240
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return real(self, commits, metadata)

    KafkaOffsetWriter.commit_many = held
    sys.exit(cli.main(sys.argv[2:]))
""")


# A writer whose first commit goes through and whose later ones wait until the file named by its first argument
# exists (it touches <that>.waiting when one does); it touches <that>.interrupted when SIGINT reaches the command's
# main thread, then takes SIGINT as Python does (KeyboardInterrupt). So a test can press Ctrl-C while the run is
# certainly mid-way, see that the command took it, and only then let the batches in flight finish: no race with a
# run that ends first on a fast host, or has not begun on a slow one. The rest of its arguments are a zk2kafka
# command line.
INTERRUPTIBLE_WRITER = textwrap.dedent("""\
    import pathlib, signal, sys, threading, time
    from migrate import cli
    from migrate.kafka.writer import KafkaOffsetWriter

    release = pathlib.Path(sys.argv[1])
    real = KafkaOffsetWriter.commit_many
    calls, lock = [], threading.Lock()

    def held(self, commits, metadata):
        with lock:
            calls.append(1)
            first = len(calls) == 1
        if not first:
            release.with_suffix(".waiting").touch()
            deadline = time.monotonic() + 900   # a net: the test releases it, or kills the run
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return real(self, commits, metadata)

    def interrupted(signum, frame):
        release.with_suffix(".interrupted").touch()
        signal.default_int_handler(signum, frame)

    KafkaOffsetWriter.commit_many = held
    signal.signal(signal.SIGINT, interrupted)
    sys.exit(cli.main(sys.argv[2:]))
""")
