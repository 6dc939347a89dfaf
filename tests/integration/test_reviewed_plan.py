"""`migrate --plan RUN` executes the plan a diff wrote, the one reviewed, and nothing else.

Real ZooKeeper, Kafka and Spark: a diff is made, then the stores move under it (an old consumer
writes a znode, a new consumer commits an offset in Kafka), and the reviewed plan is executed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from migrate.journal.journal import Journal

from support.cli import zk2kafka_json, zk2kafka_text
from support.seeding import kafka_offsets, make_topic, put


@pytest.fixture
def reviewed(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path, capsys):
    """Four groups with offsets only in ZooKeeper, two partitions each, and the diff that planned them."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    groups = [f"{prefix}g{i}" for i in range(4)]
    for i, group in enumerate(groups):
        for p in range(2):
            put(zk, f"/consumers/{group}/offsets/{topic}/{p}", str(10 * (i + 1) + p).encode())
    args = ["--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server, "--state-dir", str(tmp_path)]
    code, out, err = zk2kafka_text("diff", *args, "--group", f"{prefix}.*")
    assert code == 0, err
    last = out.strip().splitlines()[-1]
    match = re.fullmatch(r"run=(\S+) plan=(\S+@[0-9a-f]{12}) report=(\S+)", last)
    assert match, last
    run, plan_id, report = match[1], match[2], Path(match[3])
    return {"topic": topic, "groups": groups, "args": args, "run": run, "plan_id": plan_id, "report": report}


def planned(report: Path) -> dict[tuple[str, str, int], dict]:
    return {(r["group"], r["topic"], r["partition"]): r for r in pq.read_table(report / "plan.parquet").to_pylist()}


def test_the_diff_names_its_plan_in_summary_report_and_last_line(reviewed):
    summary = json.loads((reviewed["report"] / "summary.json").read_text())
    assert summary["plan_id"] == reviewed["plan_id"] and reviewed["plan_id"].startswith(reviewed["run"] + "@")
    assert reviewed["plan_id"] in (reviewed["report"] / "report.md").read_text()
    assert reviewed["plan_id"] in (reviewed["report"] / "report.html").read_text()


def test_executes_the_reviewed_plan_and_fails_the_groups_that_moved(reviewed, zk, kafka_admin, cluster, tmp_path,
                                                                   capsys):
    topic, (g0, g1, g2, g3), args = reviewed["topic"], reviewed["groups"], reviewed["args"]
    rows = planned(reviewed["report"])
    # Since the review: an old consumer of g1 moves one znode; a new consumer of g2 commits one offset in Kafka.
    moved_znode = f"/consumers/{g1}/offsets/{topic}/0"
    zk.set(moved_znode, b"33")
    consumer = KafkaConsumer(group_id=g2, bootstrap_servers=cluster.bootstrap_server, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(topic, 1)])
        consumer.commit({TopicPartition(topic, 1): OffsetAndMetadata(40, "new consumer", -1)})
    finally:
        consumer.close()

    # Without --execute: what would be written and what moved, checked live; nothing written.
    code, dry, err = zk2kafka_json("migrate", *args, "--plan", reviewed["run"])
    assert code == 3, err
    assert dry["dry_run"] and set(dry["would_write"]) == {g0, g3} and set(dry["moved"]) == {g1, g2}
    assert "ZooKeeper offsets changed" in dry["moved"][g1] and moved_znode in dry["moved"][g1]
    assert f"{topic}-1 no offset -> 40" in dry["moved"][g2]
    assert kafka_offsets(kafka_admin, [g0, g3]) == {g0: {}, g3: {}}

    code, out, err = zk2kafka_text("migrate", *args, "--execute", "--plan", reviewed["plan_id"])
    assert code == 1, err   # two groups not written: the run is not done
    # Every other group exactly as reviewed, in both stores.
    for group in (g0, g3):
        expected = {(topic, p): rows[(group, topic, p)]["planned_offset"] for p in range(2)}
        assert {k: v[0] for k, v in kafka_offsets(kafka_admin, [group])[group].items()} == expected
        for p in range(2):
            assert zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0] == str(expected[(topic, p)]).encode()
    # The two that moved: failed with what moved, both stores as the movers left them.
    assert kafka_offsets(kafka_admin, [g1, g2]) == {g1: {}, g2: {(topic, 1): (40, "new consumer")}}
    assert zk.get(moved_znode)[0] == b"33" and zk.get(moved_znode)[1].version == 1
    assert zk.get(f"/consumers/{g2}/offsets/{topic}/1")[1].version == 0
    assert re.search(rf"failed: {re.escape(g1)}: .*ZooKeeper offsets changed.*{re.escape(moved_znode)}", out), out
    assert re.search(rf"failed: {re.escape(g2)}: Kafka offsets changed since the plan: {topic}-1 no offset -> 40",
                     out), out
    assert "moved since the review of " + reviewed["plan_id"] in out
    where = " " + " ".join(args)   # the location flags the command was given, repeated
    assert f"`PLAN=$(zk2kafka diff{where} --group {g1} --group {g2} --json | jq -r .plan_id)`" in out
    last = out.strip().splitlines()[-1]
    assert f" plan={reviewed['plan_id']} report={reviewed['report']}" in last

    run_id = re.match(r"run=(\S+)", last)[1]
    with Journal.open(tmp_path) as journal:
        run = journal.run(run_id)
        assert run.settings["reviewed_plan"] == reviewed["plan_id"] and run.report == str(reviewed["report"])
        assert {g.name: g.state for g in journal.groups(run_id)} == {g0: "verified", g1: "failed", g2: "failed",
                                                                      g3: "verified"}
    code, shown, err = zk2kafka_json("status", "--state-dir", str(tmp_path), run_id)
    assert code == 0 and shown["reviewed_plan"] == reviewed["plan_id"], err

    # verify --run: what that run wrote still holds, without a diff.
    code, checked, err = zk2kafka_json("verify", *args, "--run", run_id)
    assert code == 0, err
    assert checked["verified"] and checked["checked"] == 4 and checked["not_written"] == {"failed": 2}


