"""`zk2kafka sync` without --execute: it reads, watches and decides as a writing run does, and
writes nothing (no commit in Kafka, no run in the journal), in one process and sharded over two.
Drives the real command as a process against the sandbox's ZooKeeper and Kafka.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.journal.journal import Journal

from support.seeding import kafka_offsets, make_topic, put
from support.wait import wait_for

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize("writers", [1, 2])
def test_sync_dry_run_follows_changes_and_writes_nothing(cluster, zk, zk_chroot, kafka_admin,
                                                         prefix, tmp_path, writers):
    topic, group = f"{prefix}orders", f"{prefix}billing"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 0)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"100")
    state, log = tmp_path / "state", tmp_path / "sync.log"
    with log.open("w") as err:
        sync = subprocess.Popen(
            [sys.executable, "-m", "migrate", "sync", "--zookeeper", zk_chroot,
             "--bootstrap-server", cluster.bootstrap_server, "--group", f"{prefix}.*",
             "--state-dir", str(state), "--rescan-every", "1h", "--stop-after", "120s", "--json",
             "--quiet-for", "1s",
             "--writers", str(writers)],
            stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            def said(offset):
                return f"would commit {topic}-0 -> {offset} for group {group}" in log.read_text()

            wait_for("the first pass", lambda: said(100))
            # Only a watch can bring this change in before the next re-scan, an hour away.
            zk.set(f"/consumers/{group}/offsets/{topic}/0", b"150")
            wait_for("the watched change", lambda: said(150))
            # Ready again once the changed offset stayed still for --quiet-for.
            wait_for("the group ready again", lambda: log.read_text().split(
                f"would commit {topic}-0 -> 150")[1].count("ready to start its new consumers") == 1)
        finally:
            sync.send_signal(signal.SIGTERM)
            out, _ = sync.communicate(timeout=60)
    assert sync.returncode == 0, log.read_text()[-3000:]
    result = json.loads(out)
    assert result["dry_run"] is True and result["kind"] == "sync"
    assert result["commits"] == 0 and result["offsets_mirrored"] == 0
    assert result["groups_ready"] == [group]   # decided as a writing run would
    assert kafka_offsets(kafka_admin, [group])[group] == {}, "a dry run committed"
    with Journal.open(state) as journal:
        assert journal.runs() == [], "a dry run journaled a run"
