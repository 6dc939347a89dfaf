"""`--dual-commit`: the dual commit planned from a scan's snapshot instead of a second scan.

Real ZooKeeper, Kafka and Spark (the session's cluster). The plan's znode versions and mzxids are the
scan's: an old consumer's write after the scan, before the run or inside it after the Kafka commit,
fails its group with Kafka put back and the consumer's value standing, while the other groups are
written into both stores. A snapshot that cannot stand for the ensemble written (another place in
it, another root, no --zookeeper, older than --max-plan-age) is refused in one line, nothing written;
the same snapshot within its age serves a fresh `migrate --execute` as well as a reviewed plan.
"""

from __future__ import annotations

import pytest

from migrate.kafka.writer import KafkaOffsetWriter

from support.cli import connection, zk2kafka_json, zk2kafka_text
from support.seeding import kafka_offsets, make_topic, put

pytestmark = pytest.mark.integration


def test_a_scans_snapshot_serves_the_dual_commit_and_a_znode_moved_since_fails_its_group(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path, monkeypatch):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    kept, before, during = (f"{prefix}{name}" for name in ("kept", "before", "during"))
    path = f"/consumers/{{}}/offsets/{topic}/{{}}".format
    for group in (kept, before, during):
        put(zk, path(group, 0), b"20")
        put(zk, path(group, 1), b"21\n")   # not canonical: the dual commit rewrites it
    state = tmp_path / "state"
    where = connection(cluster, zk_chroot, state)
    code, scan, err = zk2kafka_json("scan", *where, "--group", f"{prefix}.*")
    assert code == 0 and scan["offsets"] == 6, err
    zk.set(path(before, 0), b"30")   # an old consumer moves on after the scan

    code, out, err = zk2kafka_text("diff", *where, "--zk-snapshot", scan["run"], "--dual-commit")
    assert code == 0, err
    assert f"by scan {scan['run']}; " in out and "ZooKeeper is written by the dual commit" in out
    assert "ZooKeeper: every row keeps the old consumer's offset" in out
    plan_id = out.strip().splitlines()[-1].split()[1].removeprefix("plan=")

    real_commit = KafkaOffsetWriter.commit_many

    def commit_then_an_old_consumer_moves(self, commits, metadata):
        sent = real_commit(self, commits, metadata)
        zk.set(path(during, 0), b"35")   # Kafka committed, the znode not read again yet
        return sent

    monkeypatch.setattr(KafkaOffsetWriter, "commit_many", commit_then_an_old_consumer_moves)
    code, run, err = zk2kafka_json("migrate", *where, "--execute", "--plan", plan_id)
    monkeypatch.undo()
    assert code == 1, err
    assert run["zookeeper_side"]["dual_commit"] and run["zookeeper_side"]["rechecked"].startswith(
        f"the dual commit (--dual-commit) into ZooKeeper {zk_chroot}"), run["zookeeper_side"]
    failed = {r["group"]: r["reason"] for r in run["reasons"] if r["state"] == "failed"}
    assert sorted(failed) == sorted([before, during]), run["reasons"]
    assert "changed since the scan" in failed[before]
    assert "changed since the scan" in failed[during] and "put back" in failed[during]
    # Kafka: the kept group as planned, the others as before the run (nothing).
    assert kafka_offsets(kafka_admin, [kept, before, during]) == {
        kept: {(topic, 0): (20, f"zk2kafka migrate {run['run']}"),
               (topic, 1): (21, f"zk2kafka migrate {run['run']}")},
        before: {}, during: {}}
    # ZooKeeper: fenced (not written), rewritten where its bytes change, the consumers' own values.
    assert [zk.get(path(kept, p))[0] for p in (0, 1)] == [b"20", b"21"]
    assert [zk.get(path(kept, p))[1].version for p in (0, 1)] == [0, 1]
    assert zk.get(path(before, 0))[0] == b"30" and zk.get(path(during, 0))[0] == b"35"
    assert zk.get(path(during, 1))[0] == b"21\n"   # its rewrite put back with Kafka

    code, verified, err = zk2kafka_json("verify", *where, "--run", run["run"])
    assert code == 0 and verified["verified"] and verified["wrote_zookeeper"], verified
    assert verified["checked"] == 2 and verified["zookeeper_not_consulted"] is None
    zk.set(path(kept, 1), b"22")   # its old consumer, back: verify reads ZooKeeper, not Kafka alone
    code, verified, err = zk2kafka_json("verify", *where, "--run", run["run"])
    assert code == 3 and verified["differ"] == [
        f"{kept} {path(kept, 1)}: ZooKeeper holds b'22', not the run's value"], verified


