"""sync's safety: no rewind of a new consumer across restarts, the diff's pick across two
layouts with both paths watched, and rows sync cannot mirror reported instead of stalling or called ready.

Each test drives the real `zk2kafka sync --execute` as a process (it installs its own SIGTERM handler)
against the sandbox's ZooKeeper and Kafka, with --stop-after keeping it short.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from kafka import TopicPartition
from kafka.structs import OffsetAndMetadata
from kazoo.security import make_digest_acl

from migrate import cli
from migrate.journal.journal import Journal

from support.seeding import kafka_offsets, make_topic, put
from support.wait import wait_for

ROOT = Path(__file__).parents[2]
LOCK = make_digest_acl("someone-else", "secret", all=True)   # a znode sync may not read: UNREADABLE


def run_sync(cluster, zk_chroot, state, prefix, *extra, stop_after="3s", timeout=60) -> tuple[int, dict, str]:
    """One `zk2kafka sync --execute` run to its --stop-after; (exit code, its JSON result, its stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "migrate", "sync", "--execute", "--zookeeper", zk_chroot, "--bootstrap-server",
         cluster.bootstrap_server, "--group", f"{prefix}.*", "--state-dir", str(state), "--stop-after", stop_after,
         "--json", *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip() else {}), done.stderr


def consumer_commit(admin, group, offsets: dict[tuple[str, int], int]) -> None:
    """What a new consumer's commit leaves in Kafka: its offsets, with the empty metadata consumers send."""
    admin.alter_group_offsets(group, {TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                                      for (t, p), o in offsets.items()})




# -- a restarted or new sync run never rewinds a new consumer ------------------------------------------------------


def test_sync_restart_does_not_rewind_new_consumer(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    topic, group = f"{prefix}orders", f"{prefix}billing"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 0)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"100")
    state = tmp_path / "state"

    code, first, err = run_sync(cluster, zk_chroot, state, prefix)
    assert code == 0, err
    assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (100, f"zk2kafka sync {first['run']}")}

    # Someone else committed 5000 while sync was down: a value zk2kafka did not write, which no restart moves.
    # Committed from outside (no consumer joined the group), it shows no new consumer: the group differs.
    consumer_commit(kafka_admin, group, {(topic, 0): 5000})
    code, second, err = run_sync(cluster, zk_chroot, state, prefix)   # restarted, as troubleshooting.md says
    assert code == 0, err
    assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (5000, "")}, "sync rewound the value"
    assert second["groups_stopped"][group].startswith("differs: ") and group not in second["groups_ready"]
    assert "from outside: no consumer had joined the group then" in second["groups_stopped"][group]
    assert f"{topic}-0" in second["groups_stopped"][group]   # which partition Kafka holds someone else's value for
    with Journal.open(state) as journal:
        assert journal.groups_of(second["run"], [group])[group].state == "skipped"


def test_sync_with_custom_metadata_tells_its_own_commits_by_the_journal(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                        tmp_path):
    # --metadata "" is the worst case: exactly what every consumer sends, so only the journal can tell.
    topic, group = f"{prefix}orders", f"{prefix}billing"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 0)
    path = f"/consumers/{group}/offsets/{topic}/0"
    put(zk, path, b"100")
    state = tmp_path / "state"

    code, _, err = run_sync(cluster, zk_chroot, state, prefix, "--metadata", "")
    assert code == 0, err
    assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (100, "")}

    # The old consumer moved on while sync was down: a new run goes on mirroring over its predecessor's value.
    zk.set(path, b"120")
    code, second, err = run_sync(cluster, zk_chroot, state, prefix, "--metadata", "")
    assert code == 0, err
    assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (120, "")}
    assert group in second["groups_synced"]

    # Then someone else commits 5000, with the same empty metadata; ZooKeeper still moves (a straggler), after it.
    consumer_commit(kafka_admin, group, {(topic, 0): 5000})
    zk.set(path, b"130")
    code, third, err = run_sync(cluster, zk_chroot, state, prefix, "--metadata", "")
    assert code == 0, err
    assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (5000, "")}, "sync rewound the value"
    assert third["groups_stopped"][group].startswith("differs: ")


# -- two layouts: the diff's row, both paths watched ---------------------------------------------------------------


