"""The retention preflight against the real broker: a consumer group that went Empty loses all its offsets
offsets.retention.minutes after it became Empty (Kafka 2.1+, KIP-211), whatever is committed since. The
retention preflight names it, with its window and the time left (from when the broker says it became Empty);
the report shows it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from migrate import cli

from support.seeding import make_topic, put


def test_case4_empty_consumer_group_is_named_in_the_retention_preflight(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                      tmp_path, capsys):
    topic = f"{prefix}orders"
    went_empty, standalone = f"{prefix}went-empty", f"{prefix}standalone"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 20)
    for p in range(2):
        put(zk, f"/consumers/{went_empty}/offsets/{topic}/{p}", b"15")
        put(zk, f"/consumers/{standalone}/offsets/{topic}/{p}", b"12")
    # A real consumer group: joins (protocol type "consumer"), commits, leaves: Empty with a protocol type.
    consumer = KafkaConsumer(group_id=went_empty, bootstrap_servers=cluster.bootstrap_server,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    deadline = time.monotonic() + 60
    while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:   # else nothing is assigned
        time.sleep(0.2)
    consumer.subscribe([topic])
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=500)
    assert consumer.assignment(), "the consumer never joined its group"
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(5, "", -1)})
    consumer.close()
    # A group only ever committed to from outside: no protocol type, expiry by commit time (renewable).
    kafka_admin.alter_group_offsets(standalone, {TopicPartition(topic, 0): OffsetAndMetadata(3, "", -1)})
    described = kafka_admin.describe_groups([went_empty, standalone])
    assert (described[went_empty]["group_state"], described[went_empty]["protocol_type"]) == ("Empty", "consumer")
    assert described[standalone]["protocol_type"] == ""

    code = cli.main(["diff", "--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
                     "--state-dir", str(tmp_path), "--group", f"{prefix}.*", "-q"])
    out = capsys.readouterr().out
    assert code == 3, out   # both groups hold a different offset on partition 0: CONFLICT
    report = Path(out.strip().splitlines()[-1].split(" report=")[1])
    summary = json.loads((report / "summary.json").read_text())
    retention = summary["retention"]

    named = {g["group"]: g for g in retention.get("empty_consumer_groups", [])}
    assert list(named) == [went_empty], f"Empty consumer groups named: {list(named)}; retention: {retention}"
    entry = named[went_empty]
    assert entry["protocol_type"] == "consumer" and entry["expires_within_minutes"] == retention["minutes"] == 10080
    # The broker says when the group became Empty (its record in __consumer_offsets): a moment ago, so nearly
    # the whole window is left.
    assert entry["time_left_unknown"] is None, entry
    assert 10080 * 60 - 600 < entry["time_left_seconds"] <= 10080 * 60
    warning = next(w for w in summary["warnings"] if went_empty in w and "became Empty" in w)
    assert f"Time left: {went_empty} 7.0 day(s)" in warning or f"Time left: {went_empty} 6.9 day(s)" in warning
    assert "cannot renew them" in warning and standalone not in warning
    assert any(standalone in w and "after the commit" in w for w in summary["warnings"])   # renewable by sync
    assert summary["kafka"]["broker_version"] == "3.9" and "ApiVersions" in summary["kafka"]["broker_version_source"]
    md = (report / "report.md").read_text()
    assert "## Empty consumer groups: their offsets expire whatever is committed (1)" in md
    assert f"| {went_empty} | consumer |" in md
    assert any(went_empty in w and "became Empty" in w for w in out.splitlines() if w.startswith("warning:"))
