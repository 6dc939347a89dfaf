"""`sync`'s "ready" needs quiet, not only an empty ids/, and a group another zk2kafka run wrote is named as such.

Both run the real `zk2kafka sync --execute` as a process against the session cluster. The writer that never
registers is a real OffsetCommit v0 client (offset_commit_v0.py) committing through the 3.9 broker, which
stores each commit in its own ZooKeeper: sync sees only the writes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.offset_commit_v0 import Committer
from support.seeding import kafka_offsets, make_topic, put
from support.wait import wait_for


ROOT = Path(__file__).parents[2]
QUIET_FOR = 4.0   # seconds: sync's --quiet-for here, far above the client's commit interval
EVERY = 0.4       # the v0 client's commit interval


def start_sync(zookeeper: str, bootstrap: str, prefix: str, state: Path, log: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "migrate", "sync", "--execute", "--zookeeper", zookeeper, "--bootstrap-server",
         bootstrap, "--group", f"{prefix}.*", "--state-dir", str(state), "--quiet-for", f"{QUIET_FOR:g}s",
         "--rescan-every", "30s", "--stop-after", "60s", "--json", *extra],
        stdout=subprocess.PIPE, stderr=log.open("w"), text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def status(state: Path) -> dict:
    found = next(state.glob("reports/*/sync-status.json"), None)
    try:
        return json.loads(found.read_text()) if found else {}
    except ValueError:   # replaced while read
        return {}


def stop(sync: subprocess.Popen) -> dict:
    sync.send_signal(signal.SIGTERM)
    out, _ = sync.communicate(timeout=60)
    assert sync.returncode == 0
    return json.loads(out)


def test_a_group_an_unregistered_v0_client_commits_is_not_ready_until_quiet(cluster, broker_zk, kafka_admin, prefix,
                                                                            tmp_path):
    topic, group = f"{prefix}events", f"{prefix}legacy-app"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    client = Committer(cluster.bootstrap_server, group, {(topic, 0): 10}, every=EVERY)
    client.start()
    znode = f"/consumers/{group}/offsets/{topic}/0"
    wait_for("the v0 client's first commit in ZooKeeper", lambda: broker_zk.exists(znode))
    assert not broker_zk.exists(f"/consumers/{group}/ids"), "a v0 client registers nowhere"

    state, log = tmp_path / "state", tmp_path / "sync.log"
    sync = start_sync(cluster.zookeeper, cluster.bootstrap_server, prefix, state, log)
    try:
        wait_for("sync's first pass", lambda: group in status(state).get("groups_synced", []))
        # While the client commits, sync mirrors every commit and never calls the group ready.
        until = time.monotonic() + 2.5 * QUIET_FOR
        while time.monotonic() < until:
            assert group not in status(state)["groups_ready"], "ready while an unregistered client commits"
            time.sleep(0.1)
        last = client.stop()
        final = client.committed[-1][1][topic, 0]
        wait_for("the last commit in Kafka", lambda: kafka_offsets(kafka_admin, [group])[group].get((topic, 0),
                                                                                                    (0,))[0] == final)
        ready_after = wait_for("the group ready once quiet", lambda: group in status(state)["groups_ready"]
                               and time.time() - last, timeout=QUIET_FOR + 10)
        assert ready_after >= QUIET_FOR - 0.5, f"ready {ready_after:.1f}s after the last commit"
    finally:
        if client.is_alive():
            client.stop()
        result = stop(sync)

    assert group in result["groups_ready"] and result["offsets_mirrored"] >= 2 * QUIET_FOR / EVERY
    text = log.read_text()
    assert (f"group {group}: no old consumer left in ZooKeeper ids/, but not ready: its offsets moved within the "
            f"last {QUIET_FOR:g}s: {znode} at ") in text, text[-2000:]
    assert text.count(f"group {group}: no old consumer left in ZooKeeper ids/, but not ready") == 1   # said once
    assert f"group {group}: no old consumer left in ZooKeeper ids/, every offset is in Kafka and none moved" in text


def test_sync_names_a_group_another_state_dir_migrated_as_another_zk2kafka_run(cluster, zk, zk_chroot, kafka_admin,
                                                                               prefix, tmp_path):
    topic, group = f"{prefix}orders", f"{prefix}billing"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 200)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"100")
    migrated = subprocess.run(
        [sys.executable, "-m", "migrate", "migrate", "--execute", "--zookeeper", zk_chroot, "--bootstrap-server",
         cluster.bootstrap_server, "--group", group, "--state-dir", str(tmp_path / "first"), "--json", "-q"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert migrated.returncode == 0, migrated.stderr
    first = json.loads(migrated.stdout)["run"]
    assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (100, f"zk2kafka migrate {first}")}
    time.sleep(QUIET_FOR)   # the migration's own write to the znode is older than the window

    state, log = tmp_path / "other", tmp_path / "sync.log"
    sync = start_sync(zk_chroot, cluster.bootstrap_server, prefix, state, log)
    try:
        wait_for("the group ready: its offset is in Kafka", lambda: group in status(state).get("groups_ready", []))
        zk.set(f"/consumers/{group}/offsets/{topic}/0", b"120")   # a straggler commits to ZooKeeper
        wait_for("the group left alone", lambda: group in status(state)["groups_stopped"])
    finally:
        result = stop(sync)

    why = result["groups_stopped"][group]
    assert why.startswith("written by another zk2kafka run: Kafka holds ") and f"zk2kafka migrate {first}" in why
    assert "new consumer" not in why
    assert group not in result["groups_ready"], "called both ready and stopped"
    assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (100, f"zk2kafka migrate {first}")}


def test_zk2kafkas_own_migrate_write_is_not_taken_for_an_unregistered_writer(cluster, zk, zk_chroot, kafka_admin,
                                                                             prefix, tmp_path):
    topic, group = f"{prefix}orders", f"{prefix}billing"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 200)
    # As an old consumer may leave it (a trailing newline): the dual commit rewrites it as Kafka's tools
    # write it, so its mtime is the migration's own write. (A znode that holds the run's bytes already is
    # left alone, and its mtime stays the old consumer's.)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"100\n")
    state, log = tmp_path / "state", tmp_path / "sync.log"
    migrated = subprocess.run(
        [sys.executable, "-m", "migrate", "migrate", "--execute", "--zookeeper", zk_chroot, "--bootstrap-server",
         cluster.bootstrap_server, "--group", group, "--state-dir", str(state), "--json", "-q"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert migrated.returncode == 0, migrated.stderr
    run = json.loads(migrated.stdout)["run"]
    znode = f"/consumers/{group}/offsets/{topic}/0"
    assert zk.get(znode)[0] == b"100"
    written = zk.exists(znode).mtime / 1000
    assert time.time() - written < 30, "the migration wrote the znode just now"

    # A window far longer than the time the sync takes to start: it reads the group inside it.
    sync = start_sync(zk_chroot, cluster.bootstrap_server, prefix, state, log, "--quiet-for", "2m")   # its journal
    said = f"group {group}: no old consumer left in ZooKeeper ids/"
    try:
        wait_for("sync's word on the group", lambda: said in log.read_text())
    finally:
        stop(sync)
    text = log.read_text()
    assert (f"{said}; its offsets were last written by zk2kafka itself (migrate run {run}, by the journal): "
            f"{znode} at ") in text, text[-2000:]
    assert "may still commit" not in text
