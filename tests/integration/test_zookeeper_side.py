"""ZooKeeper's side of every row is part of the plan: a conflict or range policy never moves an old consumer's
offset in ZooKeeper by itself.

Real ZooKeeper, Kafka and Spark. ZooKeeper holds the old consumers' offsets, Kafka a new consumer's: `--on-conflict
kafka` would set ZooKeeper 80 -> 30 (the old consumers re-read 50 messages), `max` 30 -> 80 (they skip 50), a clamp
10 -> 60. Without --rewrite-zk-offsets those rows are not planned, in either store, and the dry run says so; with it
the plan, the dry run and the reports show the move; with --no-zk-write Kafka alone is written.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
from kafka import TopicPartition
from kafka.structs import OffsetAndMetadata

from support.cli import connection, selected, zk2kafka_json, zk2kafka_text
from support.seeding import kafka_offsets, make_topic, put


def two_ways(cluster, zk, kafka_admin, prefix) -> tuple[str, str, str]:
    """`back`: ZooKeeper 80, Kafka 30 (a new consumer's); `ahead`: ZooKeeper 30, Kafka 80."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    back, ahead = f"{prefix}back", f"{prefix}ahead"
    put(zk, f"/consumers/{back}/offsets/{topic}/0", b"80")
    put(zk, f"/consumers/{ahead}/offsets/{topic}/0", b"30")
    kafka_admin.alter_group_offsets(back, {TopicPartition(topic, 0): OffsetAndMetadata(30, "app", -1)})
    kafka_admin.alter_group_offsets(ahead, {TopicPartition(topic, 0): OffsetAndMetadata(80, "app", -1)})
    return topic, back, ahead


def rows_of(report: str) -> dict[str, dict]:
    return {r["group"]: r for r in pq.read_table(Path(report, "plan.parquet")).to_pylist()}


def test_a_conflict_policy_alone_moves_no_old_consumer_in_zookeeper(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                   tmp_path, capsys):
    topic, back, ahead = two_ways(cluster, zk, kafka_admin, prefix)
    args = connection(cluster, zk_chroot, tmp_path)
    for policy, group, zk_value, kafka_value, way in (("kafka", back, 80, 30, "backwards"),
                                                     ("max", ahead, 30, 80, "forwards")):
        code, out, _ = zk2kafka_text("migrate", *args, "--group", group, "--on-conflict", policy)
        assert code == 3, out
        assert "planned: commit 0 offsets in 0 groups" in out
        assert ("not planned: 1 row(s) would set an old consumer's ZooKeeper offset away from its own (the reason "
                "says which way); --rewrite-zk-offsets writes them there too, --no-zk-write commits them to Kafka "
                "alone") in out
        assert (f"would set ZooKeeper's offset {zk_value} -> {kafka_value} ({way}), away from the old consumer's "
                "own: not planned") in out
        code, done, err = zk2kafka_json("migrate", *args, "--group", group, "--on-conflict", policy, "--execute")
        assert code == 3, err   # nothing to commit; the blocker left alone
        row = rows_of(done["report"])[group]
        assert (row["action"], row["planned_offset"], row["zk_change"], row["zk_planned"]) == (
            "skip", None, "blocked", kafka_value)
        # Neither store moved.
        assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == str(zk_value).encode()
        assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[1].version == 0
        assert kafka_offsets(kafka_admin, [group])[group] == {(topic, 0): (kafka_value, "app")}


def test_rewrite_zk_offsets_shows_the_move_everywhere_then_writes_it(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                    tmp_path, capsys):
    topic, back, _ = two_ways(cluster, zk, kafka_admin, prefix)
    args = [*connection(cluster, zk_chroot, tmp_path), "--group", back, "--on-conflict", "kafka"]
    code, dry, _ = zk2kafka_json("migrate", *args, "--rewrite-zk-offsets")
    assert code == 3 and dry["zk_changes"] == {"forward": 0, "backward": 1, "blocked": 0}
    assert dry["policies"]["rewrite_zk_offsets"] is True
    report = Path(dry["report"])
    row = rows_of(dry["report"])[back]
    assert (row["planned_offset"], row["zk_change"], row["zk_planned"]) == (30, "backward", 30)
    assert row["reason"].endswith("; ZooKeeper 80 -> 30 (backwards, --rewrite-zk-offsets)")
    md, page = (report / "report.md").read_text(), (report / "report.html").read_text()
    for text in (md, page):
        assert "ZooKeeper: 0 row(s) set forwards, 1 backwards (--rewrite-zk-offsets)" in text
        assert "set 80 -&gt; 30 (backwards)" in text
    (line,) = [r for r in csv.DictReader((report / "rows.csv").open()) if r["group"] == back]
    assert (line["zk_offset"], line["planned_offset"], line["zk_change"], line["zk_planned"]) == (
        "80", "30", "backward", "30")
    code, out, _ = zk2kafka_text("migrate", *args, "--rewrite-zk-offsets")
    assert "ZooKeeper: 0 row(s) set forwards, 1 backwards (--rewrite-zk-offsets)" in out
    assert "not planned:" not in out and "nothing was written" in out
    assert zk.get(f"/consumers/{back}/offsets/{topic}/0")[0] == b"80"

    # The reviewed plan carries the flag as a policy: executed without it, it is refused.
    code, diffed, _ = zk2kafka_json("diff", *args, "--rewrite-zk-offsets")
    assert code == 3
    code, _, err = zk2kafka_json("migrate", *args, "--execute", "--plan", diffed["plan_id"])
    assert code == 1 and "--rewrite-zk-offsets given in the plan, not given now" in err, err
    assert zk.get(f"/consumers/{back}/offsets/{topic}/0")[0] == b"80"
    code, done, err = zk2kafka_json("migrate", *args, "--rewrite-zk-offsets", "--execute", "--plan", diffed["plan_id"])
    assert code == 3 and done["groups"]["verified"] == 1, err
    assert zk.get(f"/consumers/{back}/offsets/{topic}/0")[0] == b"30"
    assert kafka_offsets(kafka_admin, [back])[back] == {(topic, 0): (30, "app")}   # Kafka held it already


def test_a_clamp_moves_zookeeper_only_with_the_flag_and_no_zk_write_commits_kafka_alone(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path, capsys):
    topic, group = f"{prefix}trimmed", f"{prefix}trimmed-reader"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    kafka_admin.delete_records({TopicPartition(topic, 0): 60})
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"10")
    args = [*selected(cluster, zk_chroot, tmp_path, prefix), "--out-of-range", "clamp"]
    code, done, _ = zk2kafka_json("migrate", *args, "--execute")
    assert code == 3 and (done["groups"]["skipped"], done["groups"]["verified"]) == (1, 0)
    assert done["blocked"] == {group: "BELOW_LOG_START 1; first: BELOW_LOG_START: 10 is below log start 60 (data "
                                      "deleted); would set ZooKeeper's offset 10 -> 60 (forwards), away from the old "
                                      "consumer's own: not planned; --rewrite-zk-offsets writes it there, "
                                      "--no-zk-write commits Kafka alone"}
    assert kafka_offsets(kafka_admin, [group])[group] == {}
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"10"

    code, done, err = zk2kafka_json("migrate", *args, "--no-zk-write", "--execute")
    assert code == 3 and done["groups"]["verified"] == 1, err
    assert kafka_offsets(kafka_admin, [group])[group][(topic, 0)][0] == 60
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"10"   # the old consumer's own offset
    summary = json.loads(Path(done["report"], "summary.json").read_text())
    assert summary["zk_changes"] == {"forward": 0, "backward": 0, "blocked": 0}
    assert re.search(r"ZooKeeper: not written \(--no-zk-write\)", Path(done["report"], "report.md").read_text())
