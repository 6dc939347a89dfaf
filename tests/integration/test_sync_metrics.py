"""`zk2kafka sync --metrics-address`: its Prometheus series and /healthz, scraped from the real
command while groups are switched one at a time on the sandbox's ZooKeeper and Kafka, in one
process and sharded over two (`--writers 2`: the series are the shards' merged).

The old consumers are their registrations under ids/ (what sync reads of them) and the offsets
they commit to ZooKeeper; the new consumers are real kafka-python group members. The scrape is
parsed with prometheus_client's own parser.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import json

import pytest

from migrate.journal.journal import Journal
from migrate.sync.follower_shards import shard_of

from support.consumers import Member
from support.seeding import kafka_offsets, make_topic, put
from support.sync_process import get, scrape, scraped_when, start_sync, stop_sync, value
from support.wait import free_port, wait_for

ROOT = Path(__file__).parents[2]
PARTITIONS = 2


@pytest.mark.parametrize("writers", [1, 2])
def test_sync_series_move_as_groups_are_switched(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                 tmp_path, writers):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, PARTITIONS, 100)
    first = f"{prefix}billing"
    # Sharded, the two groups are followed by different processes.
    second = next(g for g in (f"{prefix}shipping{i}" for i in range(100))
                  if writers == 1 or shard_of(g, writers) != shard_of(first, writers))
    for g in (first, second):
        put(zk, f"/consumers/{g}/ids/{g}_old-1", b'{"version":1}')   # an old consumer, registered
        for p in range(PARTITIONS):
            put(zk, f"/consumers/{g}/offsets/{topic}/{p}", b"10")
    address = f"127.0.0.1:{free_port()}"
    log = tmp_path / "sync.log"
    new = None
    with log.open("w") as err:
        sync = start_sync(zk_chroot, cluster.bootstrap_server, prefix, tmp_path / "state",
                          address, err, "--writers", str(writers), "--json")
        try:
            # Both groups mirrored: their old consumers are still registered, so not ready.
            # The re-scan is counted once its pass has committed: wait for both.
            samples = scraped_when("both groups mirrored in the series", address, lambda s: value(
                s, "zk2kafka_sync_offsets_mirrored_total") == 2 * PARTITIONS and value(
                s, "zk2kafka_sync_rescan_duration_seconds_count") >= 1, timeout=60)
            assert value(samples, "zk2kafka_sync_groups", state="mirroring") == 2
            assert value(samples, "zk2kafka_sync_groups", state="ready") == 0
            assert value(samples, "zk2kafka_sync_groups", state="stopped") == 0
            for g in (first, second):
                assert value(samples, "zk2kafka_sync_group_state", group=g, state="mirroring") == 1
                assert value(samples, "zk2kafka_sync_group_offsets_mirrored_total",
                             group=g) == PARTITIONS
                assert value(samples, "zk2kafka_sync_group_last_mirrored_timestamp_seconds",
                             group=g) > 0
                assert value(samples, "zk2kafka_sync_group_lag_partitions", group=g) == 0
            assert value(samples, "zk2kafka_sync_watches_armed_total") > 0
            assert value(samples, "zk2kafka_sync_watch_rearm_duration_seconds_count") > 0
            assert not any("partition" in dict(labels) for _, labels in samples)
            assert get(f"http://{address}/healthz") == (200, "ok\n")
            assert get(f"http://{address}/")[0] == 404

            # An old consumer commits: the change is mirrored and counted against its group.
            armed = value(scrape(address), "zk2kafka_sync_watches_armed_total")
            zk.set(f"/consumers/{first}/offsets/{topic}/0", b"60")
            wait_for("the change counted", lambda: value(
                scrape(address), "zk2kafka_sync_group_offsets_mirrored_total",
                group=first) == PARTITIONS + 1)
            assert kafka_offsets(kafka_admin, [first])[first][(topic, 0)][0] == 60
            time.sleep(4)   # two re-scans (--rescan-every 2s) read every group again
            # Only the watch that fired was armed again: the others never stopped watching.
            assert value(scrape(address), "zk2kafka_sync_watches_armed_total") == armed + 1

            # The switch of the first group: its old consumer leaves ids/, so it is ready...
            zk.delete(f"/consumers/{first}/ids/{first}_old-1")
            samples = scraped_when("the first group ready", address, lambda s: value(
                s, "zk2kafka_sync_groups", state="ready") == 1)
            assert value(samples, "zk2kafka_sync_group_state", group=first, state="ready") == 1
            assert value(samples, "zk2kafka_sync_group_state", group=second, state="mirroring") == 1

            # ...then its new consumer joins in Kafka, and sync stops for it.
            new = Member(cluster.bootstrap_server, topic, first)
            new.start()
            samples = scraped_when("the first group stopped", address, lambda s: value(
                s, "zk2kafka_sync_groups_stopped", reason="kafka_members") == 1, timeout=60)
            assert value(samples, "zk2kafka_sync_groups", state="stopped") == 1
            assert value(samples, "zk2kafka_sync_groups", state="mirroring") == 1
            assert value(samples, "zk2kafka_sync_groups", state="ready") == 0
            assert value(samples, "zk2kafka_sync_group_state", group=first, state="stopped") == 1
            assert value(samples, "zk2kafka_sync_groups_stopped", reason="taken_over") == 0

            # The second group still follows ZooKeeper.
            zk.set(f"/consumers/{second}/offsets/{topic}/1", b"70")
            wait_for("the second group's change counted", lambda: value(
                scrape(address), "zk2kafka_sync_group_offsets_mirrored_total",
                group=second) == PARTITIONS + 1)
            assert value(scrape(address), "zk2kafka_sync_offsets_mirrored_total") == 2 * PARTITIONS + 2
        finally:
            if new is not None:
                new.halt.set()
                new.join(timeout=30)
            out = stop_sync(sync, log)
    # What the command prints and the status file: every shard's groups and figures.
    result = json.loads(out)
    status = json.loads((Path(result["report"]) / "sync-status.json").read_text())
    for figures in (result, status):
        assert figures["groups_synced"] == [second]
        assert figures["groups_stopped"].keys() == {first}
        assert figures["offsets_mirrored"] == 2 * PARTITIONS + 2
        assert figures["rescans"] >= 1


def test_no_group_metrics_keeps_only_the_totals(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                tmp_path):
    topic, group = f"{prefix}orders", f"{prefix}billing"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"10")
    address = f"127.0.0.1:{free_port()}"
    log = tmp_path / "sync.log"
    with log.open("w") as err:
        sync = start_sync(zk_chroot, cluster.bootstrap_server, prefix, tmp_path / "state",
                          address, err, "--no-group-metrics")
        try:
            # Ready is said after the pass's commit is journaled: a scrape between the two sees
            # the offset counted and the group still mirroring, so wait for the later of the two.
            samples = scraped_when("the group ready", address, lambda s: value(
                s, "zk2kafka_sync_groups", state="ready") == 1, timeout=60)   # no old consumer
        finally:
            stop_sync(sync, log)
    assert value(samples, "zk2kafka_sync_offsets_mirrored_total") == 1
    assert value(samples, "zk2kafka_sync_lag_partitions") == 0
    assert not [name for name, labels in samples if "group" in dict(labels)]
    assert not [name for name, _ in samples if name.startswith("zk2kafka_sync_group_")]


@pytest.mark.parametrize("writers", [1, 2])
def test_a_metrics_address_in_use_is_one_clear_line(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                    tmp_path, writers):
    topic, group = f"{prefix}orders", f"{prefix}billing"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"10")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = "127.0.0.1:%d" % taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "migrate", "sync", "--execute", "--zookeeper", zk_chroot,
             "--bootstrap-server", cluster.bootstrap_server, "--group", f"{prefix}.*",
             "--state-dir", str(tmp_path / "state"), "--stop-after", "30s",
             "--metrics-address", address, "--writers", str(writers)],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr
    assert f"--metrics-address {address}: cannot listen there" in done.stderr
    assert "Traceback" not in done.stderr
    with Journal.open(tmp_path / "state") as journal:
        assert journal.runs() == [], "a run that never ran is journaled"
    # Nor did it write: the shards had their sessions open, and wait for the command to start.
    assert kafka_offsets(kafka_admin, [group])[group] == {}
