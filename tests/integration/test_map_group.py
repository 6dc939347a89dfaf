"""`--map-group` against real ZooKeeper and Kafka: each ZooKeeper group judged against the Kafka group
it maps to, reset-offsets.csv under the Kafka names (applied by Kafka's own tool, the new group's
consumer resumes exactly there, verify through the mapping), the refusals; a reviewed renamed plan
migrated (the new group's consumer resumes exactly), verified and rolled back by its journal, the old
name's Kafka offsets untouched; a reviewed plan applied with another mapping is drift."""

from __future__ import annotations

import csv
import json
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from migrate.diff import schema as s
from migrate.journal.journal import Journal

from support.cli import selected, zk2kafka_json, zk2kafka_text
from support.consumers import joined
from support.hints import hints, operator_shell, paste
from support.seeding import kafka_offsets, make_topic, put, zk_tree
from support.sync_process import scraped_when, start_sync, stop_sync
from support.sync_process import value as sample
from support.wait import free_port, wait_for


def _seed(zk, kafka_admin, cluster, prefix: str) -> dict[str, str]:
    """Two old groups to rename and one that keeps its name; Kafka holds offsets under the old name
    of one (which the mapped diff must not look at) and part of the new group's."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 100)
    names = {"old": f"{prefix}legacy-billing", "new": f"{prefix}billing-v2",
             "kept": f"{prefix}audit", "topic": topic}
    for (group, p), value in {(names["old"], 0): b"10", (names["old"], 1): b"20",
                              (names["kept"], 0): b"5"}.items():
        put(zk, f"/consumers/{group}/offsets/{topic}/{p}", value)
    kafka_admin.alter_group_offsets(names["new"], {TopicPartition(topic, 0): OffsetAndMetadata(10, "", -1)})
    # Under the old name, Kafka holds another value: judged against it, p1 would be a CONFLICT.
    kafka_admin.alter_group_offsets(names["old"], {TopicPartition(topic, 1): OffsetAndMetadata(99, "", -1)})
    return names


def test_each_old_group_is_judged_against_and_planned_for_its_new_group(cluster, zk, zk_chroot, kafka_admin,
                                                                        prefix, tmp_path):
    n = _seed(zk, kafka_admin, cluster, prefix)
    rule = f"{prefix}legacy-(.*)={prefix}\\1-v2"
    before_zk = zk_tree(zk)
    before_kafka = kafka_offsets(kafka_admin, [n["old"], n["new"], n["kept"]])
    base = selected(cluster, zk_chroot, tmp_path / "state", prefix)

    code, data, err = zk2kafka_json("diff", *base, "--map-group", rule)
    assert code == 0, err
    assert data["inputs"]["group_map"]["renamed"] == {n["old"]: n["new"]}
    plan = {(r["group"], r["partition"]): r for r in pq.read_table(data["files"]["plan"]).to_pylist()}
    assert {k: (r["status"], r["kafka_group"], r["kafka_offset"]) for k, r in plan.items()} == {
        (n["old"], 0): (s.IN_SYNC, n["new"], 10),            # the new group's offset, not the old name's
        (n["old"], 1): (s.MIGRATE, n["new"], None),  # the old name's 99 is not the new group's
        (n["kept"], 0): (s.MIGRATE, n["kept"], None)}

    # Kafka's tool commits to Kafka groups: the rows under the new name; rows.csv shows both.
    reset = Path(data["files"]["reset_offsets"]).read_text().splitlines()
    assert reset == [f"{n['kept']},{n['topic']},0,5", f"{n['new']},{n['topic']},1,20"]
    with open(data["files"]["rows"], newline="") as f:
        rows = list(csv.DictReader(f))
    assert {(r["group"], r["kafka_group"], r["partition"]) for r in rows} == {
        (n["old"], n["new"], "0"), (n["old"], n["new"], "1"), (n["kept"], n["kept"], "0")}
    report = (Path(data["report"]) / "report.md").read_text()
    assert f"{n['old']} -&gt; {n['new']}" in report   # escaped as Markdown keeps no raw HTML
    # The plan is executed with the mapping it was made with: the page's command repeats it.
    assert f"zk2kafka migrate --execute --plan {data['plan_id']} --map-group '{rule}'" in report

    # A diff writes nothing, in either store.
    assert zk_tree(zk) == before_zk
    assert kafka_offsets(kafka_admin, [n["old"], n["new"], n["kept"]]) == before_kafka

    # The text says old -> new (the same rename from a file of literal names); without a mapping the output
    # says nothing of one.
    names = tmp_path / "groups.csv"
    names.write_text(f"{n['old']},{n['new']}\n")
    code, out, err = zk2kafka_text("diff", *base, "--map-group-file", str(names))
    assert code == 0, err
    assert f"renamed: 1 group(s) judged against a Kafka group of another name:\n  {n['old']} -> {n['new']}" in out
    # Kafka deletes offsets no consumer holds: the sync that renews them repeats the mapping.
    assert f"({n['old']} -> {n['new']}, {n['kept']})" in out
    (renew,) = [h for h in hints(out) if h.startswith("zk2kafka sync")]
    assert renew.endswith(f" --execute --renew-every 42h --group '{prefix}.*' --map-group-file {names}"), renew
    code, out, err = zk2kafka_text("diff", *base)
    assert code == 3 and "renamed" not in out, out   # judged against the old name: a CONFLICT


def test_the_new_groups_consumer_resumes_exactly_where_the_old_group_stopped(cluster, zk, zk_chroot, kafka_admin,
                                                                             prefix, tmp_path):
    """The reviewed reset-offsets.csv applied by Kafka's own tool (kafka-consumer-groups --reset-offsets
    --from-file --execute), the new group's consumer starts at the old group's offsets, and verify through the
    mapping finds every offset in sync."""
    from migrate.jvm.artifacts import ensure_bundle
    from support.servers import CACHE_DIR

    n = _seed(zk, kafka_admin, cluster, prefix)
    rule = f"{prefix}legacy-(.*)={prefix}\\1-v2"
    base = selected(cluster, zk_chroot, tmp_path / "state", prefix)
    code, data, err = zk2kafka_json("diff", *base, "--map-group", rule)
    assert code == 0, err
    reset = Path(data["files"]["reset_offsets"])

    classpath = ":".join(map(str, ensure_bundle("kafka-3.9", CACHE_DIR)))
    tool = subprocess.run(
        ["java", "-cp", classpath, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
         "--bootstrap-server", cluster.bootstrap_server, "--reset-offsets", "--from-file", str(reset),
         "--group", n["new"], "--group", n["kept"], "--execute"],
        capture_output=True, text=True, timeout=120)
    assert tool.returncode == 0, tool.stderr

    # the old group's offsets, in ZooKeeper, under the new name
    assert _first_offsets(cluster, n["new"], n["topic"]) == {0: 10, 1: 20}

    code, data, err = zk2kafka_json("verify", *base, "--map-group", rule)
    assert code == 0 and data["verified"], (err, data.get("mismatched"))
    # The old name's Kafka offsets are as they were: nothing was committed to them.
    assert kafka_offsets(kafka_admin, [n["old"]])[n["old"]] == {(n["topic"], 1): (99, "")}


def test_the_cutovers_snapshot_road_renames_too(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    """scan, then `diff --zk-snapshot` of that scan with the mapping, then the reviewed plan executed with it and
    `verify --run` with no flag: the new group gets the old one's offsets, ZooKeeper and the old name's Kafka
    offsets stay as they were."""
    n = _seed(zk, kafka_admin, cluster, prefix)
    rule = f"{prefix}legacy-(.*)={prefix}\\1-v2"
    base = selected(cluster, zk_chroot, tmp_path / "state", prefix)
    before_zk = zk_tree(zk)
    code, scan, err = zk2kafka_json("scan", *base)
    assert code == 0, err

    code, diff, err = zk2kafka_json("diff", *base, "--zk-snapshot", scan["run"], "--map-group", rule)
    assert code == 0, err
    assert diff["inputs"]["group_map"]["renamed"] == {n["old"]: n["new"]}
    code, run, err = zk2kafka_json("migrate", *base[:-2], "--execute", "--plan", diff["plan_id"],
                                   "--map-group", rule)
    assert code == 0, err
    held = kafka_offsets(kafka_admin, [n["old"], n["new"], n["kept"]])
    assert {k: v[0] for k, v in held[n["new"]].items()} == {(n["topic"], 0): 10, (n["topic"], 1): 20}
    assert {k: v[0] for k, v in held[n["kept"]].items()} == {(n["topic"], 0): 5}
    assert held[n["old"]] == {(n["topic"], 1): (99, "")}
    assert zk_tree(zk) == before_zk   # the snapshot's road writes Kafka alone
    code, verified, err = zk2kafka_json("verify", "--run", run["run"], *base[:-2])   # the journal's mapping
    assert code == 0 and verified["verified"], (err, verified.get("mismatched"))


def test_a_live_new_group_is_a_blocker_named_old_to_new(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    n = _seed(zk, kafka_admin, cluster, prefix)
    consumer = KafkaConsumer(n["topic"], group_id=n["new"], bootstrap_servers=cluster.bootstrap_server,
                             enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        assert consumer.assignment(), "the new application's consumer never joined its group"
        code, out, err = zk2kafka_text("diff", *selected(cluster, zk_chroot, tmp_path, prefix),
                                       "--map-group", f"{prefix}legacy-(.*)={prefix}\\1-v2")
    finally:
        consumer.close()
    assert code == 3, err
    assert f"blocker rows: {n['old']} -> {n['new']}: {s.GROUP_ACTIVE_KAFKA}" in out


def test_groups_that_would_meet_in_one_kafka_group_are_refused_before_kafka_is_read(cluster, zk, zk_chroot,
                                                                                      kafka_admin, prefix, tmp_path):
    n = _seed(zk, kafka_admin, cluster, prefix)
    state = tmp_path / "state"
    base = selected(cluster, zk_chroot, state, prefix)
    code, out, err = zk2kafka_text("diff", *base, "--map-group", f"{prefix}(legacy-billing|audit)={prefix}one")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"groups '{n['kept']}' and '{n['old']}' are both mapped to '{prefix}one'" in err
    code, out, err = zk2kafka_text("diff", *base, "--map-group", f"{prefix}legacy-billing={n['kept']}")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"the name group '{n['kept']}' keeps" in err
    code, out, err = zk2kafka_text("diff", *base, "--map-group", f"{prefix}legacy-(x)?billing=\\1")
    assert code == 2 and "maps to an empty name" in err, err
    # ZooKeeper was read (its snapshots are there), Kafka was not.
    assert list((state / "snapshots").glob("zk-*.parquet"))
    assert not list((state / "snapshots").glob("kafka-*.parquet"))

    # sync refuses them the same way, before it journals a run or reaches Kafka.
    code, out, err = zk2kafka_text("sync", "--execute", *base, "--stop-after", "30s",
                                   "--map-group", f"{prefix}(legacy-billing|audit)={prefix}one")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"groups '{n['kept']}' and '{n['old']}' are both mapped to '{prefix}one'" in err
    with Journal.open(state) as journal:
        assert journal.runs() == []
    assert kafka_offsets(kafka_admin, [f"{prefix}one"]) == {f"{prefix}one": {}}


def _first_offsets(cluster, group: str, topic: str) -> dict[int, int]:
    """Where a new consumer of `group` starts on each of the topic's two partitions: its first record's offset."""
    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=cluster.bootstrap_server,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        first: dict[int, int] = {}
        deadline = time.monotonic() + 60
        while len(first) < 2 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                for record in records:
                    first.setdefault(record.partition, record.offset)
        return first
    finally:
        consumer.close()


def test_a_reviewed_renamed_plan_is_migrated_verified_and_rolled_back_under_the_new_name(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    n = _seed(zk, kafka_admin, cluster, prefix)
    rule = f"{prefix}legacy-(.*)={prefix}\\1-v2"
    state = tmp_path / "state"
    base = selected(cluster, zk_chroot, state, prefix)
    code, plan, err = zk2kafka_json("diff", *base, "--map-group", rule)
    assert code == 0, err
    before_zk = {path: value for path, value in zk_tree(zk).items() if "/offsets/" in path}

    code, done, err = zk2kafka_json("migrate", "--execute", "--plan", plan["plan_id"], "--map-group", rule,
                                    "--state-dir", str(state), "--zookeeper", zk_chroot,
                                    "--bootstrap-server", cluster.bootstrap_server)
    assert code == 0, err
    run = done["run"]
    after = kafka_offsets(kafka_admin, [n["old"], n["new"], n["kept"]])
    assert {k: v[0] for k, v in after[n["new"]].items()} == {(n["topic"], 0): 10, (n["topic"], 1): 20}
    assert {k: v[0] for k, v in after[n["kept"]].items()} == {(n["topic"], 0): 5}
    assert after[n["old"]] == {(n["topic"], 1): (99, "")}          # the old name's Kafka offsets untouched
    # The dual commit keeps ZooKeeper's half under the old group's name, with the same values.
    assert {path: value for path, value in zk_tree(zk).items() if "/offsets/" in path} == before_zk
    # The new application's consumer starts exactly where the old group stopped.
    assert _first_offsets(cluster, n["new"], n["topic"]) == {0: 10, 1: 20}

    # verify --run and rollback find the Kafka names in the journal: no flag.
    code, verified, err = zk2kafka_json("verify", "--run", run, "--state-dir", str(state), "--zookeeper", zk_chroot,
                                        "--bootstrap-server", cluster.bootstrap_server)
    assert code == 0 and verified["verified"], (err, verified.get("differ"))
    code, rolled, err = zk2kafka_json("rollback", run, "--execute", "--state-dir", str(state),
                                      "--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server)
    assert code == 0, err
    back = kafka_offsets(kafka_admin, [n["old"], n["new"], n["kept"]])
    assert {k: v[0] for k, v in back[n["new"]].items()} == {(n["topic"], 0): 10}   # as before the run
    assert back[n["kept"]] == {}
    assert back[n["old"]] == {(n["topic"], 1): (99, "")}
    assert {path: value for path, value in zk_tree(zk).items() if "/offsets/" in path} == before_zk


def test_a_reviewed_plan_applied_with_another_mapping_is_drift(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                               tmp_path):
    n = _seed(zk, kafka_admin, cluster, prefix)
    state = tmp_path / "state"
    base = selected(cluster, zk_chroot, state, prefix)
    renamed_plan = zk2kafka_json("diff", *base, "--map-group", f"{prefix}legacy-(.*)={prefix}\\1-v2")[1]["plan_id"]
    plain_plan = zk2kafka_json("diff", *base, "--group", n["kept"])[1]["plan_id"]
    before_zk, before_kafka = zk_tree(zk), kafka_offsets(kafka_admin, [n["old"], n["new"], n["kept"]])
    conn = ["--state-dir", str(state), "--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server]
    for plan_id, mapping, says in [
            (renamed_plan, [], f"{n['old']} -> {n['new']} in the plan, no renames now"),
            (renamed_plan, ["--map-group", f"{prefix}legacy-(.*)={prefix}\\1-v3"],
             f"{n['old']} -> {n['new']} in the plan, {n['old']} -> {prefix}billing-v3 now"),
            (plain_plan, ["--map-group", f"{prefix}audit={prefix}audit-v2"],
             f"no renames in the plan, {n['kept']} -> {prefix}audit-v2 now")]:
        code, out, err = zk2kafka_text("migrate", "--execute", "--plan", plan_id, *mapping, *conn)
        assert code != 0 and "made with another group mapping" in err and says in err, (out, err)
    assert zk_tree(zk) == before_zk
    assert kafka_offsets(kafka_admin, [n["old"], n["new"], n["kept"]]) == before_kafka

    # A plan too old: the command that executes it anyway repeats its mapping, and pastes as printed.
    time.sleep(1.1)
    code, out, err = zk2kafka_text("migrate", "--execute", "--plan", renamed_plan, "--max-plan-age", "1s", *conn)
    (anyway,) = [h for h in hints(err) if "--max-plan-age" in h]
    assert anyway.endswith(f" --map-group '{prefix}legacy-(.*)={prefix}\\1-v2'"), anyway
    done = paste(operator_shell(cluster, zk_chroot, state), anyway)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {k: v[0] for k, v in kafka_offsets(kafka_admin, [n["new"]])[n["new"]].items()} == {
        (n["topic"], 0): 10, (n["topic"], 1): 20}


def test_ready_for_kraft_counts_an_old_group_moved_when_its_new_group_holds_its_offsets(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    from support.hints import paste_lines, reviewed_plan

    topic, old, new = f"{prefix}orders", f"{prefix}legacy-billing", f"{prefix}billing-v2"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 100)
    put(zk, f"/consumers/{old}/offsets/{topic}/0", b"10")
    put(zk, f"/consumers/{old}/offsets/{topic}/1", b"20")
    rule = f"{prefix}legacy-(.*)={prefix}\\1-v2"
    shell = operator_shell(cluster, zk_chroot, tmp_path / "state")
    ready = f"zk2kafka ready-for-kraft --quiet-for 1s --map-group '{rule}'"

    # Not in its new group yet: the diff and the reviewed plan of that group, or a rolling switch, each with the
    # mapping, as printed.
    checked = paste(shell, ready)
    assert checked.returncode == 3, checked.stdout + checked.stderr
    assert f"renamed: 1 group(s) judged against a Kafka group of another name:\n  {old} -> {new}" in checked.stdout
    diff, review, execute = reviewed_plan(checked.stdout)
    assert diff == f"PLAN=$(zk2kafka diff --group {old} --map-group '{rule}' --json | jq -r .plan_id)"
    assert execute == f"zk2kafka migrate --execute --plan \"$PLAN\" --group {old} --map-group '{rule}'"
    (switch,) = [h for h in hints(checked.stdout) if h.startswith("zk2kafka sync")]
    assert switch == f"zk2kafka sync --execute --group {old} --map-group '{rule}'"
    written = paste_lines(shell, diff, review, execute)
    assert written.returncode == 0, written.stdout + written.stderr
    assert {k: v[0] for k, v in kafka_offsets(kafka_admin, [new])[new].items()} == {(topic, 0): 10, (topic, 1): 20}

    # The old consumer committed on since: the rolling switch, pasted, mirrors it into the new group (over the
    # migrate run's own value), never into the old name.
    zk.set(f"/consumers/{old}/offsets/{topic}/0", b"15")
    syncing = subprocess.Popen(["bash", "-c", f"exec {switch}"], env=shell, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        wait_for("the pasted sync to mirror the change into the new group",
                 lambda: kafka_offsets(kafka_admin, [new])[new][(topic, 0)][0] == 15, timeout=120)
    finally:
        syncing.send_signal(signal.SIGTERM)
        synced, err = syncing.communicate(timeout=120)
    assert syncing.returncode == 0, synced + err
    assert kafka_offsets(kafka_admin, [old]) == {old: {}}

    done = paste(shell, ready)
    assert done.returncode == 0, done.stdout + done.stderr
    # Without the mapping the old name would be what Kafka is asked for, holding nothing: the journal knows the
    # group was moved under its new name, and the gate says the mapping to pass; given as printed, it passes.
    unmapped = paste(shell, "zk2kafka ready-for-kraft --quiet-for 1s")
    assert unmapped.returncode == 2, unmapped.stdout + unmapped.stderr
    assert f"the journal shows moved into Kafka under another name ('{old}' into '{new}' by run " in unmapped.stderr
    flags = unmapped.stderr.split("run it again with ")[1].strip()
    assert flags == f"--map-group {shlex.quote(f'{old}={new}')}", unmapped.stderr
    assert paste(shell, f"zk2kafka ready-for-kraft --quiet-for 1s {flags}").returncode == 0


def test_a_renamed_run_killed_mid_way_is_resumed_under_the_new_name_by_its_journal(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    from support.runs import killed_run

    n = _seed(zk, kafka_admin, cluster, prefix)
    state = tmp_path / "state"
    base = selected(cluster, zk_chroot, state, prefix)
    # A fresh migrate through the mapping, killed -9 once Kafka took its first batch.
    run = killed_run([*base, "--map-group", f"{prefix}legacy-(.*)={prefix}\\1-v2"], "after-kafka-commit", state)
    code, resumed, err = zk2kafka_json("migrate", "--execute", "--resume", run, *base[:-2])   # no mapping given
    assert code == 0, err
    held = kafka_offsets(kafka_admin, [n["old"], n["new"], n["kept"]])
    assert {k: v[0] for k, v in held[n["new"]].items()} == {(n["topic"], 0): 10, (n["topic"], 1): 20}
    assert {k: v[0] for k, v in held[n["kept"]].items()} == {(n["topic"], 0): 5}
    assert held[n["old"]] == {(n["topic"], 1): (99, "")}
    code, status, err = zk2kafka_json("status", run, "--state-dir", str(state))
    assert code == 0 and status["state"] == "done", (err, status)
    assert status["renamed"] == {n["old"]: n["new"]}   # the journal says both names


def test_sync_mirrors_an_old_group_into_its_new_name_until_a_new_consumer_takes_the_new_group_over(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    old, new = f"{prefix}legacy-billing", f"{prefix}billing-v2"
    other, other_new = f"{prefix}legacy-audit", f"{prefix}audit-v2"   # mirrored on: the pass that reads it
    rule = f"{prefix}legacy-(.*)={prefix}\\1-v2"
    put(zk, f"/consumers/{old}/offsets/{topic}/0", b"10")
    put(zk, f"/consumers/{other}/offsets/{topic}/0", b"5")
    # Under the old name Kafka holds a value of its own, which sync neither reads nor writes.
    kafka_admin.alter_group_offsets(old, {TopicPartition(topic, 0): OffsetAndMetadata(99, "", -1)})

    def held(group):
        return kafka_offsets(kafka_admin, [group])[group].get((topic, 0), (None, None))

    log, address = tmp_path / "sync.log", f"127.0.0.1:{free_port()}"
    state = tmp_path / "state"
    consumer = None
    with open(log, "w") as err:
        # Two follower processes: each admits every group listed, journals the renames, and follows its own.
        sync = start_sync(zk_chroot, cluster.bootstrap_server, prefix, state, address, err, "--map-group", rule,
                          "--writers", "2")
        try:
            wait_for("sync to mirror the old groups into their new names",
                     lambda: held(new)[0] == 10 and held(other_new)[0] == 5, timeout=60)
            assert held(new)[1].startswith("zk2kafka sync ")
            zk.set(f"/consumers/{old}/offsets/{topic}/0", b"40")   # the old consumer commits on
            wait_for("sync to mirror the old consumer's commit", lambda: held(new)[0] == 40)

            # The new application joins the new group: sync leaves it alone, named old -> new.
            consumer = joined(cluster.bootstrap_server, new, topic)
            samples = scraped_when("the new group stopped, by its members", address, lambda s: sample(
                s, "zk2kafka_sync_group_state", group=f"{old} -> {new}", state="stopped") == 1)
            assert sample(samples, "zk2kafka_sync_groups_stopped", reason="kafka_members") == 1
            # The old consumer's next commit is not written: the other group's, written after it, is (one
            # ZooKeeper session tells the watches in order), while the new group keeps 40.
            zk.set(f"/consumers/{old}/offsets/{topic}/0", b"70")
            zk.set(f"/consumers/{other}/offsets/{topic}/0", b"8")
            wait_for("sync to mirror the other group's change", lambda: held(other_new)[0] == 8)
            assert held(new)[0] == 40
        finally:
            if consumer is not None:
                consumer.close()   # leaves the group, committing nothing
            stop_sync(sync, log)
    assert held(old) == (99, "")
    said = log.read_text()
    assert f"group {old} -> {new} is no longer synced: Kafka group '{new}' is Stable" in said
    assert f"{old} -> {new}" in said and f"{other} -> {other_new}" in said, said[-3000:]

    # The run's journal keeps both names: status and rollback need no flag.
    with Journal.open(state) as journal:
        (run,) = journal.runs()
    assert run.kind == "sync" and run.to_json()["renamed"] == {old: new, other: other_new}
    # sync-status.json names the groups by their ZooKeeper names, and says which Kafka group each went to.
    synced = json.loads((state / "reports" / run.run_id / "sync-status.json").read_text())
    assert synced["groups_renamed"] == {old: new, other: other_new}
    assert old in synced["groups_stopped"] and other in synced["groups_synced"]
    code, status, err = zk2kafka_json("status", run.run_id, "--state-dir", str(state))
    assert code == 0 and status["renamed"] == {old: new, other: other_new}, err
    code, rolled, err = zk2kafka_json("rollback", run.run_id, "--execute", "--bootstrap-server",
                                      cluster.bootstrap_server, "--state-dir", str(state))
    assert code == 0, (err, rolled)
    # Kafka held nothing for the new groups before sync: nothing again; the old name's value untouched.
    assert held(new) == (None, None) and held(other_new) == (None, None)
    assert held(old) == (99, "")
