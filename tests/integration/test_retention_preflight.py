"""The retention preflight against the real broker: a consumer group that went Empty loses all its offsets
offsets.retention.minutes after it became Empty (Kafka 2.1+, KIP-211), whatever is committed since. The
retention preflight names it, with its window and the time left (from when the broker says it became Empty);
the report shows it."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

from kafka import TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.structs import OffsetAndMetadata

from migrate import cli
from migrate.kafka.compat import BrokerFeatures, describe_cluster

from support.consumers import joined
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
    consumer = joined(cluster.bootstrap_server, went_empty, topic)
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


def _retention_minutes(kafka_admin) -> int:
    """The broker's own offsets.retention.minutes, read with DescribeConfigs."""
    broker = describe_cluster(kafka_admin, BrokerFeatures.of(kafka_admin)).brokers[0]
    configs = kafka_admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, str(broker), ["offsets.retention.minutes"])], config_filter="all")
    return int(configs["broker"][str(broker)]["offsets.retention.minutes"]["value"])


def _at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def test_groups_migrated_and_left_with_no_member_are_named_with_their_expiry(cluster, zk, zk_chroot, kafka_admin,
                                                                             prefix, tmp_path, capsys):
    topic = f"{prefix}orders"
    went_empty, migrated, live = f"{prefix}went-empty", f"{prefix}migrated", f"{prefix}live"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 20)
    for group in (went_empty, migrated, live):
        for p in range(2):
            put(zk, f"/consumers/{group}/offsets/{topic}/{p}", b"15")
    connect = ["--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server, "--state-dir", str(tmp_path)]
    selection = ["--group", f"{prefix}.*"]
    before_commit = time.time()
    assert cli.main(["migrate", "--execute", *connect, *selection, "-q"]) == 0, capsys.readouterr()
    after_commit = time.time()
    # The new consumers: one came and went (Empty, its clock since then), one stays (not named).
    stays = joined(cluster.bootstrap_server, live, topic)
    came = joined(cluster.bootstrap_server, went_empty, topic)
    before_empty = time.time()
    came.close()
    try:
        # The leave may be answered after close() returns: the group is Empty once the broker says so.
        deadline = time.monotonic() + 60
        while (kafka_admin.describe_groups([went_empty])[went_empty]["group_state"] != "Empty"
               and time.monotonic() < deadline):
            time.sleep(0.1)
        after_empty = time.time()
        described = kafka_admin.describe_groups([went_empty, migrated, live])
        assert [described[g]["group_state"] for g in (went_empty, migrated, live)] == ["Empty", "Empty", "Stable"]
        minutes = _retention_minutes(kafka_admin)
        capsys.readouterr()

        # ready-for-kraft: information after the verdict, the exit code the verdict's.
        code = cli.main(["ready-for-kraft", *connect, *selection, "--quiet-for", "1s"])
        out = capsys.readouterr().out
        assert code == 0, out
        summary = json.loads((Path(out.strip().splitlines()[-1].split(" report=")[1]) / "summary.json").read_text())
        expiry = summary["expiry"]
        named = {g["group"]: g for g in expiry["groups"]}
        assert set(named) == {went_empty, migrated}, expiry   # the live group is not named
        assert expiry["effective_minutes"] == minutes and expiry["source"] == "broker"
        gone = named[went_empty]   # all at once, retention after it became Empty, whatever was committed
        assert gone["clock"] == "became Empty" and not gone["renewable"]
        became_empty = _at(gone["expires_at"]) - minutes * 60   # to the second, as the report says it
        assert int(before_empty) <= became_empty <= after_empty, (before_empty, after_empty, gone)
        kept = named[migrated]     # no protocol type: each offset retention after its commit, renewable
        assert kept["clock"] == "commit" and kept["renewable"] and kept["protocol_type"] == ""
        committed = (_at(kept["expires_at"]) - minutes * 60, _at(kept["all_expire_at"]) - minutes * 60)
        assert int(before_commit) <= committed[0] <= committed[1] <= after_commit, (before_commit, after_commit, kept)
        assert expiry["evidence"] == summary["evidence"]["zookeeper"] and Path(expiry["evidence"]).exists()
        lines = out.splitlines()
        assert f"  {went_empty}: at {gone['expires_at']} (" in out and f"  {migrated}: at {kept['expires_at']} (" in out
        assert not any(line.startswith(f"  {live}:") for line in lines)
        where = " " + " ".join(connect)   # the location flags it was given, repeated
        assert any(f"zk2kafka sync{where} --execute --group {migrated} --renew-every" in line for line in lines)
        assert went_empty not in next(line for line in lines if "--renew-every" in line)   # a renewal cannot help it
        report = (Path(out.strip().splitlines()[-1].split(" report=")[1]) / "report.md").read_text()
        assert "## Offsets Kafka expires" in report and f"- {went_empty}: at {gone['expires_at']}" in report

        # The diff: the Empty consumer group with its expiry time, in its text, pages and summary.json.
        code = cli.main(["diff", *connect, *selection, "-q"])
        out = capsys.readouterr().out
        assert code == 0, out
        report = Path(out.strip().splitlines()[-1].split(" report=")[1])
        retention = json.loads((report / "summary.json").read_text())["retention"]
        expiring = {g["group"]: g for g in retention["expiring"]}
        assert set(expiring) == {went_empty, migrated}, retention   # the live group not named
        assert expiring[went_empty]["expires_at"] == gone["expires_at"]
        # Nothing to commit for the migrated group: it goes by the commit that put it there, read from
        # __consumer_offsets as ready-for-kraft reads it.
        assert expiring[migrated]["clock"] == "commit" and expiring[migrated]["unknown"] is None
        assert expiring[migrated]["expires_at"] == kept["expires_at"]
        assert f"  {went_empty}: at {gone['expires_at']} (" in out and "expiry: 2 group(s)" in out
        assert f"  {migrated}: at {kept['expires_at']} (" in out and "; by its last commit)" in out
        assert f"| {went_empty} | consumer | 2 | 0 |" in (report / "report.md").read_text()
        assert gone["expires_at"] in (report / "report.md").read_text()
        assert gone["expires_at"] in (report / "report.html").read_text()
    finally:
        stays.close()
