"""A broker whose clock runs five minutes ahead of ZooKeeper's (libfaketime, `FAKETIME=+300s`): an earlier commit
must not pass for a takeover. A canary of the new application commits and leaves; the old consumers then commit to
ZooKeeper after it, by this host's clock; the broker stamped the canary's commit five minutes "later". With the
margin assumed (`--clock-margin 1s`) the commit would look newer than ZooKeeper's write by almost five minutes.

ready-for-kraft, the diff and sync measure the broker's lead instead (migrate/kafka/clocks.py): its registration
in ZooKeeper (its own clock's `timestamp` against the znode's ctime), the records of __consumer_offsets stamped
after the moment they were read, and, in sync, its own commits read back (stamped before the moment they were
sent). Each widens the margin by the lead it measured, says so in its evidence, and judges the canary's value as
what it is: not shown to be a new consumer's.

Its own sandbox (the broker starts under libfaketime); skipped where Debian's `faketime` is not installed, which
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

from migrate.sandbox.cluster import LocalCluster
from support.cli import ROOT, zk2kafka_json
from support.consumers import joined
from support.seeding import kafka_offsets, make_topic, put
from support.servers import CACHE_DIR
from support.wait import wait_for

pytestmark = pytest.mark.integration
LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
AHEAD = 300
TOPIC, CANARY, PLAIN = "orders", "billing", "reports"
MARGIN = ["--clock-margin", "1s"]


@pytest.fixture(scope="module")
def ahead(tmp_path_factory):
    if not LIBFAKETIME.exists():
        pytest.skip("libfaketime is not installed (apt-get install faketime)")
    cluster = LocalCluster(tmp_path_factory.mktemp("clock-ahead"), CACHE_DIR, broker_env={
        "LD_PRELOAD": str(LIBFAKETIME), "FAKETIME": f"+{AHEAD}s", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        # Without it libfaketime 0.9.10 returns the JVM's timed waits at once: the broker spins, and its
        # controller never reaches it.
        "FAKETIME_FORCE_MONOTONIC_FIX": "0"})
    endpoints = cluster.start()
    yield endpoints
    cluster.stop()


def seed(endpoints) -> float:
    """The canary's commit (the broker stamps it 5 minutes ahead), then the old consumers' commit to ZooKeeper
    after it; a second group whose offsets only ZooKeeper holds (sync mirrors it). ZooKeeper's last write, s."""
    admin = KafkaAdminClient(bootstrap_servers=endpoints.bootstrap_server)
    try:
        make_topic(admin, endpoints.bootstrap_server, TOPIC, 1, 100)
        canary = joined(endpoints.bootstrap_server, CANARY, TOPIC)
        canary.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(100, "", -1)})
        canary.close()
    finally:
        admin.close()
    zk = KazooClient(hosts=endpoints.zookeeper)
    zk.start()
    try:
        for group in (CANARY, PLAIN):
            put(zk, f"/consumers/{group}/offsets/{TOPIC}/0", b"60")
        written = zk.get(f"/consumers/{CANARY}/offsets/{TOPIC}/0")[1].mtime / 1000
    finally:
        zk.stop()
        zk.close()
    wait_for("the 1 s margin to pass after ZooKeeper's write", lambda: time.time() > written + 1.5, 10)
    return written


def test_a_broker_clock_ahead_does_not_turn_an_earlier_commit_into_a_takeover(ahead, tmp_path):
    seed(ahead)
    where = ["--zookeeper", ahead.zookeeper, "--bootstrap-server", ahead.bootstrap_server]

    code, gate, err = zk2kafka_json("ready-for-kraft", *where, "--state-dir", str(tmp_path / "gate"),
                                    "--quiet-for", "1s", "--group", CANARY, *MARGIN)
    assert code == 3 and gate, err
    (verdict,) = gate["verdicts"]
    assert verdict["taken_over"] == 0 and len(verdict["differs"]) == 1, verdict
    assert "ZooKeeper 60, Kafka 100" in verdict["differs"][0], verdict
    assert "committed by a new consumer" not in verdict["differs"][0], verdict
    clocks = gate["clocks"]
    (broker,) = clocks["kafka"].values()
    # The registration: the broker's clock 5 minutes ahead of ZooKeeper's (a round trip apart, at least).
    assert AHEAD - 5 < broker["ahead_of_zookeeper_at_least"]["seconds"] <= AHEAD + 1, clocks
    assert clocks["effective_margin"] >= AHEAD and clocks["assumed"], clocks
    assert f"clock margin {clocks['effective_margin']:g}s" in verdict["differs"][0], verdict

    code, diff, err = zk2kafka_json("diff", *where, "--state-dir", str(tmp_path / "diff"), "--group", CANARY,
                                    *MARGIN)
    assert code == 3, err
    summary = json.loads(Path(diff["files"]["summary"]).read_text())
    (group,) = summary["per_group"]
    assert group["counts"] == {"CONFLICT": 1}, group
    assert summary["clocks"]["effective_margin"] >= AHEAD, summary["clocks"]

    # sync mirrors `reports` (its own commit, read back, bounds the broker's clock from above too) and leaves
    # `billing` alone as differing.
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
        wait_for("sync to leave billing alone", lambda: CANARY in stopped(), 90)
        why = stopped()[CANARY]
        sync.terminate()
        sync.communicate(timeout=60)
    finally:
        if sync.poll() is None:
            sync.kill()
    assert why.startswith("differs: ") and "orders-0 = 100 (ZooKeeper 60" in why, why
    margin = int(why.split("clock margin ")[1].split("s")[0])
    assert margin >= AHEAD, why
    admin = KafkaAdminClient(bootstrap_servers=ahead.bootstrap_server)
    try:
        held = kafka_offsets(admin, [CANARY, PLAIN])
    finally:
        admin.close()
    assert held[CANARY] == {(TOPIC, 0): (100, "")}, "sync moved the canary's offset"
    assert held[PLAIN][(TOPIC, 0)][0] == 60
