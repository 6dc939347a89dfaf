"""`zk2kafka sandbox up|status|seed|down` as an operator runs it: detached JVMs, export lines, a real seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from migrate.sandbox import seed
from migrate.processes import pid_alive as _pid_alive


ROOT = Path(__file__).resolve().parents[2]


def zk2kafka(*argv: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "migrate", *argv], capture_output=True, text=True, timeout=300,
                          env=env, cwd=cwd)


def test_sandbox_lifecycle_from_the_command_line(tmp_path: Path):
    state = ["--state-dir", "state"]  # relative, as `make demo` passes it
    up = zk2kafka("sandbox", "up", *state, cwd=tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        exports = dict(line.removeprefix("export ").split("=", 1) for line in up.stdout.splitlines())
        assert set(exports) == {"ZK2KAFKA_ZOOKEEPER", "ZK2KAFKA_BOOTSTRAP_SERVER"}

        # A second `up` finds the running sandbox instead of starting another.
        assert zk2kafka("sandbox", "up", *state, cwd=tmp_path).stdout == up.stdout

        status = zk2kafka("sandbox", "status", "--json", *state, cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        report = json.loads(status.stdout)
        assert report["endpoints"]["zookeeper"] == exports["ZK2KAFKA_ZOOKEEPER"]
        assert report["endpoints"]["bootstrap_server"] == exports["ZK2KAFKA_BOOTSTRAP_SERVER"]
        pids = [s["pid"] for s in report["servers"]]
        assert [s["name"] for s in report["servers"]] == ["zookeeper", "kafka"] and all(
            s["alive"] for s in report["servers"])

        # Seed through the environment, exactly as `eval "$(zk2kafka sandbox up)"` leaves it.
        seeded = zk2kafka("sandbox", "seed", *state, cwd=tmp_path, env=exports)
        assert seeded.returncode == 0, seeded.stderr
        _check_seed(exports["ZK2KAFKA_ZOOKEEPER"], exports["ZK2KAFKA_BOOTSTRAP_SERVER"])
        assert zk2kafka("sandbox", "seed", *state,
                        cwd=tmp_path).returncode == 0  # idempotent, and finds the sandbox itself
    finally:
        down = zk2kafka("sandbox", "down", *state, cwd=tmp_path)
    assert down.returncode == 0 and down.stdout.strip() == "stopped kafka, zookeeper"
    assert not any(_pid_alive(pid) for pid in pids)
    gone = zk2kafka("sandbox", "status", *state, cwd=tmp_path)
    assert gone.returncode == 1 and "no sandbox running" in gone.stderr


def _check_seed(zookeeper: str, bootstrap: str) -> None:
    zk = KazooClient(hosts=zookeeper)
    zk.start(timeout=15)
    try:
        for group, rows in seed.ZK_OFFSETS.items():
            for layout, topic, partition, raw in rows:
                path = f"/consumers/{group}/{layout}/{topic}/{partition}"
                if group == "secured":
                    try:
                        zk.get(path)
                        raise AssertionError("the secured znode should be unreadable without its digest")
                    except NoAuthError:
                        continue
                assert zk.get(path)[0] == raw.encode(), path
        assert zk.get_children("/consumers/reporting/ids") == [seed.LIVE_ZK_CONSUMER[1]]
    finally:
        zk.stop()
        zk.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        for topic, partitions in seed.TOPICS.items():
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            assert set(consumer.end_offsets(tps).values()) == {seed.MESSAGES_PER_PARTITION}
        assert "legacy-events" not in consumer.topics()
    finally:
        consumer.close()
