"""The sandbox of any supported release, restartable in its state dir; a JVM that dies at start is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from migrate.errors import JvmError
from migrate.sandbox.cluster import LocalCluster
from migrate.jvm.server import kafka_ready
from migrate.processes import pid_alive as _pid_alive

from support.cli import zk2kafka_process
from support.servers import CACHE_DIR


def _exports(stdout: str) -> dict[str, str]:
    return dict(line.removeprefix("export ").split("=", 1) for line in stdout.splitlines())


def test_old_release_up_status_seed_down_up_in_one_state_dir(tmp_path: Path):
    state = ["--state-dir", "state"]
    up = zk2kafka_process("sandbox", "up", "--kafka-version", "0.10.2.2", *state, cwd=tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        status = zk2kafka_process("sandbox", "status", *state, cwd=tmp_path)
        assert "# Kafka 0.10.2.2 (ZooKeeper 3.4.9): ZooKeeper mode" in status.stdout.splitlines(), status.stdout
        assert zk2kafka_process("sandbox", "seed", *state, cwd=tmp_path).returncode == 0
        zk = KazooClient(hosts=_exports(up.stdout)["ZK2KAFKA_ZOOKEEPER"])
        zk.start(timeout=15)
        try:  # the 0.10 broker registered itself, in the layout of its day (no `rack`, version 4 at most)
            registration = json.loads(zk.get("/brokers/ids/0")[0])
            assert registration["version"] <= 4 and zk.get("/consumers/billing/offsets/orders/0")[0] == b"120"
        finally:
            zk.stop()
            zk.close()
        status = json.loads(zk2kafka_process("sandbox", "status", "--json", *state, cwd=tmp_path).stdout)
        pids = [s["pid"] for s in status["servers"]]
        assert zk2kafka_process("sandbox", "down", *state, cwd=tmp_path).returncode == 0
        assert not any(_pid_alive(p) for p in pids)

        # Another release over this data is refused; an `up` without the flag restarts the one it holds.
        other = zk2kafka_process("sandbox", "up", "--kafka-version", "1.1.1", *state, cwd=tmp_path)
        assert other.returncode == 1 and len(other.stderr.strip().splitlines()) == 1, other.stderr
        assert "holds the data of a Kafka 0.10.2.2 sandbox" in other.stderr
        again = zk2kafka_process("sandbox", "up", *state, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert kafka_ready(_exports(again.stdout)["ZK2KAFKA_BOOTSTRAP_SERVER"])
        assert json.loads(zk2kafka_process("sandbox", "status", "--json", *state, cwd=tmp_path).stdout)[
            "kafka_version"] == "0.10.2.2"
    finally:
        zk2kafka_process("sandbox", "down", *state, cwd=tmp_path)


def test_kraft_sandbox_up_down_up_reuses_its_cluster_id(tmp_path: Path):
    state = ["--state-dir", "state"]
    first = zk2kafka_process("sandbox", "up", "--kraft", *state, cwd=tmp_path)
    try:
        assert first.returncode == 0, first.stderr
        assert "formatting" in first.stderr and "with a new cluster id" in first.stderr
        assert zk2kafka_process("sandbox", "down", *state, cwd=tmp_path).returncode == 0
        second = zk2kafka_process("sandbox", "up", "--kraft", *state, cwd=tmp_path)
        assert second.returncode == 0, second.stderr
        assert "reusing cluster id" in second.stderr, second.stderr
        assert kafka_ready(_exports(second.stdout)["ZK2KAFKA_KRAFT_BOOTSTRAP_SERVER"])
    finally:
        zk2kafka_process("sandbox", "down", *state, cwd=tmp_path)


def test_unsupported_release_is_a_usage_error(tmp_path: Path):
    done = zk2kafka_process("sandbox", "up", "--kafka-version", "0.8.2.2", "--state-dir", "state", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "zk2kafka: error: unsupported Kafka version '0.8.2.2' for the sandbox; "
        "supported: 0.10.2.2, 1.1.1, 2.4.1, 2.8.2, 3.6.2, 3.9.2"]
    assert not (tmp_path / "state" / "sandbox" / "zookeeper").exists()  # nothing started


def test_security_listeners_are_refused_on_other_releases(tmp_path: Path):
    with pytest.raises(Exception, match="exist on Kafka 3.9.2 only, not 2.4.1"):
        LocalCluster(tmp_path, CACHE_DIR, kafka_version="2.4.1", security=True)


def test_a_broker_that_dies_at_start_is_one_line_with_its_log(tmp_path: Path):
    cluster = LocalCluster(tmp_path, CACHE_DIR, attached=True, broker_properties={"broker.id": "not-a-number"})
    with pytest.raises(JvmError) as e:
        cluster.start(timeout=90)
    message = str(e.value)
    assert "\n" not in message and "exited while starting" in message, message
    assert f"(log: {tmp_path / 'kafka' / 'kafka.log'})" in message and "broker.id" in message, message


def test_broker_properties_are_built_per_release(tmp_path: Path):
    old = LocalCluster(tmp_path, CACHE_DIR, kafka_version="0.10.2.2")._broker_common("kafka")
    # 0.10 knows neither transactions nor the initial rebalance delay (both 0.11): it would warn about them.
    assert not [k for k in old if k.startswith("transaction.") or k == "group.initial.rebalance.delay.ms"]
    assert old["offsets.topic.replication.factor"] == 1
    newer = LocalCluster(tmp_path, CACHE_DIR, kafka_version="1.1.1")._broker_common("kafka")
    assert newer["transaction.state.log.replication.factor"] == 1 and newer["group.initial.rebalance.delay.ms"] == 0