def test_an_altered_plan_is_refused(reviewed, kafka_admin, tmp_path, capsys):
    plan_file = reviewed["report"] / "plan.parquet"
    table = pq.read_table(plan_file)
    offsets = table.column("planned_offset").to_pylist()
    offsets[0] = offsets[0] + 1000   # one offset changed after the review
    pq.write_table(table.set_column(table.schema.get_field_index("planned_offset"), "planned_offset",
                                    [offsets]).cast(table.schema), plan_file)
    code, _, err = zk2kafka_json("migrate", *reviewed["args"], "--execute", "--plan", reviewed["run"])
    assert code == 1
    assert err.count("\n") == 1 and "was altered since the diff wrote it" in err and "nothing was written" in err
    assert kafka_offsets(kafka_admin, reviewed["groups"]) == {g: {} for g in reviewed["groups"]}
    assert not (tmp_path / "journal.sqlite").exists() or not Journal.open(tmp_path).runs()


def test_a_stale_plan_or_one_for_other_stores_or_policies_is_refused(reviewed, kafka_admin, tmp_path, capsys):
    time.sleep(2.1)
    code, _, err = zk2kafka_json("migrate", *reviewed["args"], "--execute", "--plan", reviewed["run"],
                           "--max-plan-age", "1s")
    assert code == 1 and err.count("\n") == 1, err
    where = re.escape(" " + " ".join(reviewed["args"]))   # the location flags it was given, repeated
    assert re.search(rf"made \ds ago, older than --max-plan-age 1s; run a fresh `zk2kafka diff{where}` and review "
                     rf"it, or take this one anyway: `zk2kafka migrate{where} --execute --plan \S+@\w+ "
                     r"--max-plan-age 2m`; nothing was written", err), err

    code, _, err = zk2kafka_json("migrate", *reviewed["args"], "--execute", "--plan", reviewed["run"],
                           "--zk-root", "/elsewhere")
    assert code == 1 and "made against other stores" in err and "--zk-root" in err, err
    code, _, err = zk2kafka_json("migrate", *reviewed["args"], "--execute", "--plan", reviewed["run"],
                           "--on-conflict", "kafka")
    assert code == 1 and "made with other policies" in err and "--on-conflict 'skip' in the plan" in err, err
    unknown = reviewed["plan_id"][:-12] + "0" * 12
    code, _, err = zk2kafka_json("migrate", *reviewed["args"], "--execute", "--plan", unknown)
    assert code == 1 and "not the one named" in err, err
    assert kafka_offsets(kafka_admin, reviewed["groups"]) == {g: {} for g in reviewed["groups"]}


