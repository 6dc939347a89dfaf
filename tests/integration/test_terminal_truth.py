"""What the tool says it did is what it did: a resume checks ZooKeeper before it commits a group in flight again and
says what it read back, a dead run is `interrupted`, skip reasons and the retention warning reach the terminal, and
verify tells a consumer that moved on from a rewind.

Real ZooKeeper, Kafka and Spark; runs killed with SIGKILL at a crash point (`ZK2KAFKA_CRASH_AT`) or while they hold
the writers' lock.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from migrate.journal.journal import Journal

from support.cli import connection, selected, zk2kafka_json, zk2kafka_text
from support.hints import hints, operator_shell, paste
from support.runs import HELD_WRITER, killed_run
from support.seeding import kafka_offsets, make_topic, put


def test_a_resume_checks_zookeeper_before_it_commits_a_group_in_flight_again(cluster, zk, zk_chroot, kafka_admin,
                                                                           prefix, two_groups, tmp_path, capsys):
    topic, (g0, g1) = two_groups["topic"], two_groups["groups"]
    args = selected(cluster, zk_chroot, tmp_path, prefix)
    run = killed_run(args, "after-kafka-commit", tmp_path)   # Kafka holds the plan; ZooKeeper not written yet
    assert kafka_offsets(kafka_admin, [g0])[g0] == {(topic, 0): (10, f"zk2kafka migrate {run}"),
                                                     (topic, 1): (11, f"zk2kafka migrate {run}")}
    moved = f"/consumers/{g0}/offsets/{topic}/0"
    zk.set(moved, b"15")   # an old consumer of g0 moves on

    code, out, err = zk2kafka_text("migrate", *args, "--execute", "--resume", run)
    assert code == 1, out + err
    assert kafka_offsets(kafka_admin, [g0])[g0] == {}   # put back

    # Resumed again and killed right after its Kafka commit: the stale 10 must not be in Kafka.
    again = subprocess.run([sys.executable, "-m", "migrate", "migrate", *args, "--execute", "--resume", run, "-q"],
                           env={**os.environ, "ZK2KAFKA_CRASH_AT": "after-kafka-commit"}, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == -9, again.stderr
    assert kafka_offsets(kafka_admin, [g0])[g0] == {}
    assert zk.get(moved)[0] == b"15"

    # The first resume said why, before any commit, and what it read back: ZooKeeper holds the old consumer's 15.
    (reason,) = [line for line in out.splitlines() if line.startswith(f"  failed: {g0}: ")]
    assert "ZooKeeper offsets changed since the scan" in reason and moved in reason
    assert "hold their values from before the run" not in reason
    assert reason.endswith(f"put back: Kafka holds its values from before the run; ZooKeeper: {moved} holds '15' "
                           "('10' before the run) (read back; what differs, someone else moved since: it is left as "
                           "it is)"), reason
    code, out, _ = zk2kafka_text("status", "--state-dir", str(tmp_path), run)
    assert code == 0 and "hold their values from before the run" not in out.split(f"failed: {g0}")[1]
    # The other group goes on as planned.
    assert kafka_offsets(kafka_admin, [g1])[g1] == {(topic, 0): (20, f"zk2kafka migrate {run}"),
                                                     (topic, 1): (21, f"zk2kafka migrate {run}")}


def test_status_says_interrupted_once_the_process_is_gone(cluster, zk_chroot, kafka_admin, prefix, two_groups,
                                                          tmp_path, capsys):
    state, hold = tmp_path / "state", tmp_path / "release"
    args = selected(cluster, zk_chroot, state, prefix)
    holder = subprocess.Popen([sys.executable, "-c", HELD_WRITER, str(hold), "migrate", *args, "--execute", "-q"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not hold.with_suffix(".waiting").exists():
            assert holder.poll() is None and time.monotonic() < deadline, holder.communicate()
            time.sleep(0.2)
        code, out, _ = zk2kafka_text("status", "--state-dir", str(state))
        assert code == 0 and re.search(r"^\S+\s+migrate\s+running\s", out, re.MULTILINE), out
    finally:
        holder.kill()   # SIGKILL while it holds the lock
        holder.communicate(timeout=60)
    code, out, _ = zk2kafka_text("status", "--state-dir", str(state))
    assert re.search(r"^\S+\s+migrate\s+interrupted\s", out, re.MULTILINE), out
    with Journal.open(state) as journal:
        (run,) = [r.run_id for r in journal.runs()]
        assert journal.run(run).state == "running"   # status reads; it never rewrites the journal
    code, out, _ = zk2kafka_text("status", "--state-dir", str(state), run)
    assert out.startswith(f"migrate {run}: interrupted; created ")
    (resume,) = hints(out)
    assert (f"interrupted: its process is gone (nothing holds this state dir's writers' lock: killed, or crashed); "
            f"`{resume}` goes on from here") in out
    done = paste(operator_shell(cluster, zk_chroot, state), resume)
    assert done.returncode == 0, done.stdout + done.stderr
    code, out, _ = zk2kafka_text("status", "--state-dir", str(state))
    assert re.search(rf"^{run}\s+migrate\s+done\s", out, re.MULTILINE), out


def test_skip_reasons_and_the_retention_warning_reach_the_terminal_and_status(cluster, zk, zk_chroot, kafka_admin,
                                                                             prefix, tmp_path, capsys):
    topic, live, idle = f"{prefix}orders", f"{prefix}live", f"{prefix}idle"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    put(zk, f"/consumers/{live}/offsets/{topic}/0", b"10")
    put(zk, f"/consumers/{idle}/offsets/{topic}/0", b"20")
    consumer = KafkaConsumer(topic, group_id=live, bootstrap_servers=cluster.bootstrap_server,
                             enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        assert consumer.assignment(), "the new consumer never joined its group"
        code, out, err = zk2kafka_text("migrate", *selected(cluster, zk_chroot, tmp_path, prefix), "--execute")
    finally:
        consumer.close()
    assert code == 3, out + err
    why = (f"  blocker rows: {live}: GROUP_ACTIVE_KAFKA 1; first: GROUP_ACTIVE_KAFKA: Kafka group is Stable with 1 "
           "member(s); a commit would be rejected")
    assert why in out.splitlines()
    assert re.search(rf"^warning: 1 group\(s\) would hold offsets in Kafka with no consumer yet \({idle}\); Kafka "
                     r"deletes them \S+ day\(s\)", out, re.MULTILINE), out
    run = re.search(r"^run=(\S+) ", out, re.MULTILINE)[1]
    code, shown, _ = zk2kafka_text("status", "--state-dir", str(tmp_path), run)
    assert code == 0 and why in shown.splitlines() and "groups: verified 1, skipped 1" in shown, shown


def test_verify_tells_a_consumer_that_moved_on_from_a_rewind(cluster, zk_chroot, kafka_admin, prefix, two_groups,
                                                             tmp_path, capsys):
    topic, (g0, g1) = two_groups["topic"], two_groups["groups"]
    args = selected(cluster, zk_chroot, tmp_path, prefix)
    code, done, err = zk2kafka_json("migrate", *args, "--execute")
    assert code == 0, err
    kafka_admin.alter_group_offsets(g0, {TopicPartition(topic, 0): OffsetAndMetadata(40, "new consumer", -1)})
    kafka_admin.alter_group_offsets(g1, {TopicPartition(topic, 1): OffsetAndMetadata(3, "a reset", -1)})

    code, out, _ = zk2kafka_text("verify", *args)
    assert code == 3, out
    assert ("  CONFLICT                   2: Kafka ahead in 1 (a consumer moved on past the migrated offset); Kafka "
            "behind in 1 (below ZooKeeper's offset: rewound, or never migrated)") in out.splitlines()
    code, out, _ = zk2kafka_text("verify", *connection(cluster, zk_chroot, tmp_path), "--run", done["run"])
    assert code == 3, out
    assert f"  differs: {g0} {topic}-0: Kafka holds 40, the run wrote 10 (a consumer moved on past it)" in out
    assert (f"  differs: {g1} {topic}-1: Kafka holds 3, the run wrote 21 (rewound below it: a reset, or another "
            "writer)") in out
