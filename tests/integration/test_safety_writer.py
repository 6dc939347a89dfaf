"""The writer's safety: no silent rewind, no silent skip, no false success.

Every test here is one way a run could go wrong, against real ZooKeeper, Kafka and Spark. Where a test
needs something to happen between two steps of a run (a topic deleted, an old consumer moving
on), it hooks the step with monkeypatch and does it to the real store.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import time

import pytest
from kafka import TopicPartition
from kafka.structs import OffsetAndMetadata
from kazoo.security import READ_ACL_UNSAFE

from migrate.journal.journal import Journal
from migrate.kafka.writer import KafkaOffsetWriter

from support.cli import connection, selected, zk2kafka_json
from support.runs import HELD_WRITER, killed_run, plan_rows
from support.seeding import kafka_offsets, make_topic, put


# -- out of range: clamp never overrides a conflict ----------------------------------------------------------------


def test_out_of_range_clamp_never_overrides_on_conflict(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path,
                                                        capsys):
    # Above the log end: a recreated topic, Kafka at 50 of 80, ZooKeeper a stale 9000. Clamp would skip 30 messages.
    above, below = f"{prefix}recreated", f"{prefix}trimmed"
    make_topic(kafka_admin, cluster.bootstrap_server, above, 1, 80)
    # Below the log start: Kafka at 90, ZooKeeper a stale 10 below the log start 60. Clamp would rewind to 60.
    make_topic(kafka_admin, cluster.bootstrap_server, below, 1, 100)
    kafka_admin.delete_records({TopicPartition(below, 0): 60})
    g_above, g_below = f"{prefix}ahead", f"{prefix}behind"
    put(zk, f"/consumers/{g_above}/offsets/{above}/0", b"9000")
    put(zk, f"/consumers/{g_below}/offsets/{below}/0", b"10")
    kafka_admin.alter_group_offsets(g_above, {TopicPartition(above, 0): OffsetAndMetadata(50, "app", -1)})
    kafka_admin.alter_group_offsets(g_below, {TopicPartition(below, 0): OffsetAndMetadata(90, "app", -1)})

    code, done, err = zk2kafka_json("migrate", *selected(cluster, zk_chroot, tmp_path, prefix), "--execute",
                              "--out-of-range", "clamp")
    assert code == 3, err   # blockers remain; nothing failed
    assert kafka_offsets(kafka_admin, [g_above])[g_above] == {(above, 0): (50, "app")}
    assert kafka_offsets(kafka_admin, [g_below])[g_below] == {(below, 0): (90, "app")}
    assert zk.get(f"/consumers/{g_above}/offsets/{above}/0")[0] == b"9000"
    rows = plan_rows(done["report"])
    assert rows[(g_above, above, 0)]["status"] == "ABOVE_LOG_END" and rows[(g_above, above, 0)]["action"] == "skip"
    assert "Kafka has 50" in rows[(g_above, above, 0)]["reason"]
    assert rows[(g_below, below, 0)]["status"] == "BELOW_LOG_START" and rows[(g_below, below, 0)]["action"] == "skip"
    assert "Kafka has 90" in rows[(g_below, below, 0)]["reason"]


# -- resume: what Kafka does not hold, and runs a rollback touched -------------------------------------------------


def test_resume_commits_again_where_kafka_does_not_hold_the_plan(cluster, zk_chroot, kafka_admin, prefix,
                                                                 two_groups, tmp_path, capsys):
    args = selected(cluster, zk_chroot, tmp_path, prefix)
    run = killed_run(args, "after-zk-write", tmp_path)   # every group journaled `committed`, ZooKeeper written
    with Journal.open(tmp_path) as journal:
        assert {g.state for g in journal.groups(run)} == {"committed"}
    # A long outage: Kafka expired the offsets of the Empty groups.
    topic = two_groups["topic"]
    for group in two_groups["groups"]:
        kafka_admin.delete_group_offsets(group, [TopicPartition(topic, p) for p in range(2)])

    code, resumed, err = zk2kafka_json("migrate", *args, "--execute", "--resume", run)
    assert code == 0 and resumed["groups"]["verified"] == 2, err
    in_kafka = kafka_offsets(kafka_admin, two_groups["groups"])
    assert {(g, p): in_kafka[g][(topic, p)][0] for g in two_groups["groups"] for p in range(2)} == \
        two_groups["expected"]


def test_resume_refuses_a_run_that_a_rollback_touched(cluster, zk_chroot, kafka_admin, prefix, two_groups,
                                                      tmp_path, capsys):
    args = selected(cluster, zk_chroot, tmp_path, prefix)
    run = killed_run(args, "after-kafka-commit", tmp_path)
    code, rolled, err = zk2kafka_json("rollback", run, *connection(cluster, zk_chroot, tmp_path), "--execute")
    assert code == 0 and rolled["state"] == "done", err
    assert kafka_offsets(kafka_admin, two_groups["groups"]) == {g: {} for g in two_groups["groups"]}

    code, resumed, err = zk2kafka_json("migrate", *args, "--execute", "--resume", run)
    assert code == 1 and not resumed
    assert f"rolled back by {rolled['run']}" in err and len(err.strip().splitlines()) == 1, err
    assert kafka_offsets(kafka_admin, two_groups["groups"]) == {g: {} for g in two_groups["groups"]}


# -- one writer per state dir --------------------------------------------------------------------------------------


def test_a_second_writer_on_a_state_dir_gets_one_line_naming_the_holder(cluster, zk_chroot, kafka_admin, prefix,
                                                                        two_groups, tmp_path, capsys):
    state, hold = tmp_path / "state", tmp_path / "release"
    args = selected(cluster, zk_chroot, state, prefix)
    holder = subprocess.Popen([sys.executable, "-c", HELD_WRITER, str(hold), "migrate", *args, "--execute", "-q"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not hold.with_suffix(".waiting").exists():
            assert holder.poll() is None and time.monotonic() < deadline, holder.communicate()
            time.sleep(0.2)
        # Reading never waits for the writer.
        code, status, err = zk2kafka_json("status", "--state-dir", str(state))
        assert code == 0, err
        (run,) = [r["run"] for r in status["runs"]]
        code, dry, err = zk2kafka_json("rollback", run, "--state-dir", str(state))
        assert code == 0 and dry["dry_run"], err

        conn = connection(cluster, zk_chroot, state)
        for second in (["rollback", run, *conn, "--execute"], ["migrate", *args, "--execute", "--resume", run],
                       ["sync", *args, "--execute", "--stop-after", "1"]):
            code, out, err = zk2kafka_json(*second)
            assert code == 1 and not out, (second, out, err)
            assert len(err.strip().splitlines()) == 1, err
            assert f"pid {holder.pid}" in err and "migrate --execute" in err, err
        assert kafka_offsets(kafka_admin, two_groups["groups"]) == {g: {} for g in two_groups["groups"]}
    finally:
        hold.touch()
        out, err = holder.communicate(timeout=300)
    assert holder.returncode == 0, err
    in_kafka = kafka_offsets(kafka_admin, two_groups["groups"])
    assert {(g, p): in_kafka[g][(two_groups["topic"], p)][0] for g in two_groups["groups"] for p in range(2)} == \
        two_groups["expected"]
    code, rolled, err = zk2kafka_json("rollback", run, *connection(cluster, zk_chroot, state), "--execute")
    assert code == 0 and rolled["state"] == "done", err   # the lock went with the holder


# -- finding nothing is not success --------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["verify", "diff", "migrate"])
def test_zero_offsets_found_is_a_non_zero_exit_naming_what_was_looked_at(cluster, zk, zk_chroot, prefix, two_groups,
                                                                        tmp_path, capsys, command):
    looked_at = [
        (zk_chroot, "/consumers", f"{prefix}nothing.*"),    # a selection that matches nothing
        (zk_chroot, "/kafka/consumers", f"{prefix}.*"),     # a wrong --zk-root
        (cluster.zk_server, "/consumers", f"{prefix}.*"),   # a forgotten chroot
    ]
    for connect, root, group in looked_at:
        code, out, err = zk2kafka_json(command, "--zookeeper", connect, "--zk-root", root, "--group", group,
                                 "--bootstrap-server", cluster.bootstrap_server, "--state-dir", str(tmp_path))
        assert code == (3 if command == "verify" else 1) and not out, (connect, root, out, err)
        line = err.strip()
        assert len(line.splitlines()) == 1 and "no offsets" in line, line
        assert f"{connect}{root}" in line and group in line, line


# -- no half-written group -----------------------------------------------------------------------------------------


def test_a_partial_offset_commit_is_put_back_not_left_half_written(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                   tmp_path, capsys, monkeypatch):
    from migrate.kafka import retry, writer

    kept, deleted = f"{prefix}kept", f"{prefix}deleted"
    for topic in (kept, deleted):
        make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 20)
    group = f"{prefix}split"
    put(zk, f"/consumers/{group}/offsets/{kept}/0", b"7")
    put(zk, f"/consumers/{group}/offsets/{deleted}/0", b"8")
    real_commit = KafkaOffsetWriter.commit_many

    def delete_a_topic_first(self, commits, metadata):
        if group in commits:   # between the plan and the write: the broker now refuses that topic's partition
            kafka_admin.delete_topics([deleted])
            deadline = time.monotonic() + 60
            while deleted in kafka_admin.list_topics() and time.monotonic() < deadline:
                time.sleep(0.2)
        return real_commit(self, commits, metadata)

    monkeypatch.setattr(KafkaOffsetWriter, "commit_many", delete_a_topic_first)
    # Retriable errors are retried for 120 s by default; the outcome is the same, sooner.
    monkeypatch.setattr(writer, "RetryPolicy", functools.partial(retry.RetryPolicy, deadline=10))
    code, done, err = zk2kafka_json("migrate", *selected(cluster, zk_chroot, tmp_path, prefix), "--execute")
    assert code == 1, err
    assert kafka_offsets(kafka_admin, [group])[group] == {}, "Kafka half-written"
    assert set(done["failed"]) == {group} and "put back" in done["failed"][group], done
    assert zk.get(f"/consumers/{group}/offsets/{kept}/0")[1].version == 0


def test_a_zookeeper_noauth_on_write_puts_kafka_back(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path, capsys):
    topic, group = f"{prefix}orders", f"{prefix}readonly"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 20)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"5")
    # readable, never writable; with a newline the run must rewrite it as digits (bytes it holds already are
    # fenced by reading, which needs no write)
    put(zk, f"/consumers/{group}/offsets/{topic}/1", b"6\n", acl=READ_ACL_UNSAFE)

    code, done, err = zk2kafka_json("migrate", *selected(cluster, zk_chroot, tmp_path, prefix), "--execute")
    assert code == 1, err
    assert kafka_offsets(kafka_admin, [group])[group] == {}, "Kafka half-written"
    assert set(done["failed"]) == {group} and "put back" in done["failed"][group], done
    assert [zk.get(f"/consumers/{group}/offsets/{topic}/{p}") [0] for p in range(2)] == [b"5", b"6\n"]


def test_a_group_split_over_zookeeper_transactions_with_a_conflict_in_the_second_is_put_back(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path, capsys, monkeypatch):
    from migrate.zk import writer as zk_writer

    # A group of more than TRANSACTION_OPS znodes is written in several transactions; 2 per transaction
    # makes three partitions two transactions, as 1,001 would be with the real 1,000.
    monkeypatch.setattr(zk_writer, "TRANSACTION_OPS", 2)
    topic, group = f"{prefix}orders", f"{prefix}big"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 3, 50)
    for p in range(3):
        put(zk, f"/consumers/{group}/offsets/{topic}/{p}", b"10")
    # Kafka is ahead: --on-conflict max plans 40, so the ZooKeeper half really changes the values.
    kafka_admin.alter_group_offsets(group, {TopicPartition(topic, p): OffsetAndMetadata(40, "app", -1)
                                            for p in range(3)})
    last = f"/consumers/{group}/offsets/{topic}/2"
    real_write_many = zk_writer.ZkOffsetWriter.write_many

    def an_old_consumer_moves_the_last_znode(self, writes):
        if group in writes:
            zk.set(last, b"11")   # after the precheck: the second transaction meets a new version
        return real_write_many(self, writes)

    monkeypatch.setattr(zk_writer.ZkOffsetWriter, "write_many", an_old_consumer_moves_the_last_znode)
    code, done, err = zk2kafka_json("migrate", *selected(cluster, zk_chroot, tmp_path, prefix), "--execute",
                              "--on-conflict", "max", "--rewrite-zk-offsets")
    assert code == 1, err
    assert [zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0] for p in range(3)] == [b"10", b"10", b"11"], \
        "ZooKeeper half-written"
    assert set(done["failed"]) == {group} and "put back" in done["failed"][group], done
    assert {k: v[0] for k, v in kafka_offsets(kafka_admin, [group])[group].items()} == {
        (topic, p): 40 for p in range(3)}


# -- the stores moved since the plan -------------------------------------------------------------------------------


def test_a_znode_deleted_and_recreated_since_the_plan_is_not_written(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                      tmp_path, capsys, monkeypatch):
    from migrate.write import execute as commands

    topic, group = f"{prefix}orders", f"{prefix}recreated"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    path = f"/consumers/{group}/offsets/{topic}/0"
    put(zk, path, b"20")
    real_journal_plan = commands._journal_plan

    def recreate_between_plan_and_write(plan):
        zk.delete(path)
        zk.create(path, b"3")   # version 0 again, like the one planned from
        return real_journal_plan(plan)

    monkeypatch.setattr(commands, "_journal_plan", recreate_between_plan_and_write)
    code, done, err = zk2kafka_json("migrate", *selected(cluster, zk_chroot, tmp_path, prefix), "--execute")
    assert code == 1 and set(done["failed"]) == {group}, (done, err)
    assert zk.get(path)[0] == b"3"
    assert kafka_offsets(kafka_admin, [group])[group] == {}


def test_offset_semantics_last_never_writes_minus_one(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path, capsys):
    topic, group = f"{prefix}empty", f"{prefix}last"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 0)   # log end 0
    path = f"/consumers/{group}/offsets/{topic}/0"
    put(zk, path, b"4")   # last processed 4: next 5, above the log end; clamp plans 0

    code, done, err = zk2kafka_json("migrate", *selected(cluster, zk_chroot, tmp_path, prefix), "--execute",
                              "--offset-semantics", "last", "--out-of-range", "clamp")
    assert code == 3, err
    assert zk.get(path)[0] == b"4"
    row = plan_rows(done["report"])[(group, topic, 0)]
    assert row["action"] == "skip" and row["planned_offset"] is None and "-1" in row["reason"], row
    code, scanned, err = zk2kafka_json("scan", "--zookeeper", zk_chroot, "--state-dir", str(tmp_path), "--group",
                                 f"{prefix}.*", "--offset-semantics", "last")
    assert scanned["counts"] == {"OK": 1}, scanned


def test_no_zk_write_late_resume_rereads_zookeeper(cluster, zk, zk_chroot, kafka_admin, prefix, two_groups,
                                                   tmp_path, capsys):
    args = selected(cluster, zk_chroot, tmp_path, prefix) + ["--no-zk-write"]
    run = killed_run(args, "before-kafka-commit", tmp_path)
    moved, topic = two_groups["groups"][0], two_groups["topic"]
    zk.set(f"/consumers/{moved}/offsets/{topic}/1", b"33")   # an old consumer went on while the run was down

    code, resumed, err = zk2kafka_json("migrate", *args, "--execute", "--resume", run)
    assert code == 1 and set(resumed["failed"]) == {moved}, (resumed, err)
    assert "changed" in resumed["failed"][moved]
    in_kafka = kafka_offsets(kafka_admin, two_groups["groups"])
    assert in_kafka[moved] == {}
    other = two_groups["groups"][1]
    assert {p: in_kafka[other][(topic, p)][0] for p in range(2)} == {p: two_groups["expected"][(other, p)]
                                                                      for p in range(2)}


def test_a_group_that_cannot_be_put_back_is_partial_with_the_rollback_command(cluster, zk, zk_chroot, kafka_admin,
                                                                              prefix, tmp_path, capsys, monkeypatch):
    from migrate.zk import writer as zk_writer

    monkeypatch.setattr(zk_writer, "TRANSACTION_OPS", 2)   # three partitions, two transactions
    topic, group = f"{prefix}orders", f"{prefix}stuck"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 3, 50)
    for p in range(3):
        put(zk, f"/consumers/{group}/offsets/{topic}/{p}", b"10")
    kafka_admin.alter_group_offsets(group, {TopicPartition(topic, p): OffsetAndMetadata(40, "app", -1)
                                            for p in range(3)})
    first, last = (f"/consumers/{group}/offsets/{topic}/{p}" for p in (0, 2))
    real_write_many = zk_writer.ZkOffsetWriter.write_many

    def conflict_then_lock_the_written_half(self, writes):
        if group in writes:
            zk.set(last, b"11")   # the second transaction fails
        answer = real_write_many(self, writes)
        if group in writes:
            zk.set_acls(first, READ_ACL_UNSAFE)   # and the first one's znode can no longer be put back
        return answer

    monkeypatch.setattr(zk_writer.ZkOffsetWriter, "write_many", conflict_then_lock_the_written_half)
    code, done, err = zk2kafka_json("migrate", *selected(cluster, zk_chroot, tmp_path, prefix), "--execute",
                              "--on-conflict", "max", "--rewrite-zk-offsets")
    assert code == 1 and done["state"] == "incomplete", (done, err)
    assert not done.get("failed") and set(done.get("partial", {})) == {group}, done
    assert f"`zk2kafka rollback --execute {done['run']}`" in done["partial"][group]
    assert zk.get(first)[0] == b"40"   # the half that is written is said to be, not hidden
    with Journal.open(tmp_path) as journal:
        assert journal.groups_of(done["run"], [group])[group].state == "partial"
