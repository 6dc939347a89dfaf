"""A ZooKeeper restarted with its clock five minutes behind the brokers' (libfaketime, `FAKETIME=-300s`), its data
dir kept: the brokers' registrations, stamped before the restart, show the clocks agreeing, and the old consumers'
last write after it is stamped five minutes early. A canary's commit made before that write would read as newer by
almost five minutes: with the margin assumed (`--clock-margin 1s`) a takeover, and the old consumers' progress lost.

The gate and `sync --execute` measure the current leader's clock with the clock probe (migrate/zk/clock.py: an
ephemeral znode created and deleted under /zk2kafka, stamped between the create's send and its answer), find it
five minutes behind, widen the margin by as much, and judge the canary's value as what it is. Forbidden the probe
(`--no-clock-probe`), the gate says that ZooKeeper's clock was not bounded from above.

Its own sandbox (ZooKeeper restarts under libfaketime); skipped where Debian's `faketime` is not installed, which
`.ci/run` installs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient

from migrate.jvm.server import zk_answers
from migrate.sandbox.cluster import LocalCluster
from support.cli import ROOT, zk2kafka_json
from support.consumers import REBALANCE_MS, joined, settled_commit
from support.faults import kill9, server, start
from support.seeding import kafka_offsets, make_topic, put
from support.servers import CACHE_DIR
from support.wait import wait_for

pytestmark = pytest.mark.integration
LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
BEHIND = 300
TOPIC, CANARY, PLAIN = "orders", "billing", "reports"
MARGIN = ["--clock-margin", "1s"]


@pytest.fixture(scope="module")
def behind(tmp_path_factory):
    """The cluster, the canary's commit made while ZooKeeper's clock was right, then ZooKeeper restarted five
    minutes behind, its data kept."""
    if not LIBFAKETIME.exists():
        pytest.skip("libfaketime is not installed (apt-get install faketime)")
    cluster = LocalCluster(tmp_path_factory.mktemp("zookeeper-behind"), CACHE_DIR)
    endpoints = cluster.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=endpoints.bootstrap_server)
        try:
            make_topic(admin, endpoints.bootstrap_server, TOPIC, 1, 100)
        finally:
            admin.close()
        canary = joined(endpoints.bootstrap_server, CANARY, TOPIC, rebalance_ms=REBALANCE_MS)
        try:
            settled_commit(canary, {TopicPartition(TOPIC, 0): OffsetAndMetadata(100, "", -1)})
        finally:
            canary.close()
        zookeeper = server(cluster, "zookeeper")
        kill9(zookeeper)
        zookeeper.env.update({"LD_PRELOAD": str(LIBFAKETIME), "FAKETIME": f"-{BEHIND}s",
                              "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_FORCE_MONOTONIC_FIX": "0"})
        start(zookeeper)
        # A JVM under libfaketime starts slowly (about 100 s on two cores).
        wait_for("ZooKeeper under libfaketime to answer", lambda: zk_answers(endpoints.zk_server), 300)
        yield endpoints
    finally:
        cluster.stop()


def old_consumers_write(endpoints) -> None:
    """The old consumers' last commits to ZooKeeper, after the canary's by this host's clock (stamped five
    minutes early); `reports`' offsets only ZooKeeper holds (sync mirrors them)."""
    zk = KazooClient(hosts=endpoints.zookeeper)
    zk.start()
    try:
        for group in (CANARY, PLAIN):
            put(zk, f"/consumers/{group}/offsets/{TOPIC}/0", b"60")
        stamped = zk.get(f"/consumers/{CANARY}/offsets/{TOPIC}/0")[1].mtime / 1000
    finally:
        zk.stop()
        zk.close()
    assert stamped < time.time() - BEHIND + 30, "ZooKeeper's clock is not behind"


def test_a_zookeeper_clock_behind_does_not_turn_an_earlier_commit_into_a_takeover(behind, tmp_path):
    old_consumers_write(behind)
    where = ["--zookeeper", behind.zookeeper, "--bootstrap-server", behind.bootstrap_server]
    gate = ["ready-for-kraft", *where, "--quiet-for", "1s", "--group", CANARY, *MARGIN]

    code, found, err = zk2kafka_json(*gate, "--state-dir", str(tmp_path / "gate"))
    assert code == 3 and found, err
    (verdict,) = found["verdicts"]
    assert verdict["taken_over"] == 0 and len(verdict["differs"]) == 1, verdict
    assert "ZooKeeper 60, Kafka 100" in verdict["differs"][0], verdict
    clocks = found["clocks"]
    zookeeper = clocks["zookeeper"]["ahead_at_most"]
    assert -BEHIND - 5 < zookeeper["seconds"] < -BEHIND + 5, clocks
    assert zookeeper["by"].startswith("the clock probe /zk2kafka/clock-"), clocks
    assert clocks["effective_margin"] >= BEHIND - 5, clocks
    assert f"clock margin {clocks['effective_margin']:g}s" in verdict["differs"][0], verdict
    zk = KazooClient(hosts=behind.zookeeper)
    zk.start()
    try:
        assert zk.get_children("/zk2kafka") == [], "the clock probe's znode was left behind"
    finally:
        zk.stop()
        zk.close()

    # Forbidden the probe, nothing bounds ZooKeeper's clock from above: the registrations, stamped before the
    # restart, show the clocks agreeing, and the gate says what it could not measure.
    code, found, err = zk2kafka_json(*gate, "--no-clock-probe", "--state-dir", str(tmp_path / "unprobed"))
    assert found, err
    assert found["clocks"]["zookeeper"]["not_measured_from_above"] == (
        "the clock probe is forbidden (--no-clock-probe)"), found["clocks"]
    assert found["clocks"]["effective_margin"] < BEHIND - 5, found["clocks"]

    # sync --execute probes too: it mirrors `reports` and leaves `billing` alone as differing.
    state = tmp_path / "sync"
    sync = subprocess.Popen(
        [sys.executable, "-m", "migrate", "sync", "--execute", *where, "--state-dir", str(state), "--stop-after",
         "5m", "--rescan-every", "1s", "--json", "-q", *MARGIN], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=ROOT)
    try:
        def stopped() -> dict:
            assert sync.poll() is None, sync.communicate()[1]
            for status in state.glob("reports/*/sync-status.json"):
                try:
                    return json.loads(status.read_text()).get("groups_stopped") or {}
                except ValueError:
                    return {}
            return {}
        wait_for("sync to leave billing alone", lambda: CANARY in stopped(), 120)
        why = stopped()[CANARY]
        sync.terminate()
        sync.communicate(timeout=60)
    finally:
        if sync.poll() is None:
            sync.kill()
    assert why.startswith("differs: ") and "orders-0 = 100 (ZooKeeper 60" in why, why
    assert int(why.split("clock margin ")[1].split("s")[0]) >= BEHIND - 5, why
    admin = KafkaAdminClient(bootstrap_servers=behind.bootstrap_server)
    try:
        held = kafka_offsets(admin, [CANARY, PLAIN])
    finally:
        admin.close()
    assert held[CANARY] == {(TOPIC, 0): (100, "")}, "sync moved the canary's offset"
    assert held[PLAIN][(TOPIC, 0)][0] == 60
