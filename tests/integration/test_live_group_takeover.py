"""A live Kafka group holds the partitions its members are assigned, not every offset the old group had, and
holding one is no takeover until its member shows it consumes (test_takeover_evidence.py);
and a KIP-848 group (`group.protocol=consumer`) is seen live, with its members, wherever zk2kafka looks.

On the session's KRaft 4.1.2 broker: ZooKeeper holds group G's offsets for `orders` (2 partitions) and
`invoices`; Kafka 4.1.2's own console consumer joins G with the new protocol, subscribed to `orders`
only, and commits nothing. ready-for-kraft sees G live with its member and assignment, and blocks on
the `orders` offsets (held by that member, which has committed nothing of them: DIFFERS, naming it) and
on `invoices-0` (nothing in Kafka, no member assigned it);
the diff shows G live with its member; `migrate --execute` writes nothing to G and says why, and a plan
reviewed before G's consumer joined is refused before any write (the group is not as the diff saw it); `sync`
leaves G alone without calling it ready, saying its other partitions are not covered; a commit
from outside the group is refused as "the group is live". The same rule holds for a classic group on the
ZooKeeper-mode 3.9 broker, its assignment read from DescribeGroups.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafka import KafkaAdminClient, KafkaConsumer

from migrate.diff import schema as s
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter
from support.cli import zk2kafka
from support.kip848 import has_read, new_protocol_consumer
from support.seeding import kafka_offsets, make_topic, put
from support.sync_process import start_sync, stop_sync
from support.wait import free_port, wait_for

ZK_OFFSETS = {("orders", 0): 3, ("orders", 1): 4, ("invoices", 0): 5}


def seed(zk, group: str, prefix: str) -> None:
    for (topic, p), offset in ZK_OFFSETS.items():
        put(zk, f"/consumers/{group}/offsets/{prefix}{topic}/{p}", str(offset).encode())


def topics(admin: KafkaAdminClient, bootstrap: str, prefix: str) -> None:
    make_topic(admin, bootstrap, f"{prefix}orders", 2, 10)
    make_topic(admin, bootstrap, f"{prefix}invoices", 1, 10)


def args(zk_chroot: str, bootstrap: str, state: Path, group: str) -> list[str]:
    return ["--zookeeper", zk_chroot, "--bootstrap-server", bootstrap, "--state-dir", str(state),
            "--group", group]


def verdict(zk_chroot: str, bootstrap: str, state: Path, group: str) -> tuple[int, dict]:
    run = zk2kafka("ready-for-kraft", *args(zk_chroot, bootstrap, state, group), "--quiet-for", "1s",
                   "--json", "-q")
    assert "verdicts" in run.data, run.err
    (found,) = [v for v in run.data["verdicts"] if v["group"] == group]
    return run.code, found


def check_held_by_partition(code: int, v: dict, prefix: str, members: int) -> None:
    """The live member holds `orders` and has committed nothing of it: holding shows no consumer (its process may
    be gone), so those differ, naming it; `invoices`, which no member holds, is not in Kafka."""
    assert code == 3, v
    assert v["kafka_state"] == "Stable" and v["kafka_members"] == members
    assert v["taken_over"] == 0 and not v["taken_over_offsets"], v
    assert [line.split(" (")[0] for line in v["differs"]] == [f"{prefix}orders-0: ZooKeeper 3, Kafka none",
                                                               f"{prefix}orders-1: ZooKeeper 4, Kafka none"]
    for line in v["differs"]:
        assert ", Kafka none (assigned to live member " in line and line.endswith(
            ", not shown consuming it: it has committed nothing of it)"), line
    assert v["not_in_kafka"] == [f"{prefix}invoices-0 (ZooKeeper 5)"] and not v["ready"]


@pytest.fixture
def kraft_admin(cluster):
    admin = KafkaAdminClient(bootstrap_servers=cluster.kraft_bootstrap_server, client_id="zk2kafka-tests")
    yield admin
    admin.close()


def test_a_kip848_group_is_live_everywhere_and_holds_only_its_partitions(cluster, zk, zk_chroot, kraft_admin,
                                                                              prefix, tmp_path):
    bootstrap, group = cluster.kraft_bootstrap_server, f"{prefix}g"
    topics(kraft_admin, bootstrap, prefix)
    seed(zk, group, prefix)
    # A plan made while Kafka had no such group: every offset to commit.
    planned = zk2kafka("diff", *args(zk_chroot, bootstrap, tmp_path / "state", group), "-q")
    assert planned.code == 0, planned.out + planned.err
    plan_run = planned.out.strip().splitlines()[-1].split()[0].removeprefix("run=")
    out = tmp_path / "consumed.txt"
    consumer = new_protocol_consumer(bootstrap, f"{prefix}orders", group, out, tmp_path)
    try:
        # Assigned both partitions once it printed a message of each.
        wait_for("the KIP-848 consumer to read both partitions",
                 lambda: has_read(consumer, out, tmp_path, group, {0, 1}), timeout=120)
        listed = {g["group_id"]: g for g in kraft_admin.list_groups()}
        assert listed[group].get("group_type") == "consumer"   # what the test is about: the new protocol

        code, v = verdict(zk_chroot, bootstrap, tmp_path / "state", group)
        check_held_by_partition(code, v, prefix, members=1)

        diffed = zk2kafka("diff", *args(zk_chroot, bootstrap, tmp_path / "state", group), "-q")
        assert diffed.code == 3, diffed.out + diffed.err
        report = Path(diffed.out.strip().splitlines()[-1].split(" report=")[1])
        rows = pq.read_table(report / "plan.parquet").to_pylist()
        assert {(r["topic"], r["partition"]): r["status"] for r in rows} == {
            (f"{prefix}{t}", p): s.GROUP_ACTIVE_KAFKA for t, p in ZK_OFFSETS}
        assert {(r["group_state"], r["kafka_members"]) for r in rows} == {("Stable", 1)}
        assert "Stable with 1 member(s)" in rows[0]["reason"]

        written = zk2kafka("migrate", "--execute", *args(zk_chroot, bootstrap, tmp_path / "state", group), "-q")
        assert group in written.out + written.err and "Stable with 1 member(s)" in written.out + written.err
        assert kafka_offsets(kraft_admin, [group]) == {group: {}}
        # The reviewed plan is refused before any write: the group is no longer as the diff saw it.
        reviewed = zk2kafka("migrate", "--execute", "--plan", plan_run,
                            *args(zk_chroot, bootstrap, tmp_path / "state", group), "-q")
        assert reviewed.code != 0 and "Stable, 1 member(s)" in reviewed.out + reviewed.err, reviewed.out + reviewed.err
        assert kafka_offsets(kraft_admin, [group]) == {group: {}}

        # sync leaves the group alone, never calls it ready, and says its other partitions are not covered.
        log = tmp_path / "sync.log"
        with log.open("w") as err:
            sync = start_sync(zk_chroot, bootstrap, prefix, tmp_path / "sync-state", f"127.0.0.1:{free_port()}", err,
                              "--json")
            try:
                status = wait_for("sync's status file", lambda: next((tmp_path / "sync-state").glob(
                    "reports/*/sync-status.json"), None), timeout=60)
                wait_for("sync to stop the live group",
                         lambda: group in json.loads(status.read_text())["groups_stopped"], timeout=60)
            finally:
                result = json.loads(stop_sync(sync, log))
        assert group not in result["groups_ready"]
        assert "Stable" in result["groups_stopped"][group] and "not covered" in result["groups_stopped"][group]
        assert kafka_offsets(kraft_admin, [group]) == {group: {}}

        # A commit from outside the group (generation -1) is refused: that says the group is live.
        with pytest.raises(GroupRejected) as refused:
            KafkaOffsetWriter(kraft_admin).commit(group, {(f"{prefix}invoices", 0): 5}, "zk2kafka test")
        assert refused.value.live and "live" in refused.value.reason
        assert kafka_offsets(kraft_admin, [group]) == {group: {}}
    finally:
        consumer.terminate()
        consumer.wait(timeout=60)


def test_a_classic_group_holds_only_the_partitions_assigned_to_it(cluster, zk, zk_chroot, kafka_admin,
                                                                       prefix, tmp_path):
    bootstrap, group = cluster.bootstrap_server, f"{prefix}g"
    topics(kafka_admin, bootstrap, prefix)
    seed(zk, group, prefix)
    consumer = KafkaConsumer(f"{prefix}orders", group_id=group, bootstrap_servers=bootstrap,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        wait_for("the classic consumer's assignment", lambda: consumer.poll(timeout_ms=1000) is not None
                 and len(consumer.assignment()) == 2, timeout=60)
        code, v = verdict(zk_chroot, bootstrap, tmp_path / "state", group)
        check_held_by_partition(code, v, prefix, members=1)
    finally:
        consumer.close(autocommit=False)

