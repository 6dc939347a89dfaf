"""`migrate --execute --writers 2`: the write phase sharded over two writer processes, into one journal.

The command is killed with SIGKILL at a seeded choice of the crash points (reached inside a writer
process, which kills the command first) or after a seeded random delay; its writer processes must die
with it (nothing is written once it is gone), the journal must agree with the stores, and a resume with
`--writers 2` must converge: Kafka == ZooKeeper == the seeded offsets, each znode written as `Case.check` holds it.
"""

from __future__ import annotations

import random
import subprocess
import time

import pytest

from migrate.write.dual_commit import CRASH_ENV

from support.cli import zk2kafka_json
from support.faults import journal_progress, journaled_run, spawn

pytestmark = pytest.mark.integration

CRASH_POINTS = ("before-kafka-commit", "after-kafka-commit", "after-zk-write")
GROUPS = 750   # three write batches (WRITE_BATCH is 250): both writer processes get groups


def test_two_writer_processes_killed_with_the_command_then_resumed_converge(stores, fault_log, monkeypatch,
                                                                            capsys):
    rng = random.Random(f"{fault_log.seed}-writers")
    case = stores.case("writers")
    case.seed(GROUPS, rng)
    args = case.args()
    run_id = journaled_run(args, case.state_dir, monkeypatch)
    kills = 0
    for point in (rng.choice(CRASH_POINTS), "delay"):
        resume = spawn(["migrate", *args, "--execute", "--resume", run_id, "--writers", "2", "--parallelism", "2",
                        "-q"], {} if point == "delay" else {CRASH_ENV: point})
        try:
            _, err = resume.communicate(timeout=rng.uniform(1.0, 3.0) if point == "delay" else 300)
        except subprocess.TimeoutExpired:
            resume.kill()   # SIGKILL
            _, err = resume.communicate()
        if resume.returncode == 0:
            break   # it finished before the delay: the last resume below finds nothing left
        assert resume.returncode == -9, f"{point}: resume exited {resume.returncode}: {err}"
        kills += 1
        stores.log.fault("kill -9 zk2kafka with writer processes")
        # Nothing writes once the command is gone: its writer processes died with it.
        progress, kafka, zk = journal_progress(case.state_dir, run_id), case.kafka_state(), case.zk_state()
        time.sleep(1.5)
        assert journal_progress(case.state_dir, run_id) == progress, point
        assert (case.kafka_state(), case.zk_state()) == (kafka, zk), point
        assert case.disagreements(run_id, kafka, zk) == [], point
    assert kills, "no kill landed: the test tested nothing"

    code, resumed, _ = zk2kafka_json("migrate", *args, "--execute", "--resume", run_id, "--writers", "2")
    assert code == 0 and resumed["state"] == "done", resumed
    code, verified, _ = zk2kafka_json("verify", *args)
    assert code == 0 and verified["verified"], verified.get("mismatched")
    case.check(run_id)


def test_two_writer_processes_journal_what_one_process_journals(stores, fault_log, capsys):
    """The same groups through one process and through two: the same outcome, the same journal rows."""
    journals = []
    for writers in ("1", "2"):
        case = stores.case(f"writers{writers}")
        case.seed(GROUPS, random.Random(f"{fault_log.seed}-same"))
        code, done, _ = zk2kafka_json("migrate", *case.args(), "--execute", "--writers", writers)
        assert code == 0 and done["state"] == "done" and done["written"] == 2 * GROUPS, done
        case.check(done["run"])
        journals.append(_journal_rows(case, done["run"]))
    assert journals[0] == journals[1]


def _journal_rows(case, run_id: str) -> tuple:
    """A run's groups and partitions as journaled, without the names that differ by case (prefix, chroot)."""
    from migrate.journal.journal import Journal

    with Journal.open(case.state_dir) as journal:
        groups = sorted((g.name.removeprefix(case.prefix), g.state, g.reason, g.attempts, g.before_recorded)
                        for g in journal.groups(run_id))
        parts = journal.partitions_of(run_id, [g.name for g in journal.groups(run_id)])
    rows = sorted((g.removeprefix(case.prefix), p.topic, p.partition, p.offset, p.zk_version, p.layout,
                   p.kafka_offset, p.before_kafka_offset, p.before_kafka_metadata, p.before_zk_value,
                   p.before_zk_version, p.after_zk_version)
                  for g, ps in parts.items() for p in ps)
    return groups, rows
