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


# The schema the journal had before the group values (schema 2), as that zk2kafka wrote it.
SCHEMA_2 = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, state TEXT NOT NULL,
    plan_hash TEXT NOT NULL, settings TEXT NOT NULL, settings_digest TEXT NOT NULL,
    rolls_back TEXT, report TEXT, created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE groups (
    run_id TEXT NOT NULL, grp TEXT NOT NULL, state TEXT NOT NULL, reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 0, before_recorded INTEGER NOT NULL DEFAULT 0,
    updated REAL NOT NULL,
    PRIMARY KEY (run_id, grp));
CREATE TABLE partitions (
    run_id TEXT NOT NULL, grp TEXT NOT NULL, topic TEXT NOT NULL, part INTEGER NOT NULL,
    planned_offset INTEGER NOT NULL, zk_path TEXT NOT NULL, zk_version INTEGER,
    layout TEXT NOT NULL,
    plan_kafka_offset INTEGER, zk_mzxid INTEGER,
    before_kafka_offset INTEGER, before_kafka_metadata TEXT,
    before_zk_value BLOB, before_zk_version INTEGER,
    after_zk_version INTEGER,
    PRIMARY KEY (run_id, grp, topic, part));
PRAGMA user_version=2;
"""


def test_a_run_journaled_by_the_schema_before_goes_on_with_its_values_read_as_they_were(tmp_path):
    """An operator upgrading mid-cutover: a run the previous zk2kafka journaled (each offset's values in its
    row) is read as it was, for resume, rollback, verify and renew, and its other groups journal as now."""
    db = sqlite3.connect(tmp_path / "journal.sqlite")
    db.executescript(SCHEMA_2)
    db.execute("INSERT INTO runs VALUES ('r1','migrate','running','h','{}','d',NULL,NULL,1,1)")
    db.executemany("INSERT INTO groups (run_id, grp, state, before_recorded, attempts, updated) VALUES (?,?,?,?,?,1)",
                   [("r1", "a", j.VERIFIED, 1, 1), ("r1", "b", j.PENDING, 0, 0)])
    db.executemany("INSERT INTO partitions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [
        ("r1", "a", "t", 0, 10, "/consumers/a/offsets/t/0", 3, "standard", None, 77, 5, "old", b" 7\n", 3, 4),
        ("r1", "a", "t", 1, 11, "/consumers/a/offsets/t/1", 3, "standard", None, 78, None, None, None, None, None),
        ("r1", "b", "t", 0, 12, "/consumers/b/offsets/t/0", 2, "standard", None, 79, None, None, None, None, None)])
    db.commit()
    db.close()

    with j.Journal.open(tmp_path) as journal:
        a0, a1 = journal.partitions("r1", "a")
        assert a0 == j.Partition("t", 0, 10, "/consumers/a/offsets/t/0", 3, "standard", None, 77,
                                 5, "old", b" 7\n", 3, 4)
        assert (a1.before_kafka_offset, a1.before_zk_value, a1.after_zk_version) == (None, None, None)
        journal.record_before_many("r1", {"b": j.Before({}, {"/consumers/b/offsets/t/0": (b"12", 2)})})
        journal.set_group("r1", "b", j.VERIFIED, zk_after={"/consumers/b/offsets/t/0": 3})
    with j.Journal.open(tmp_path) as journal:   # upgraded once: opened again as it is
        assert journal.partitions("r1", "a") == [a0, a1]
        (b0,) = journal.partitions("r1", "b")
        assert (b0.offset, b0.before_kafka_offset, b0.before_zk_value, b0.before_zk_version, b0.after_zk_version) == (
            12, None, b"12", 2, 3)
        assert journal.run("r1").groups["verified"] == 2 and journal.run("r1").offsets == 3


def test_group_values_keep_every_byte_and_a_transition_without_versions_keeps_them(tmp_path):
    odd = bytes(range(256))   # a znode's bytes need not be text
    with j.Journal.open(tmp_path) as journal:
        journal.create_run("r1", "migrate", "h", {}, {"a": [planned(partition=0), planned(partition=1)]})
        journal.record_before_many("r1", {"a": j.Before({("t", 1): (9, "ü {json}")},
                                                        {"/consumers/g/offsets/t/0": (odd, 3),
                                                         "/consumers/g/offsets/t/1": (None, None)})})
        journal.set_group("r1", "a", j.VERIFIED, zk_after={"/consumers/g/offsets/t/0": 4})
        journal.set_group("r1", "a", j.FAILED, "put back")
        a0, a1 = journal.partitions("r1", "a")
        assert (a0.before_kafka_offset, a0.before_zk_value, a0.after_zk_version) == (None, odd, 4)
        assert (a1.before_kafka_offset, a1.before_kafka_metadata, a1.before_zk_value, a1.after_zk_version) == (
            9, "ü {json}", None, None)


def test_a_journal_of_schema_1_is_upgraded_in_both_steps(tmp_path):
    db = sqlite3.connect(tmp_path / "journal.sqlite")
    db.executescript(SCHEMA_2.replace(" zk_mzxid INTEGER,", "").replace("user_version=2", "user_version=1"))
    db.close()
    with j.Journal.open(tmp_path) as journal:
        journal.create_run("r1", "migrate", "h", {}, {"a": [planned()]})
        journal.record_before_many("r1", {"a": j.Before({}, {"/consumers/g/offsets/t/0": (b"10", 3)})})
        (a0,) = journal.partitions("r1", "a")
        assert (a0.zk_mzxid, a0.before_zk_value, a0.before_zk_version) == (None, b"10", 3)
    assert sqlite3.connect(tmp_path / "journal.sqlite").execute("PRAGMA user_version").fetchone()[0] == j.SCHEMA_VERSION
