"""docker/compose.yaml read by a real compose implementation, and its tool service run for real.

ZooKeeper, Kafka, Prometheus and Grafana of the compose file come from a registry (zookeeper:3.8,
confluentinc/cp-kafka, prom/prometheus, grafana/grafana): they are validated (`config`), not run. The
`zk2kafka` service runs as the file defines it, from the image `make image` built, against the session's
cluster on the host: a small override file gives it the host's network, the cluster's addresses and a
state directory of its own, and `run --no-deps` leaves the registry's services out. The sync service is
run by test_image.py.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml

from support.seeding import kafka_offsets, make_topic, put

COMPOSE = Path(__file__).resolve().parents[2] / "docker" / "compose.yaml"


def test_the_compose_file_is_valid_with_every_profile(compose, engine):
    done = subprocess.run([*compose, "-f", str(COMPOSE), "--profile", "sync", "--profile", "renew", "config"],
                          capture_output=True, text=True, env=engine.env, timeout=120)
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)
    assert set(resolved["services"]) == {"zookeeper", "kafka", "zk2kafka", "zk2kafka-sync", "prometheus", "grafana",
                                         "zk2kafka-renew", "prometheus-renew"}
    assert {"zk2kafka-state", "prometheus-data", "prometheus-renew-data"} <= set(resolved["volumes"])


def test_the_tool_service_runs_its_default_command_against_the_hosts_cluster(
        compose, image, cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 20)
    group = f"{prefix}billing"
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"7")
    state = image.state_dir(tmp_path / "state")
    override = tmp_path / "compose.host.yaml"
    override.write_text(yaml.safe_dump({"services": {"zk2kafka": {
        "network_mode": "host",
        "environment": {"ZK2KAFKA_ZOOKEEPER": zk_chroot, "ZK2KAFKA_BOOTSTRAP_SERVER": cluster.bootstrap_server},
        "volumes": [f"{state}:/work/zk2kafka-state"],
    }}}))
    project = f"zk2kafka-test-{prefix.rstrip('-')}"
    done = subprocess.run([*compose, "-p", project, "-f", str(COMPOSE), "-f", str(override),
                           "run", "--rm", "--no-deps", "zk2kafka"],
                          capture_output=True, text=True, env=image.engine.env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The default command is the dry-run diff: it planned the group and wrote nothing.
    match = re.search(r"^run=\S+ plan=\S+ report=(\S+)$", done.stdout, re.MULTILINE)
    assert match, done.stdout[-3000:]
    summary = json.loads(next(state.glob("reports/*/summary.json")).read_text())
    assert summary["command"] == "diff"
    assert kafka_offsets(kafka_admin, [group]) == {group: {}}
