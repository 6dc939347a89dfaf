"""The whole road in place to KRaft (KIP-866), once, on a sandbox of its own, with the real CLI.

Three groups keep their offsets in ZooKeeper, each its own way:
- `old-app`: Kafka 0.10.2's old high-level consumer (ZookeeperConsumerConnector through its console
  consumer, `--zookeeper`), registered under ids/ and owners/, auto-committing to ZooKeeper;
- `v0-app`: a client committing through the broker with OffsetCommit v0 (offset_commit_v0.py): the
  3.9 broker stores its commits in ZooKeeper, and it never registers;
- `static-app`: offsets written once, long ago, by a consumer retired since.

`ready-for-kraft` refuses, naming each group and why (the unregistered writer found by its writes
alone), and writes nothing to either store (both read before and after); once the old consumer and
the v0 client are stopped and `migrate --execute` moved the groups, it exits 0. Then `sandbox
kraft-migrate` does Kafka's own migration and stops ZooKeeper; the new consumers, on the KRaft
broker, read exactly the messages the old ones had not; `verify --run` passes against Kafka alone,
saying ZooKeeper was not consulted; and the KRaft broker refuses OffsetCommit v0.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kazoo.client import KazooClient

from support.cli import clean_env, zk2kafka_bin
from support.offset_commit_v0 import UNSUPPORTED_VERSION, Committer, OffsetCommitV0
from support.old_consumers import old_consumer
from support.wait import wait_for


TOPIC, PARTITIONS, FIRST, MORE = "events", 3, 100, 40    # messages per partition: before and after the switch
QUIET_FOR = "6s"
STATIC = {(TOPIC, 0): 10, (TOPIC, 1): 20, (TOPIC, 2): 30}


def cli(*args: str, env: dict, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([zk2kafka_bin(), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def produce(bootstrap: str, per_partition: int, start: dict[int, int]) -> None:
    """Messages whose value names their partition and offset: `p:offset`."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", max_in_flight_requests_per_connection=1)
    for p in range(PARTITIONS):
        for n in range(start[p], start[p] + per_partition):
            producer.send(TOPIC, f"{p}:{n}".encode(), partition=p)
    producer.flush()
    producer.close()


def consumed(bootstrap: str, group: str, end: int) -> Counter:
    """A new consumer of `group` reads from its committed offsets to the end; what it read."""
    consumer = KafkaConsumer(TOPIC, group_id=group, bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="latest")   # a missing offset would read nothing: caught below
    seen: Counter = Counter()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                seen.update(r.value.decode() for r in records)
            assignment = consumer.assignment()
            if len(assignment) == PARTITIONS and all(consumer.position(tp) >= end for tp in assignment):
                break
        consumer.commit()
    finally:
        consumer.close()
    return seen


def zk_state(client: KazooClient, path: str = "/consumers") -> dict[str, tuple]:
    """Every znode under `path`: its data, version, child version and mzxid (any write changes one)."""
    out = {}

    def walk(node: str) -> None:
        data, stat = client.get(node)
        out[node] = (data, stat.version, stat.cversion, stat.mzxid)
        for child in client.get_children(node):
            walk(f"{node}/{child}")
    walk(path)
    return out