def test_a_group_a_new_consumer_joined_since_the_review_is_not_written(reviewed, kafka_admin, cluster, capsys):
    # A new consumer joins g3 and stays, committing nothing: the offsets are as reviewed, the group's state is not.
    topic, g3 = reviewed["topic"], reviewed["groups"][3]
    consumer = KafkaConsumer(topic, group_id=g3, bootstrap_servers=cluster.bootstrap_server, enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        assert consumer.assignment()
        code, out, err = zk2kafka_text("migrate", *reviewed["args"], "--execute", "--plan", reviewed["run"])
        assert code == 1, err
        assert re.search(rf"failed: {re.escape(g3)}: Kafka group state changed since the plan: unknown to Kafka, "
                         r"0 member\(s\) then, Stable, 1 member\(s\) now", out), out
        where = " " + " ".join(reviewed["args"])   # the location flags the command was given, repeated
        assert f"`PLAN=$(zk2kafka diff{where} --group {g3} --json | jq -r .plan_id)`" in out
        assert kafka_offsets(kafka_admin, [g3]) == {g3: {}}
    finally:
        consumer.close()


def test_a_reviewed_plan_run_resumes_verifies_and_rolls_back_as_any_run(reviewed, zk, kafka_admin, tmp_path, capsys):
    topic, groups, args = reviewed["topic"], reviewed["groups"], reviewed["args"]
    rows = planned(reviewed["report"])
    killed = subprocess.run([sys.executable, "-m", "migrate", "migrate", *args, "--execute", "--plan", reviewed["run"],
                             "--parallelism", "1", "-q"], env={**os.environ, "ZK2KAFKA_CRASH_AT": "after-kafka-commit"},
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    with Journal.open(tmp_path) as journal:
        (run,) = journal.runs()
    assert run.settings["reviewed_plan"] == reviewed["plan_id"] and run.state == "running"

    code, done, err = zk2kafka_json("migrate", *args, "--execute", "--resume", run.run_id)
    assert code == 0, err
    assert done["state"] == "done" and done["groups"]["verified"] == 4 and done["plan_id"] == reviewed["plan_id"]
    for group in groups:
        assert {k: v[0] for k, v in kafka_offsets(kafka_admin, [group])[group].items()} == {
            (topic, p): rows[(group, topic, p)]["planned_offset"] for p in range(2)}
    code, checked, err = zk2kafka_json("verify", *args, "--run", run.run_id)
    assert code == 0 and checked["checked"] == 8, err

    code, back, err = zk2kafka_json("rollback", *args, run.run_id, "--execute")
    assert code == 0, err
    assert kafka_offsets(kafka_admin, groups) == {g: {} for g in groups}
    for i, group in enumerate(groups):
        for p in range(2):
            assert zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0] == str(10 * (i + 1) + p).encode()
    code, checked, err = zk2kafka_json("verify", *args, "--run", run.run_id)
    assert code == 3 and checked["verified"] is False and len(checked["differ"]) == 8, err


def test_a_plan_applied_again_is_already_applied_not_failed(reviewed, zk, kafka_admin, tmp_path, capsys):
    topic, groups, args = reviewed["topic"], reviewed["groups"], reviewed["args"]
    # The plan's file path names it too.
    plan_file = str(reviewed["report"] / "plan.parquet")
    code, first, err = zk2kafka_json("migrate", *args, "--execute", "--plan", plan_file)
    assert code == 0 and first["state"] == "done" and first["groups"]["verified"] == 4, err
    written = (kafka_offsets(kafka_admin, groups), {g: zk.get(f"/consumers/{g}/offsets/{topic}/0") for g in groups})

    for dry in (True, False):
        code, out, err = zk2kafka_text("migrate", *args, *([] if dry else ["--execute"]), "--plan", reviewed["plan_id"])
        assert code == 0, err
        assert (f"plan {reviewed['plan_id']}: already applied: 4 group(s) hold what run {first['run']} wrote; "
                f"nothing {'would be' if dry else 'was'} written") in out
        assert "failed" not in out and "changed since the plan" not in out
        assert out.strip().splitlines()[-1] == (f"run={first['run']} plan={reviewed['plan_id']} "
                                                f"report={reviewed['report']}")
    assert (kafka_offsets(kafka_admin, groups), {g: zk.get(f"/consumers/{g}/offsets/{topic}/0") for g in groups}) \
        == written
    # status keeps the first run's state: no second run, nothing incomplete.
    code, status, _ = zk2kafka_json("status", "--state-dir", str(tmp_path))
    assert [(r["run"], r["state"]) for r in status["runs"]] == [(first["run"], "done")]


def test_a_plan_whose_run_was_killed_is_resumed_not_applied_again(reviewed, kafka_admin, tmp_path, capsys):
    args = reviewed["args"]
    killed = subprocess.run([sys.executable, "-m", "migrate", "migrate", *args, "--execute", "--plan", reviewed["run"],
                             "--parallelism", "1", "-q"], env={**os.environ, "ZK2KAFKA_CRASH_AT": "after-kafka-commit"},
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    (run,) = Journal.open(tmp_path).runs()
    code, _, err = zk2kafka_text("migrate", *args, "--execute", "--plan", reviewed["plan_id"])
    where = " " + " ".join(args)   # the location flags the command was given, repeated
    assert code == 1 and f"`zk2kafka migrate{where} --execute --resume {run.run_id}` finishes them; nothing was " \
                         "written" in err
    assert [r.run_id for r in Journal.open(tmp_path).runs()] == [run.run_id]
    code, done, err = zk2kafka_json("migrate", *args, "--execute", "--resume", run.run_id)
    assert code == 0 and done["state"] == "done", err
    code, out, err = zk2kafka_text("migrate", *args, "--execute", "--plan", reviewed["plan_id"])
    assert code == 0 and "already applied: 4 group(s)" in out, err


def test_a_plan_made_through_another_address_of_the_same_cluster_is_executed(reviewed, cluster, kafka_admin,
                                                                           capsys):
    same = [a.replace("127.0.0.1", "localhost") for a in reviewed["args"]]
    assert same != reviewed["args"]
    code, done, err = zk2kafka_json("migrate", *same, "--execute", "--plan", reviewed["run"])
    assert code == 0 and done["groups"]["verified"] == 4, err
    # Another cluster is refused, naming both cluster ids.
    other = [cluster.kraft_bootstrap_server if a == cluster.bootstrap_server else a for a in reviewed["args"]]
    code, _, err = zk2kafka_json("migrate", *other, "--plan", reviewed["run"])
    assert code == 1 and re.search(r"made against other stores \(Kafka cluster \S+ then \(--bootstrap-server "
                                   rf"'{cluster.bootstrap_server}'\), \S+ now \(--bootstrap-server "
                                   rf"'{cluster.kraft_bootstrap_server}'\)\)", err), err
