"""`zk2kafka sandbox up|status|seed|down` as an operator runs it: detached JVMs, export lines, a real seed."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from types import SimpleNamespace

from kafka import KafkaConsumer, TopicPartition
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from migrate.sandbox import seed
from migrate.processes import pid_alive as _pid_alive

from support.cli import zk2kafka_process
from support.hints import hints, operator_shell, paste


def test_sandbox_lifecycle_from_the_command_line(tmp_path: Path):
    state = ["--state-dir", "state"]  # relative, as `make demo` passes it
    up = zk2kafka_process("sandbox", "up", *state, cwd=tmp_path)
    try:
        assert up.returncode == 0, up.stderr
        exports = dict(line.removeprefix("export ").split("=", 1) for line in up.stdout.splitlines())
        assert set(exports) == {"ZK2KAFKA_ZOOKEEPER", "ZK2KAFKA_BOOTSTRAP_SERVER"}

        # A second `up` finds the running sandbox instead of starting another.
        assert zk2kafka_process("sandbox", "up", *state, cwd=tmp_path).stdout == up.stdout

        status = zk2kafka_process("sandbox", "status", "--json", *state, cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        report = json.loads(status.stdout)
        assert report["endpoints"]["zookeeper"] == exports["ZK2KAFKA_ZOOKEEPER"]
        assert report["endpoints"]["bootstrap_server"] == exports["ZK2KAFKA_BOOTSTRAP_SERVER"]
        pids = [s["pid"] for s in report["servers"]]
        assert [s["name"] for s in report["servers"]] == ["zookeeper", "kafka"] and all(
            s["alive"] for s in report["servers"])

        # Seed through the environment, exactly as `eval "$(zk2kafka sandbox up)"` leaves it.
        seeded = zk2kafka_process("sandbox", "seed", *state, cwd=tmp_path, env=exports)
        assert seeded.returncode == 0, seeded.stderr
        _check_seed(exports["ZK2KAFKA_ZOOKEEPER"], exports["ZK2KAFKA_BOOTSTRAP_SERVER"])
        assert zk2kafka_process("sandbox", "seed", *state,
                        cwd=tmp_path).returncode == 0  # idempotent, and finds the sandbox itself
        assert report["mode"] == "zookeeper" and "ZooKeeper mode" in zk2kafka_process("sandbox", "status", *state,
                                                                               cwd=tmp_path).stdout
        _the_sandbox_serves_the_runbooks(state, exports, tmp_path)
        pids.append(_a_v0_client_runs(state, exports, tmp_path))
    finally:
        down = zk2kafka_process("sandbox", "down", *state, cwd=tmp_path)
    # `down` stops the v0 client it left running too, before the servers.
    assert down.returncode == 0 and down.stdout.strip() == "stopped the v0 client of legacy-v0, kafka, zookeeper"
    assert not any(_pid_alive(pid) for pid in pids)
    assert not list((tmp_path / "state" / "sandbox" / "v0-clients").glob("*.json"))
    gone = zk2kafka_process("sandbox", "status", *state, cwd=tmp_path)
    assert gone.returncode == 1 and "no sandbox running" in gone.stderr


def _the_sandbox_serves_the_runbooks(state: list[str], exports: dict[str, str], cwd: Path) -> None:
    """seed --groups, stop-old-consumers and the release's own tools, on the running sandbox."""
    helped = zk2kafka_process("sandbox", "seed", "--help", cwd=cwd)
    assert helped.returncode == 0 and "sandbox seed options:" in helped.stdout and "--partitions P" in helped.stdout
    assert "--kafka-version" not in helped.stdout, "seed's help is up's"

    for _ in range(2):   # a second seed writes the same values again
        bulk = zk2kafka_process("sandbox", "seed", "--groups", "300", "--partitions", "3", *state, cwd=cwd)
        assert bulk.returncode == 0, bulk.stderr
        assert "and 300 bulk groups bulk-... on topic bulk (3 partitions)" in bulk.stdout
    zk = KazooClient(hosts=exports["ZK2KAFKA_ZOOKEEPER"])
    zk.start(timeout=15)
    try:
        bulk_groups = [g for g in zk.get_children("/consumers") if g.startswith("bulk-")]
        assert sorted(bulk_groups) == [seed.bulk_name(i, 300) for i in range(1, 301)]
        value = zk.get(f"/consumers/{seed.bulk_name(17, 300)}/offsets/bulk/2")[0]
        assert value == str(seed.bulk_offset(17, 2)).encode()
        other = zk2kafka_process("sandbox", "seed", "--groups", "5", "--partitions", "4", *state, cwd=cwd)
        assert other.returncode == 1 and "topic bulk already has 3 partitions" in other.stderr

        # A live old consumer's registration is ephemeral: refused, and nothing removed, stand-ins included.
        zk.create("/consumers/bulk-00001/ids/live-consumer-1", b"{}", ephemeral=True, makepath=True)
        refused = zk2kafka_process("sandbox", "stop-old-consumers", "--group", "reporting|bulk-00001", *state, cwd=cwd)
        assert refused.returncode == 1 and "a live old consumer holds /consumers/bulk-00001/ids/live-consumer-1" \
            in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
        assert zk.get_children("/consumers/reporting/ids") == [seed.LIVE_ZK_CONSUMER[1]]
        stopped = zk2kafka_process("sandbox", "stop-old-consumers", "--group", "reporting", *state, cwd=cwd)
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == ("stopped the old consumers of reporting: 1 registration(s) in ids/ and 2 "
                                          "partition(s) owned under owners/ removed")
        assert zk.get_children("/consumers/reporting/ids") == [] and zk.get_children(
            "/consumers/reporting/owners/payments") == []
    finally:
        zk.stop()
        zk.close()

    # Kafka's own kafka-consumer-groups and kafka-jmx of the sandbox's release, from its jars.
    groups = zk2kafka_process("sandbox", "kafka-consumer-groups", *state, "--", "--describe", "--group", "audit",
                              cwd=cwd)
    assert groups.returncode == 0, groups.stderr
    assert re.search(r"^audit\s+orders\s+1\s+42\s", groups.stdout, re.MULTILINE), groups.stdout
    jmx = zk2kafka_process("sandbox", "kafka-jmx", *state, "--", "--object-name",
                   "kafka.server:type=KafkaServer,name=BrokerState", "--one-time", "--report-format", "properties",
                   cwd=cwd)
    assert jmx.returncode == 0 and "BrokerState:Value=3" in jmx.stdout, jmx.stdout + jmx.stderr