def test_sync_picks_the_diff_row_across_two_layouts_and_watches_both(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                     tmp_path, capsys):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)   # every offset below inside the log
    standard, old = "/consumers/{}/offsets/%s/0" % topic, "/consumers/{}/offset/%s/0" % topic
    newer_standard, newer_old, malformed = f"{prefix}a", f"{prefix}b", f"{prefix}c"
    # The znode written last is the consumer's latest progress, whichever layout it is under.
    put(zk, old.format(newer_standard), b"45")
    put(zk, standard.format(newer_old), b"50")
    put(zk, old.format(malformed), b"30")
    time.sleep(0.05)
    put(zk, standard.format(newer_standard), b"40")
    put(zk, old.format(newer_old), b"55")
    put(zk, standard.format(malformed), b"x1")   # newer and unreadable as a number: it must block, not the 30
    state = tmp_path / "state"

    def move_the_stale_znodes():
        # Once sync mirrored the first values, the znode it did not pick becomes the newest: a watch on
        # it (not only on the picked one) must bring the change; re-scans are too rare here to do it.
        def held():
            return {g: {k: o for k, (o, _) in v.items()}
                    for g, v in kafka_offsets(kafka_admin, [newer_standard, newer_old]).items()}
        wait_for("sync's first commits",
                 lambda: held() == {newer_standard: {(topic, 0): 40}, newer_old: {(topic, 0): 55}})
        zk.set(old.format(newer_standard), b"47")
        zk.set(standard.format(newer_old), b"58")

    target = _Target(move_the_stale_znodes)
    mover = threading.Thread(target=target, daemon=True)
    mover.start()
    code, result, err = run_sync(cluster, zk_chroot, state, prefix, "--rescan-every", "10m", stop_after="8s")
    mover.join(timeout=30)
    assert code == 0, err
    assert target.error is None, target.error
    held = kafka_offsets(kafka_admin, [newer_standard, newer_old, malformed])
    assert {g: {k: o for k, (o, _) in v.items()} for g, v in held.items()} == {
        newer_standard: {(topic, 0): 47}, newer_old: {(topic, 0): 58}, malformed: {}}
    assert malformed not in result["groups_ready"]
    assert "MALFORMED" in result["groups_unmirrored"][malformed][f"{topic}-0"]

    # The diff, on the same znodes, picks the same rows: what sync committed is IN_SYNC, the MALFORMED row blocks.
    code = cli.main(["diff", "--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
                     "--group", f"{prefix}.*", "--state-dir", str(tmp_path / "diff"), "--json", "-q"])
    report = Path(json.loads(capsys.readouterr().out)["report"])
    with (report / "rows.csv").open(newline="") as f:
        rows = {r["group"]: r for r in csv.DictReader(f)}
    assert code == 3   # the MALFORMED row is a blocker
    assert (rows[newer_standard]["zk_offset"], rows[newer_standard]["status"]) == ("47", "IN_SYNC")
    assert (rows[newer_old]["zk_offset"], rows[newer_old]["status"]) == ("58", "IN_SYNC")
    assert rows[malformed]["status"] == "MALFORMED"


class _Target:
    """A thread target that keeps the exception it ended with, for the test's thread to assert on."""

    def __init__(self, fn):
        self.fn, self.error = fn, None

    def __call__(self):
        try:
            self.fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised by the test in its own thread
            self.error = exc


# -- rows sync cannot mirror ---------------------------------------------------------------------------------------


def test_sync_reports_unknown_partitions_without_stalling_and_journals_the_rest(cluster, zk, zk_chroot, kafka_admin,
                                                                                 prefix, tmp_path):
    topic, gone, group = f"{prefix}orders", f"{prefix}deleted", f"{prefix}billing"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 0)
    make_topic(kafka_admin, cluster.bootstrap_server, gone, 1, 0)
    kafka_admin.delete_topics([gone])
    wait_for("the topic's deletion", lambda: not any(
        t["partitions"] for t in kafka_admin.describe_topics([gone])), timeout=30)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"5")
    put(zk, f"/consumers/{group}/offsets/{gone}/0", b"7")
    state = tmp_path / "state"

    started = time.monotonic()
    code, result, err = run_sync(cluster, zk_chroot, state, prefix, timeout=60)   # a stalled commit would take 120s
    assert code == 0, err
    assert time.monotonic() - started < 30, "a cycle stalled on the unknown partition"
    assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (5, f"zk2kafka sync {result['run']}")}
    assert "no such topic or partition in Kafka" in result["groups_unmirrored"][group][f"{gone}-0"]
    assert group not in result["groups_ready"]
    with Journal.open(state) as journal:
        assert [(p.topic, p.partition, p.offset) for p in journal.partitions(result["run"], group)] == [(topic, 0, 5)]


def test_sync_never_calls_a_group_with_unmirrorable_rows_ready(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    topic, group, clean = f"{prefix}orders", f"{prefix}billing", f"{prefix}clean"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 3, 0)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"5")
    put(zk, f"/consumers/{group}/offsets/{topic}/1", b"abc")             # MALFORMED
    put(zk, f"/consumers/{group}/offsets/{topic}/2", b"9", acl=[LOCK])    # UNREADABLE (NoAuth)
    put(zk, f"/consumers/{clean}/offsets/{topic}/0", b"6")
    zk.ensure_path(f"/consumers/{group}/ids")                            # its old consumers all left
    state = tmp_path / "state"

    # Re-scans every second: each group is read again after its first commit, when nothing is left to change.
    code, result, err = run_sync(cluster, zk_chroot, state, prefix, "--rescan-every", "1s",
                                   "--quiet-for", "1s", stop_after="4s")
    assert code == 0, err
    assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (5, f"zk2kafka sync {result['run']}")}
    assert group not in result["groups_ready"], "a group with MALFORMED and UNREADABLE rows was called ready"
    assert clean in result["groups_ready"]
    rows = result["groups_unmirrored"][group]
    assert set(rows) == {f"{topic}-1", f"{topic}-2"}
    assert rows[f"{topic}-1"].startswith("MALFORMED") and rows[f"{topic}-2"].startswith("UNREADABLE")
    assert "not ready" in err and f"{topic}-1" in err   # said in the log too, not only in the JSON
