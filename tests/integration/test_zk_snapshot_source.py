"""`--zk-snapshot`: diff, migrate and verify read the ZooKeeper side from a snapshot zk2kafka wrote
(a scan's, one from a copy of a data directory, ready-for-kraft's evidence) instead of ZooKeeper.

Real ZooKeeper, Kafka and Spark. A ZooKeeper of the test's own (a server of Kafka 3.9.2's bundle)
holds the old consumers' offsets and is stopped for good, as a platform removes it after KIP-866;
the offsets reach Kafka from the snapshots, ZooKeeper's files are never written, and a snapshot
whose ZooKeeper still answers is checked against it before a group is written.
"""

from __future__ import annotations

import pyarrow.parquet as pq
from kafka import KafkaConsumer, TopicPartition

from support.cli import connection, zk2kafka_json, zk2kafka_text
from support.hints import operator_shell, paste_lines, reviewed_plan
from support.seeding import kafka_offsets, make_topic, put
from support.source_zookeeper import SourceZooKeeper, client, fingerprint


def kafka_only(cluster, state) -> list[str]:
    return ["--bootstrap-server", cluster.bootstrap_server, "--state-dir", str(state)]


def test_offsets_reach_kafka_from_snapshots_with_zookeeper_stopped(cluster, kafka_admin, prefix,
                                                                   tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    scanned, copied = f"{prefix}from-scan", f"{prefix}from-copy"
    source = SourceZooKeeper(tmp_path / "zk", "3.9.2")
    zk = client(source.start())
    offsets = {(g, p): 10 + 5 * i + p for i, g in enumerate((scanned, copied)) for p in range(2)}
    for (group, p), offset in offsets.items():
        zk.create(f"/consumers/{group}/offsets/{topic}/{p}", str(offset).encode(), makepath=True)
    state = tmp_path / "state"
    code, scan, err = zk2kafka_json("scan", "--zookeeper", source.connect, "--state-dir",
                                    str(state), "--group", f"{prefix}.*")
    assert code == 0, err
    metadata = pq.read_schema(scan["snapshot"]).metadata
    assert metadata[b"zk2kafka.side.read_by"] == f"scan {scan['run']}".encode()
    assert metadata[b"zk2kafka.side.zookeeper"] == source.connect.encode()
    zk.stop()
    source.stop()   # for good: what follows reads the snapshots alone
    before = fingerprint(source.data)

    # The diff reads the scan's snapshot; no --zookeeper, and none answers.
    code, out, err = zk2kafka_text("diff", *kafka_only(cluster, state), "--zk-snapshot",
                                   scan["run"], "--group", scanned)
    assert code == 0, err
    assert (f"ZooKeeper side: the snapshot {scan['snapshot']}: {source.connect}/consumers "
            f"(root /consumers), read at") in out
    assert f"by scan {scan['run']}; liveness (ids/, owners/) as the snapshot recorded it" in out
    assert "ZooKeeper is not written (--no-zk-write implied" in out
    plan_id = out.strip().splitlines()[-1].split()[1].removeprefix("plan=")
    code, dry, err = zk2kafka_json("migrate", *kafka_only(cluster, state), "--zk-snapshot",
                                   scan["run"], "--group", scanned)
    assert code == 0 and dry["dry_run"] and dry["counts"]["MIGRATE"] == 2, err
    side = dry["inputs"]["zookeeper_side"]
    assert (side["from"], side["kind"], side["read_by"]) == ("snapshot", "ensemble",
                                                             f"scan {scan['run']}")
    assert dry["inputs"]["no_zk_write"] is True
    report = (state / "reports" / dry["run"] / "report.md").read_text()
    assert f"- ZooKeeper: the snapshot {scan['snapshot']}" in report
    assert kafka_offsets(kafka_admin, [scanned, copied]) == {scanned: {}, copied: {}}  # dry

    # The reviewed plan, executed: its ZooKeeper does not answer, Kafka alone is checked.
    code, run, err = zk2kafka_json("migrate", *kafka_only(cluster, state), "--execute",
                                   "--plan", plan_id)
    assert code == 0, err
    assert run["zookeeper_side"]["rechecked"].startswith(
        f"ZooKeeper not re-checked: {source.connect} does not answer")

    # A copy of the stopped server's data directory, scanned, is a snapshot too.
    code, copy, err = zk2kafka_json("scan", "--zookeeper-data", str(source.data), "--state-dir",
                                    str(state))
    assert code == 0, err
    # It cannot stand for an ensemble the dual commit writes: which one, and how old, is unknown.
    code, out, err = zk2kafka_text("diff", *kafka_only(cluster, state), "--zookeeper",
                                   source.connect, "--zk-snapshot", copy["run"], "--dual-commit")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "the snapshot was read from a copy of a data directory" in err
    code, out, err = zk2kafka_text("migrate", *kafka_only(cluster, state), "--execute",
                                   "--zk-snapshot", copy["snapshot"], "--group", copied)
    assert code == 0, err
    assert ("ZooKeeper not re-checked: the snapshot was read from a copy of a data directory"
            in out)

    moved = kafka_offsets(kafka_admin, [scanned, copied])
    assert {(g, p): o for g in moved for (_, p), (o, _) in moved[g].items()} == offsets
    code, verified, err = zk2kafka_json("verify", *kafka_only(cluster, state), "--zk-snapshot",
                                        copy["run"])
    assert code == 0 and verified["verified"], err
    assert verified["inputs"]["zookeeper_side"]["kind"] == "data directory"
    # The new consumers read exactly what the old ones had not.
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_server, group_id=copied,
                             enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        assert consumer.position(TopicPartition(topic, 0)) == offsets[(copied, 0)]
    finally:
        consumer.close()
    assert fingerprint(source.data) == before   # ZooKeeper's files untouched


def test_a_snapshot_whose_zookeeper_answers_is_checked_against_it(cluster, zk, zk_chroot,
                                                                  kafka_admin, prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    still, moved = f"{prefix}still", f"{prefix}moved"
    for group in (still, moved):
        put(zk, f"/consumers/{group}/offsets/{topic}/0", b"20")
    state = tmp_path / "state"
    code, scan, err = zk2kafka_json("scan", *connection(cluster, zk_chroot, state),
                                    "--group", f"{prefix}.*")
    assert code == 0, err
    zk.set(f"/consumers/{moved}/offsets/{topic}/0", b"30")   # an old consumer moved on since

    # A reviewed plan from the snapshot, dry: the group that moved is named, with the fresh diff
    # of it against the ZooKeeper that answered.
    code, out, err = zk2kafka_text("diff", *kafka_only(cluster, state), "--zk-snapshot",
                                   scan["run"])
    assert code == 0, err
    plan_id = out.strip().splitlines()[-1].split()[1].removeprefix("plan=")
    code, out, err = zk2kafka_text("migrate", *kafka_only(cluster, state), "--plan", plan_id)
    assert code == 3, err
    assert "1 group(s) moved since the review" in out
    assert f"  moved: {moved}: " in out and "ZooKeeper offsets changed since the scan" in out
    where = " " + " ".join(kafka_only(cluster, state))   # the location flags it was given, repeated
    assert f"`PLAN=$(zk2kafka diff{where} --zookeeper {zk_chroot} --group {moved} --json" in out
    advice = reviewed_plan(out)

    # No --zookeeper given: the one the snapshot recorded still answers, and is read again.
    code, run, err = zk2kafka_json("migrate", *kafka_only(cluster, state), "--execute",
                                   "--zk-snapshot", scan["run"])
    assert code == 1, err
    assert run["zookeeper_side"]["rechecked"] == (
        f"re-checked against ZooKeeper {zk_chroot}: a znode moved since the snapshot is not "
        "written over")
    failed = {r["group"]: r["reason"] for r in run["reasons"] if r["state"] == "failed"}
    assert list(failed) == [moved] and "changed" in failed[moved], failed
    assert kafka_offsets(kafka_admin, [still, moved]) == {
        still: {(topic, 0): (20, f"zk2kafka migrate {run['run']}")}, moved: {}}
    # ZooKeeper was read, never written: each znode as the old consumers left it.
    assert zk.get(f"/consumers/{still}/offsets/{topic}/0")[1].version == 0
    assert zk.get(f"/consumers/{moved}/offsets/{topic}/0")[0] == b"30"

    # The advice pastes as printed into a shell that names no ZooKeeper: the fresh diff reads the
    # one that answered, and its plan moves the group where the old consumer left it.
    shell = operator_shell(cluster, zk_chroot, state)
    del shell["ZK2KAFKA_ZOOKEEPER"]
    pasted = paste_lines(shell, advice[0], advice[2])
    assert pasted.returncode == 0, pasted.stderr
    assert kafka_offsets(kafka_admin, [moved])[moved][(topic, 0)][0] == 30


def test_what_needs_live_zookeeper_is_refused_from_a_snapshot(cluster, zk, zk_chroot, kafka_admin,
                                                              prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    group = f"{prefix}left"
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"7")
    state = tmp_path / "state"
    code, ready, err = zk2kafka_json("ready-for-kraft", *connection(cluster, zk_chroot, state),
                                     "--quiet-for", "1s", "--ensemble-max-time", "5s")
    assert code == 3 and ready["not_ready"] == [group], err
    evidence = ready["evidence"]["zookeeper"]
    assert pq.read_schema(evidence).metadata[b"zk2kafka.side.read_by"] == (
        f"ready-for-kraft {ready['run']}".encode())
    kafka = kafka_only(cluster, state)
    for argv, said in (
            (("ready-for-kraft", "--zk-snapshot", ready["run"]),
             "ready-for-kraft reads ZooKeeper live"),
            (("diff", "--zk-snapshot", ready["run"], "--rewrite-zk-offsets"),
             "--rewrite-zk-offsets writes ZooKeeper, and the ZooKeeper side is a snapshot"),
            (("migrate", "--zk-snapshot", ready["run"], "--plan", "x"),
             "--zk-snapshot and --plan go apart"),
            (("diff", "--zk-snapshot", "no-such-run"), "--zk-snapshot no-such-run: no such file")):
        code, out, err = zk2kafka_text(*argv, *kafka)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert said in err
    code, out, err = zk2kafka_text("sync", "--zk-snapshot", ready["run"], *kafka)
    assert code == 2, err   # sync has no such option: it follows ZooKeeper live

    # The evidence is a ZooKeeper side of its own; nothing is written without --execute.
    code, dry, err = zk2kafka_json("migrate", *kafka, "--zk-snapshot", evidence)
    assert code == 0 and dry["planned"]["commit_offsets"] == 1, err
    assert dry["inputs"]["zookeeper_side"]["read_by"] == f"ready-for-kraft {ready['run']}"
    assert kafka_offsets(kafka_admin, [group]) == {group: {}}
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[1].version == 0
