"""The journal on a real SQLite file: transitions, before-values, reopening, and a schema it cannot read."""

from __future__ import annotations

import sqlite3

import pytest

from migrate.journal import journal as j
from migrate.errors import MigrateError, StateDirError


def planned(topic="t", partition=0, offset=10):
    return j.Planned(topic, partition, offset, f"/consumers/g/offsets/{topic}/{partition}", 3, "standard", None)


def test_a_run_moves_group_by_group_and_survives_reopening(tmp_path):
    with j.Journal.open(tmp_path) as journal:
        journal.create_run("r1", "migrate", "hash", {"on_conflict": "skip"},
                           {"a": [planned(partition=0), planned(partition=1, offset=11)], "b": [planned()]},
                           skipped={"c": "nothing to commit: CONFLICT 1"}, report="/reports/r1")
        journal.record_before_many("r1", {"a": ({("t", 0): (5, "old")},
                                   {"/consumers/g/offsets/t/0": (b" 10\n", 3),
                                    "/consumers/g/offsets/t/1": (b"11", 3)})})
        journal.set_group("r1", "a", j.COMMITTED)
        journal.set_group("r1", "a", j.VERIFIED, zk_after={"/consumers/g/offsets/t/0": 4})
        journal.set_group("r1", "b", j.FAILED, "UnknownMemberIdError")

    with j.Journal.open(tmp_path) as journal:
        run = journal.run("r1")
        assert run.groups == {"pending": 0, "committed": 0, "verified": 1, "failed": 1, "partial": 0, "skipped": 1}
        assert run.offsets == 3 and run.settings == {"on_conflict": "skip"} and run.state == j.RUNNING
        assert run.settings_digest == j.digest({"on_conflict": "skip"})
        a0, a1 = journal.partitions("r1", "a")
        assert (a0.before_kafka_offset, a0.before_kafka_metadata, a0.before_zk_value, a0.after_zk_version) == (
            5, "old", b" 10\n", 4)
        assert (a1.before_kafka_offset, a1.before_zk_value, a1.after_zk_version) == (None, b"11", None)
        assert journal.groups_of("r1", ["a"])["a"].before_recorded and journal.groups_of("r1", ["a"])["a"].attempts == 1
        assert journal.groups_of("r1", ["b"])["b"] == j.Group("b", j.FAILED, "UnknownMemberIdError", 0, False)
        assert journal.groups_of("r1", ["c"])["c"].reason == "nothing to commit: CONFLICT 1"


def test_rollback_runs_are_found_by_the_run_they_undo(tmp_path):
    with j.Journal.open(tmp_path) as journal:
        journal.create_run("r1", "migrate", "h", {}, {"a": [planned()]})
        assert journal.rollback_of("r1") is None
        journal.create_run("r2", "rollback", "h", {}, {"a": []}, rolls_back="r1")
        journal.set_run("r2", j.INCOMPLETE)
        assert journal.rollback_of("r1").run_id == "r2" and journal.rollback_of("r1").state == j.INCOMPLETE
        assert [r.run_id for r in journal.runs()] == ["r1", "r2"]


def test_a_failed_transition_leaves_nothing_behind(tmp_path):
    with j.Journal.open(tmp_path) as journal:
        journal.create_run("r1", "migrate", "h", {}, {"a": [planned()]})
        with pytest.raises(sqlite3.IntegrityError):
            journal.create_run("r1", "migrate", "h", {}, {"z": [planned()]})   # same run id: one transaction fails
        assert [g.name for g in journal.groups("r1")] == ["a"]


def test_a_journal_from_another_schema_is_refused(tmp_path):
    db = sqlite3.connect(tmp_path / "journal.sqlite")
    db.execute("PRAGMA user_version=99")
    db.close()
    with pytest.raises(MigrateError, match="journal schema 99"):
        j.Journal.open(tmp_path)


def test_a_state_dir_that_cannot_hold_the_journal_is_one_clear_error(tmp_path):
    (tmp_path / "state").write_text("a file where the state dir should be")
    with pytest.raises(StateDirError, match="cannot open the journal: File exists") as raised:
        j.Journal.open(tmp_path / "state")
    assert raised.value.path == str(tmp_path / "state" / "journal.sqlite")


def test_a_journal_write_that_cannot_start_is_reported_and_leaves_the_journal_usable(tmp_path):
    with j.Journal.open(tmp_path) as journal:
        journal.create_run("r1", "migrate", "h", {}, {"a": [planned()]})
        journal._db.execute("PRAGMA busy_timeout=100")   # not the 30 s a real run waits for another writer
        other = sqlite3.connect(tmp_path / "journal.sqlite", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")   # another process holds the write lock
        with pytest.raises(StateDirError, match="cannot write the journal: database is locked"):
            journal.set_group("r1", "a", j.COMMITTED)
        other.execute("ROLLBACK")
        other.close()
        assert journal.groups_of("r1", ["a"])["a"].state == j.PENDING   # answers: no lock left held (it hung before)
        journal.set_group("r1", "a", j.COMMITTED)
        assert journal.groups_of("r1", ["a"])["a"].state == j.COMMITTED


def test_one_writer_per_state_dir_and_readers_never_wait(tmp_path):
    import os

    from migrate.errors import WriterBusy

    with j.Journal.open(tmp_path, writer="migrate --execute, run R1") as first:
        with pytest.raises(WriterBusy) as busy:
            j.Journal.open(tmp_path, writer="rollback --execute R1")
        assert f"pid {os.getpid()}: zk2kafka migrate --execute, run R1" in str(busy.value)
        with j.Journal.open(tmp_path) as reader:   # status: no lock, no wait
            assert reader.runs() == first.runs()
    with j.Journal.open(tmp_path, writer="rollback --execute R1"):   # released with the journal
        pass
    assert (tmp_path / "journal.lock").read_text() == ""   # nobody holds it: no stale name