def kafka_state(bootstrap: str) -> dict:
    """Every group Kafka knows with its state and committed offsets, and the topics."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="test-reader")
    try:
        groups = sorted((g["group_id"], g.get("group_state")) for g in admin.list_groups())
        offsets = admin.list_group_offsets({g: None for g, _ in groups}) if groups else {}
        return {"groups": groups, "topics": sorted(admin.list_topics()),
                "offsets": {g: {(tp.topic, tp.partition): (om.offset, om.metadata) for tp, om in o.items()}
                            for g, o in offsets.items()}}
    finally:
        admin.close()


def verdicts(result: subprocess.CompletedProcess) -> dict[str, dict]:
    return {v["group"]: v for v in json.loads(result.stdout)["verdicts"]}


@pytest.mark.timeout(900)
def test_in_place_to_kraft_leaves_no_offset_behind(tmp_path):
    env = clean_env()
    state = tmp_path / "sandbox"
    up = cli("sandbox", "up", "--state-dir", str(state), env=env, cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    exports = dict(line.removeprefix("export ").split("=", 1) for line in up.stdout.splitlines()
                   if line.startswith("export "))
    zookeeper, bootstrap = exports["ZK2KAFKA_ZOOKEEPER"], exports["ZK2KAFKA_BOOTSTRAP_SERVER"]
    change = {**env, **exports, "ZK2KAFKA_STATE_DIR": str(tmp_path / "change")}
    old = v0 = zk = None
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics({TOPIC: {"num_partitions": PARTITIONS, "replication_factor": 1}}, wait_for_metadata=True)
        admin.close()
        produce(bootstrap, FIRST, dict.fromkeys(range(PARTITIONS), 0))
        zk = KazooClient(hosts=zookeeper)
        zk.start(timeout=15)
        for (topic, p), offset in STATIC.items():
            zk.create(f"/consumers/static-app/offsets/{topic}/{p}", str(offset).encode(), makepath=True)

        # The old consumer resumes where ZooKeeper says (it has no other), reads everything there is and stays,
        # registered; the v0 client commits every 0.5 s.
        for p in range(PARTITIONS):
            zk.create(f"/consumers/old-app/offsets/{TOPIC}/{p}", b"0", makepath=True)
        old_out = tmp_path / "old-app.out"
        old = old_consumer(zookeeper, TOPIC, "old-app", old_out, tmp_path)
        wait_for("the old consumer to commit all it read", lambda: all(
            zk.exists(f"/consumers/old-app/offsets/{TOPIC}/{p}")
            and int(zk.get(f"/consumers/old-app/offsets/{TOPIC}/{p}")[0]) == FIRST for p in range(PARTITIONS)),
            timeout=90)
        v0 = Committer(bootstrap, "v0-app", {(TOPIC, p): 50 + p for p in range(PARTITIONS)}, every=0.5)
        v0.start()
        wait_for("the v0 client's first commit", lambda: v0.committed)

        # 1. Refused, each group named with why: the v0 client by its writes alone.
        first = cli("ready-for-kraft", "--quiet-for", QUIET_FOR, "--json", env=change, cwd=tmp_path)
        assert first.returncode == 3, first.stderr
        found = verdicts(first)
        assert found["old-app"]["registered"] == ["1 in ids/", "3 partition(s) owned under owners/"]
        assert len(found["old-app"]["not_in_kafka"]) == PARTITIONS
        assert not found["v0-app"]["registered"], "a v0 client registers nowhere"
        assert {w.split(" at ")[0] for w in found["v0-app"]["written"]} == {
            f"/consumers/v0-app/offsets/{TOPIC}/{p}" for p in range(PARTITIONS)}
        assert found["static-app"]["not_in_kafka"] == ["events-0 (ZooKeeper 10)", "events-1 (ZooKeeper 20)",
                                                       "events-2 (ZooKeeper 30)"]
        assert not found["static-app"]["written"] and not found["static-app"]["registered"]
        text = cli("ready-for-kraft", "--quiet-for", "1s", env=change, cwd=tmp_path)
        assert text.returncode == 3 and "NOT READY: 3 of 3 group(s)" in text.stdout, text.stdout
        nothing = cli("ready-for-kraft", "--zookeeper", zookeeper + "-typo", env=change, cwd=tmp_path)
        assert nothing.returncode == 3 and "no offsets found under" in nothing.stderr, "nothing checked is not ready"

        # The old apps stop: the old consumer commits on its way out and leaves ids/; the v0 client just stops.
        old.send_signal(signal.SIGTERM)
        old.wait(timeout=60)
        v0_last = v0.stop() and v0.committed[-1][1]
        produce(bootstrap, MORE, dict.fromkeys(range(PARTITIONS), FIRST))   # what the new consumers must read

        # 2. Still not ready (nothing is in Kafka yet), and the check wrote nothing to either store.
        zk_before, kafka_before = zk_state(zk), kafka_state(bootstrap)
        second = cli("ready-for-kraft", "--quiet-for", "2s", "--json", env=change, cwd=tmp_path)
        assert second.returncode == 3, second.stderr
        assert zk_state(zk) == zk_before and kafka_state(bootstrap) == kafka_before, "ready-for-kraft wrote"
        assert {g for g, v in verdicts(second).items() if v["not_in_kafka"]} == {"old-app", "v0-app", "static-app"}
        assert not any(v["registered"] or v["written"] for v in verdicts(second).values())
        summary = Path(json.loads(second.stdout)["report"])
        evidence = json.loads((summary / "summary.json").read_text())["evidence"]
        assert Path(evidence["zookeeper"]).is_file() and Path(evidence["kafka"]).is_file()

        # 3. Moved: ready.
        moved = cli("migrate", "--execute", "--json", "-q", env=change, cwd=tmp_path)
        assert moved.returncode == 0, moved.stderr
        run = json.loads(moved.stdout)["run"]
        ready = cli("ready-for-kraft", "--quiet-for", "2s", env=change, cwd=tmp_path)
        assert ready.returncode == 0, ready.stdout + ready.stderr
        assert ready.stdout.startswith("ready-for-kraft: ready: every ZooKeeper offset of the 3 group(s)")
        zk.stop()
        zk.close()
        zk = None

        # 4. Kafka's own migration; ZooKeeper stopped.
        migrated = cli("sandbox", "kraft-migrate", "--state-dir", str(state), env=env, cwd=tmp_path)
        assert migrated.returncode == 0, migrated.stderr
        assert "unset ZK2KAFKA_ZOOKEEPER" in migrated.stdout
        assert f"export ZK2KAFKA_BOOTSTRAP_SERVER={bootstrap}" in migrated.stdout
        host, port = exports["ZK2KAFKA_ZOOKEEPER"].split("/")[0].rsplit(":", 1)
        with pytest.raises(OSError):
            socket.create_connection((host, int(port)), timeout=2).close()
        status = cli("sandbox", "status", "--state-dir", str(state), "--json", env=env, cwd=tmp_path)
        assert json.loads(status.stdout)["mode"] == "kraft"

        # 5. verify --run against Kafka alone: ZooKeeper does not answer any more.
        verified = cli("verify", "--run", run, env=change, cwd=tmp_path)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "ZooKeeper was not consulted (cannot connect to ZooKeeper at" in verified.stdout
        assert "verified: every offset the run wrote holds its value" in verified.stdout

        # 6. The new consumers read exactly what the old ones had not.
        end = FIRST + MORE
        by_old = Counter(old_out.read_text().split())
        assert sum(by_old.values()) == FIRST * PARTITIONS
        new_old_app = consumed(bootstrap, "old-app", end)
        everything = Counter(f"{p}:{n}" for p in range(PARTITIONS) for n in range(end))
        assert by_old + new_old_app == everything, "skipped or read twice"
        assert consumed(bootstrap, "v0-app", end) == Counter(
            f"{p}:{n}" for (_, p), start in v0_last.items() for n in range(start, end))
        assert consumed(bootstrap, "static-app", end) == Counter(
            f"{p}:{n}" for (_, p), start in STATIC.items() for n in range(start, end))

        # 7. The KRaft broker refuses OffsetCommit v0: such a client would have failed from here.
        client = OffsetCommitV0(bootstrap)
        assert set(client.commit("v0-app", {(TOPIC, 0): 1}).values()) == {UNSUPPORTED_VERSION}
        client.close()
    finally:
        if v0 is not None and v0.is_alive():
            v0.stop()
        if old is not None and old.poll() is None:
            old.kill()
        if zk is not None:
            zk.stop()
            zk.close()
        down = cli("sandbox", "down", "--state-dir", str(state), env=env, cwd=tmp_path)
        assert down.returncode == 0, down.stderr