def test_a_snapshot_that_cannot_stand_for_the_ensemble_written_is_refused(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    group = f"{prefix}g"
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"7")
    put(zk, f"/elsewhere/consumers/{group}/offsets/{topic}/0", b"7")   # another place
    state = tmp_path / "state"
    where = connection(cluster, zk_chroot, state)
    code, here, err = zk2kafka_json("scan", *where)
    assert code == 0, err
    code, there, err = zk2kafka_json("scan", *connection(cluster, f"{zk_chroot}/elsewhere", state))
    assert code == 0, err
    kafka = ["--bootstrap-server", cluster.bootstrap_server, "--state-dir", str(state)]
    for argv, said in (
            ((*where, "--zk-snapshot", there["run"]),
             f"--zookeeper {zk_chroot} is not the ensemble the snapshot was read from "
             f"(--zookeeper '{zk_chroot}/elsewhere' then, '{zk_chroot}' now: other servers or "
             "another chroot)"),
            ((*where, "--zk-snapshot", here["run"], "--zk-root", "/elsewhere/consumers"),
             "the snapshot read the root /consumers, and /elsewhere/consumers is given"),
            ((*kafka, "--zk-snapshot", here["run"]),
             f"the dual commit writes the ensemble the snapshot was read from ({zk_chroot}): "
             "give it with --zookeeper")):
        for command, execute in (("diff", ()), ("migrate", ("--execute",))):
            code, out, err = zk2kafka_text(command, *argv, "--dual-commit", *execute)
            assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
            assert said in err, err

    # Older than --max-plan-age: a fresh run is refused before its diff, a reviewed plan's run
    # before it writes.
    code, out, err = zk2kafka_text("migrate", *where, "--zk-snapshot", here["run"],
                                   "--dual-commit", "--execute", "--max-plan-age", "1ms")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "the snapshot was read" in err and "longer than --max-plan-age 1s" in err
    code, out, err = zk2kafka_text("diff", *where, "--zk-snapshot", here["run"], "--dual-commit")
    assert code == 0, err
    plan_id = out.strip().splitlines()[-1].split()[1].removeprefix("plan=")
    code, out, err = zk2kafka_text("migrate", "--zookeeper", f"{zk_chroot}/elsewhere", *kafka,
                                   "--execute", "--plan", plan_id)
    assert code == 1 and "made against other stores" in err, err   # as any plan
    code, out, err = zk2kafka_text("migrate", *where, "--execute", "--plan", plan_id,
                                   "--max-plan-age", "1ms")
    assert code == 1 and "the plan keeps ZooKeeper in agreement (--dual-commit), and the " \
        "snapshot was read" in err, err
    assert kafka_offsets(kafka_admin, [group]) == {group: {}}
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[1].version == 0

    # Within it, a fresh run plans and writes the dual commit at once.
    code, run, err = zk2kafka_json("migrate", *where, "--zk-snapshot", here["run"],
                                   "--dual-commit", "--execute")
    assert code == 0 and run["zookeeper_side"]["dual_commit"], err
    assert kafka_offsets(kafka_admin, [group]) == {
        group: {(topic, 0): (7, f"zk2kafka migrate {run['run']}")}}
    code, verified, err = zk2kafka_json("verify", *where, "--run", run["run"])
    assert code == 0 and verified["wrote_zookeeper"] and verified["checked"] == 1, verified
    # verify takes no --dual-commit: one exported for diff and migrate leaves its plan Kafka's.
    code, verified, err = zk2kafka_json("verify", *kafka, "--zk-snapshot", here["run"],
                                        env={"ZK2KAFKA_DUAL_COMMIT": "1"})
    assert code == 0 and verified["verified"], err
    assert verified["inputs"]["no_zk_write"] and "dual_commit" not in verified["inputs"]