def _a_v0_client_runs(state: list[str], exports: dict[str, str], cwd: Path) -> int:
    """An old consumer's commit, and a v0 client committing through the broker into ZooKeeper, stopped
    and started again; returns the pid of the one left running."""
    committed = zk2kafka_process("sandbox", "old-consumer-commit", "--group", "reporting", "--topic", "payments",
                                 "--offset", "42", *state, cwd=cwd)
    assert committed.returncode == 0, committed.stderr
    assert committed.stdout.strip() == ("an old consumer of reporting committed payments-0 -> 42 "
                                        "(/consumers/reporting/offsets/payments/0)")
    start = ("sandbox", "v0-client", "start", "--group", "legacy-v0", "--topic", "payments", "--partition", "1",
             "--offset", "5", "--every", "200ms", *state)
    started = zk2kafka_process(*start, cwd=cwd)
    assert started.returncode == 0, started.stderr
    assert re.match(r"started a v0 client of legacy-v0 \(pid \d+\): OffsetCommit v0 to \S+ every 200ms; first "
                    r"commit: payments-1 -> 5; log ", started.stdout), started.stdout
    again = zk2kafka_process(*start, cwd=cwd)
    assert again.returncode == 1 and "a v0 client of legacy-v0 runs already" in again.stderr
    # Its advice, pasted into the operator's shell as printed, stops the one running; a start then works.
    [advice] = hints(again.stderr)
    sandbox = SimpleNamespace(bootstrap_server=exports["ZK2KAFKA_BOOTSTRAP_SERVER"])
    shell = operator_shell(sandbox, exports["ZK2KAFKA_ZOOKEEPER"], cwd / "state")
    pasted = paste(shell, advice)
    assert pasted.returncode == 0 and pasted.stdout.startswith("stopped the v0 client of legacy-v0"), pasted
    started = zk2kafka_process(*start, cwd=cwd)
    assert started.returncode == 0, started.stderr
    zk = KazooClient(hosts=exports["ZK2KAFKA_ZOOKEEPER"])
    zk.start(timeout=15)
    try:
        assert zk.get("/consumers/reporting/offsets/payments/0")[0] == b"42"
        # The broker stores each v0 commit in its ZooKeeper: the znode moves on while the client runs.
        first = int(zk.get("/consumers/legacy-v0/offsets/payments/1")[0])
        assert first >= 5
        for _ in range(50):
            if int(zk.get("/consumers/legacy-v0/offsets/payments/1")[0]) > first:
                break
            time.sleep(0.1)
        assert int(zk.get("/consumers/legacy-v0/offsets/payments/1")[0]) > first
        stopped = zk2kafka_process("sandbox", "v0-client", "stop", "--group", "legacy-v0", *state, cwd=cwd)
        assert stopped.returncode == 0, stopped.stderr
        last = re.fullmatch(r"stopped the v0 client of legacy-v0 \(pid \d+\); its last commit: payments-1 -> (\d+)",
                            stopped.stdout.strip())
        assert last, stopped.stdout
        time.sleep(0.5)   # nothing commits any more
        assert zk.get("/consumers/legacy-v0/offsets/payments/1")[0] == last[1].encode()
    finally:
        zk.stop()
        zk.close()
    none = zk2kafka_process("sandbox", "v0-client", "stop", *state, cwd=cwd)
    assert none.returncode == 0 and none.stdout.strip() == "no v0 client running"
    left = zk2kafka_process(*start, cwd=cwd)
    assert left.returncode == 0, left.stderr
    return int(re.search(r"\(pid (\d+)\)", left.stdout)[1])


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
