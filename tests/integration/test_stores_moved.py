"""What the stores changed under a plan: the log moved past a reviewed offset, a topic deleted and created again, a
topic grown with partitions no offset covers, offsets equal in both stores but outside the log.

Real ZooKeeper, Kafka and Spark; `deleteRecords` moves a log start, topics are deleted and created again, partitions
added. The creation of a topic is known from the brokers' own chroot (`/brokers/topics/<topic>`): those tests keep
their offsets there, under their own group prefix.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

from kafka import TopicPartition
from kafka.admin import NewPartitions
from kafka.errors import TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

from migrate.diff import schema as s

from support.cli import connection, zk2kafka_json, zk2kafka_text
from support.runs import plan_rows
from support.seeding import kafka_offsets, make_topic, put


def recreate(admin, bootstrap: str, topic: str, partitions: int, messages: int) -> None:
    """Delete `topic` and create it again (once Kafka finished deleting it), with `messages` new messages."""
    admin.delete_topics([topic])
    deadline = time.monotonic() + 60
    while True:
        try:
            make_topic(admin, bootstrap, topic, partitions, messages)
            return
        except TopicAlreadyExistsError:   # still being deleted
            assert time.monotonic() < deadline, f"{topic} was never deleted"
            time.sleep(0.3)


def test_a_reviewed_plan_writes_no_offset_the_log_start_passed_since(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                     tmp_path, capsys):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    low, also_low, fine = f"{prefix}low", f"{prefix}also-low", f"{prefix}fine"
    for group, offset in ((low, b"10"), (also_low, b"20"), (fine, b"70")):
        put(zk, f"/consumers/{group}/offsets/{topic}/0", offset)
    args = [*connection(cluster, zk_chroot, tmp_path), "--group", f"{prefix}.*"]
    code, diffed, err = zk2kafka_json("diff", *args)
    assert code == 0 and diffed["counts"][s.MIGRATE] == 3, err
    kafka_admin.delete_records({TopicPartition(topic, 0): 50})   # retention since the review

    code, dry, err = zk2kafka_json("migrate", *args, "--plan", diffed["plan_id"])
    assert code == 3, err
    assert set(dry["moved"]) == {low, also_low} and set(dry["would_write"]) == {fine}
    assert dry["moved"][low] == (f"Kafka's log moved since the plan: {topic}-0: 10 is below the log start 50 now "
                                 "(was 0: retention or deleteRecords)")

    code, out, err = zk2kafka_text("migrate", *args, "--execute", "--plan", diffed["plan_id"])
    assert code == 1, out + err   # not done: two groups moved since the review
    run = out.strip().splitlines()[-1].split()[0].removeprefix("run=")
    assert kafka_offsets(kafka_admin, [low, also_low, fine]) == {
        low: {}, also_low: {}, fine: {(topic, 0): (70, f"zk2kafka migrate {run}")}}
    assert zk.get(f"/consumers/{low}/offsets/{topic}/0")[1].version == 0
    assert f"failed: {low}: Kafka's log moved since the plan: {topic}-0: 10 is below the log start 50 now" in out
    assert f"moved since the review of {diffed['plan_id']}: 2 group(s), not written" in out
    where = " " + " ".join(connection(cluster, zk_chroot, tmp_path))   # the location flags given, repeated
    assert f"`PLAN=$(zk2kafka diff{where} --group {also_low} --group {low} --json | jq -r .plan_id)`" in out


def test_equal_offsets_below_the_log_start_are_not_verified_in_sync(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                    tmp_path, capsys):
    topic, group = f"{prefix}trimmed", f"{prefix}reader"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"10")
    kafka_admin.alter_group_offsets(group, {TopicPartition(topic, 0): OffsetAndMetadata(10, "", -1)})
    args = [*connection(cluster, zk_chroot, tmp_path), "--group", group]
    code, out, _ = zk2kafka_text("verify", *args)
    assert code == 0 and "verified: every selected offset is IN_SYNC" in out
    kafka_admin.delete_records({TopicPartition(topic, 0): 60})

    code, out, _ = zk2kafka_text("verify", *args)
    assert code == 3, out
    assert "IN_SYNC" not in out.split("mismatch")[1] and "every selected offset is IN_SYNC" not in out
    assert "verify: 0 of 1 ZooKeeper offsets equal Kafka's" in out and "BELOW_LOG_START            1" in out
    code, diffed, _ = zk2kafka_json("diff", *args)
    row = plan_rows(diffed["report"])[(group, topic, 0)]
    assert (code, row["status"], row["action"]) == (3, s.BELOW_LOG_START, "skip")
    assert row["reason"].startswith("10 is below log start 60 (data deleted); Kafka has 10")


def test_an_offset_older_than_its_topic_is_topic_recreated(cluster, broker_zk, kafka_admin, prefix, tmp_path,
                                                           capsys):
    topic, stale, fresh = f"{prefix}events", f"{prefix}stale", f"{prefix}fresh"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    put(broker_zk, f"/consumers/{stale}/offsets/{topic}/0", b"40")   # its last commit, then the topic goes
    recreate(kafka_admin, cluster.bootstrap_server, topic, 1, 300)
    put(broker_zk, f"/consumers/{fresh}/offsets/{topic}/0", b"40")   # a commit on the new topic
    written = broker_zk.exists(f"/consumers/{stale}/offsets/{topic}/0").mtime
    created = broker_zk.exists(f"/brokers/topics/{topic}").ctime
    assert written < created

    args = ["--zookeeper", cluster.zookeeper, "--bootstrap-server", cluster.bootstrap_server,
            "--state-dir", str(tmp_path), "--group", f"{prefix}.*"]
    code, out, _ = zk2kafka_text("diff", *args)
    assert code == 3, out
    assert "TOPIC_RECREATED            1  blocker" in out
    report = out.strip().splitlines()[-1].split(" report=")[1]
    rows = plan_rows(report)
    row, other = rows[(stale, topic, 0)], rows[(fresh, topic, 0)]
    assert (row["status"], row["action"], other["status"]) == (s.TOPIC_RECREATED, "skip", s.MIGRATE)
    shown = [time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000)) for ms in (written, created)]
    assert row["reason"] == (f"ZooKeeper's offset 40 was last written {shown[0]}, before topic {topic} was "
                             f"created {shown[1]}: it counts messages of a topic deleted since")
    md = Path(report, "report.md").read_text()
    assert f"| {stale} | {topic} | 0 | `TOPIC_RECREATED` | ZooKeeper's offset 40 was last written {shown[0]}" in md
    assert json.loads(Path(report, "summary.json").read_text())["blocker_counts"] == {s.TOPIC_RECREATED: 1}


def test_a_reviewed_plan_writes_nothing_to_a_topic_created_again(cluster, broker_zk, kafka_admin, prefix, tmp_path,
                                                                 capsys):
    topic, group = f"{prefix}orders", f"{prefix}reader"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    put(broker_zk, f"/consumers/{group}/offsets/{topic}/0", b"60")
    args = ["--zookeeper", cluster.zookeeper, "--bootstrap-server", cluster.bootstrap_server,
            "--state-dir", str(tmp_path), "--group", group]
    code, diffed, err = zk2kafka_json("diff", *args)
    assert code == 0 and diffed["counts"][s.MIGRATE] == 1, err
    recreate(kafka_admin, cluster.bootstrap_server, topic, 1, 100)   # the same log bounds, another topic

    code, out, err = zk2kafka_text("migrate", *args, "--execute", "--plan", diffed["plan_id"])
    assert code == 1, out + err
    assert f"failed: {group}: Kafka's log moved since the plan: topic {topic} was created again since the plan" in out
    assert kafka_offsets(kafka_admin, [group]) == {group: {}}
    assert broker_zk.get(f"/consumers/{group}/offsets/{topic}/0")[1].version == 0


def test_partitions_no_offset_covers_are_listed_with_what_a_new_consumer_does(cluster, zk, zk_chroot, kafka_admin,
                                                                            prefix, tmp_path, capsys):
    topic, group = f"{prefix}grown", f"{prefix}reader"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 30)
    for p in range(2):
        put(zk, f"/consumers/{group}/offsets/{topic}/{p}", b"30")
    kafka_admin.create_partitions({topic: NewPartitions(4)})   # grown after the old consumers stopped
    make_topic_messages(cluster.bootstrap_server, topic, {2: 300, 3: 5})

    code, out, _ = zk2kafka_text("diff", *connection(cluster, zk_chroot, tmp_path), "--group", group)
    assert code == 0, out
    assert ("no offset anywhere: 2 partition(s) of the topics of 1 group(s) (305 message(s) in their logs): a new "
            "consumer of the group starts there by its auto.offset.reset: earliest reads them; latest skips them; "
            "none fails to start") in out
    report = Path(out.strip().splitlines()[-1].split(" report=")[1])
    assert f"no_offset: {report / 'no-offset.csv'}" in out
    assert list(csv.reader((report / "no-offset.csv").open())) == [
        ["group", "topic", "partition", "log_start", "log_end"], [group, topic, "2", "0", "300"],
        [group, topic, "3", "0", "5"]]
    summary = json.loads((report / "summary.json").read_text())
    assert summary["no_offset"]["per_group"] == [{"group": group, "topic": topic, "partitions": [2, 3],
                                                  "messages": 305}]
    assert f"| {group} | {topic} | 2, 3 | 305 |" in (report / "report.md").read_text()


def make_topic_messages(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for partition, n in counts.items():
        for i in range(n):
            producer.send(topic, value=f"{partition}-{i}".encode(), partition=partition)
    producer.flush()
    producer.close()
