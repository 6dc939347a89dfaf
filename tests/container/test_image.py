"""The image, run for real: the main job and the sync service inside it, against the session's cluster.

Each container runs as the image's own non-root user, with a read-only root file system (a tmpfs
for /tmp), the state dir a volume (a host directory the image's user owns) and the host's network,
where the cluster listens. Every wait is on an event: a line printed, an HTTP answer, an offset
read back from Kafka.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path, PurePosixPath

import pytest
import yaml

from migrate.journal.journal import Journal

from support.seeding import kafka_offsets, make_topic, put
from support.sync_process import get, scrape, value
from support.wait import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
WORKDIR = PurePosixPath("/work")   # the image's WORKDIR: a relative path the tool prints is from there
STATE = WORKDIR / "zk2kafka-state"


def groups_in_zookeeper(zk, topic: str, prefix: str) -> dict[str, dict[tuple[str, int], int]]:
    """Two groups with offsets only in ZooKeeper, two partitions each."""
    offsets = {}
    for i in range(2):
        group = f"{prefix}g{i}"
        offsets[group] = {(topic, p): 10 * (i + 1) + p for p in range(2)}
        for (_, p), offset in offsets[group].items():
            put(zk, f"/consumers/{group}/offsets/{topic}/{p}", str(offset).encode())
    return offsets


def on_host(state: Path, path_in_container: str) -> Path:
    return state / (WORKDIR / path_in_container).relative_to(STATE)


def test_diff_then_the_reviewed_plan_executed_then_verified(image, cluster, zk, zk_chroot, kafka_admin, prefix,
                                                           tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    planted = groups_in_zookeeper(zk, topic, prefix)
    state = image.state_dir(tmp_path / "state")
    env = {"ZK2KAFKA_ZOOKEEPER": zk_chroot, "ZK2KAFKA_BOOTSTRAP_SERVER": cluster.bootstrap_server}

    diff = image.run("diff", "--group", f"{prefix}.*", state=state, env=env)
    assert diff.returncode == 0, diff.stderr
    last = diff.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"run=(\S+) plan=(\S+@[0-9a-f]{12}) report=(\S+)", last)
    assert match, diff.stdout
    plan_id, report = match[2], on_host(state, match[3])
    summary = json.loads((report / "summary.json").read_text())
    assert summary["plan_id"] == plan_id
    # Written by the image's user into the volume; nothing in Kafka yet (a diff never writes).
    assert f"{report.stat().st_uid}:{report.stat().st_gid}" == image.user
    assert kafka_offsets(kafka_admin, planted) == {g: {} for g in planted}

    migrate = image.run("migrate", "--execute", "--plan", plan_id, state=state, env=env)
    assert migrate.returncode == 0, migrate.stderr
    run_id = re.match(r"run=(\S+)", migrate.stdout.strip().splitlines()[-1])[1]
    assert {g: {k: v[0] for k, v in got.items()} for g, got in kafka_offsets(kafka_admin, planted).items()} == planted

    verify = image.run("verify", "--run", run_id, "--json", state=state, env=env)
    assert verify.returncode == 0, verify.stderr
    checked = json.loads(verify.stdout)
    assert checked["verified"] and checked["checked"] == 4
    with Journal.open(state) as journal:
        assert journal.run(run_id).state == "done"
        assert {g.name: g.state for g in journal.groups(run_id)} == {g: "verified" for g in planted}


def sync_service() -> dict:
    """The sync service as docker/compose.yaml defines it."""
    return yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())["services"]["zk2kafka-sync"]


def test_sync_as_the_compose_service_mirrors_serves_health_and_metrics_and_stops_cleanly(
        image, cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    group = f"{prefix}billing"
    put(zk, f"/consumers/{group}/ids/{group}_old-1", b'{"version":1}')   # its old consumer still runs
    for p in range(2):
        put(zk, f"/consumers/{group}/offsets/{topic}/{p}", b"10")
    state = image.state_dir(tmp_path / "state")
    env = {"ZK2KAFKA_ZOOKEEPER": zk_chroot, "ZK2KAFKA_BOOTSTRAP_SERVER": cluster.bootstrap_server}
    service = sync_service()
    command = [str(arg) for arg in service["command"]]
    assert command[:2] == ["sync", "--execute"] and "--metrics-address" in command
    address = f"127.0.0.1:{free_port()}"
    port = command[command.index("--metrics-address") + 1].rpartition(":")[2]
    command[command.index("--metrics-address") + 1] = address   # the host's network: a free port of its own
    healthcheck = service["healthcheck"]["test"]
    assert healthcheck[0] == "CMD" and f"127.0.0.1:{port}/healthz" in " ".join(healthcheck)
    command += ["--group", f"{prefix}.*"]   # this test's groups only (the service follows all)
    name = f"zk2kafka-test-{prefix.rstrip('-')}"
    log = tmp_path / "sync.log"
    with log.open("w") as err:
        sync = subprocess.Popen(image.command(*command, state=state, env=env, name=name), stdout=subprocess.PIPE,
                                stderr=err, text=True, env=image.engine.env)
        try:
            def healthy_or_ended():
                return sync.poll() is not None or get(f"http://{address}/healthz")[0] == 200

            wait_for("sync's /healthz to answer 200", healthy_or_ended, timeout=120)
            assert sync.poll() is None, log.read_text()[-3000:]

            def in_kafka():
                return {p: o for (_, p), (o, _) in kafka_offsets(kafka_admin, [group])[group].items()}

            wait_for("the ZooKeeper offsets mirrored into Kafka", lambda: in_kafka() == {0: 10, 1: 10}, timeout=60)
            zk.set(f"/consumers/{group}/offsets/{topic}/1", b"42")   # the old consumer commits
            wait_for("the change mirrored into Kafka", lambda: in_kafka() == {0: 10, 1: 42}, timeout=60)
            # The service's healthcheck, run in the container as the engine runs it, on this port.
            checked = image.engine("exec", name, *(a.replace(f"127.0.0.1:{port}", address) for a in healthcheck[1:]),
                                   timeout=60)
            assert checked.returncode == 0, checked.stderr
            samples = scrape(address)
            assert value(samples, "zk2kafka_sync_offsets_mirrored_total") == 3
            assert value(samples, "zk2kafka_sync_group_state", group=group, state="mirroring") == 1
        finally:
            # The image's STOPSIGNAL (SIGINT), as `docker stop` and compose send it.
            stopped = image.engine("stop", "--time", "60", name, timeout=120)
            out, _ = sync.communicate(timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    assert sync.returncode == 0, log.read_text()[-3000:]
    with Journal.open(state) as journal:
        (run,) = journal.runs()
        assert run.kind == "sync" and run.state == "done"
    assert "Traceback" not in log.read_text()


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_the_entrypoint_answers_without_a_cluster(image, tmp_path, argv):
    done = image.run(*argv, state=image.state_dir(tmp_path / "state"), env={}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("zk2kafka") or "usage: zk2kafka" in done.stdout
