"""docker/monitoring/'s alert rules in Debian's real Prometheus, on loopback, scraping a real
`zk2kafka sync --execute` every 2 seconds: each situation the rules are for is made for real and its
alert is seen going pending or firing through Prometheus's HTTP API; a switch pages nothing, and
every query of the dashboard returns series.

sync follows a ZooKeeper of the test's own (the one it stops), and the sandbox's Kafka. The rules
run with `for:` windows of 2 seconds (support/prometheus.py `with_short_for`), so each alert goes
through pending to firing in seconds; their real windows are promtool's to test
(tests/unit/test_alert_rules.py). With ZK2KAFKA_SCREENSHOT=PATH, headless Chromium also takes a
picture of Prometheus's graph page with the dashboard's queries (docs/sync-watching.png).
"""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from contextlib import ExitStack
from pathlib import Path

import pytest
from kafka import TopicPartition
from kafka.protocol.old.commit import OffsetCommitRequest, OffsetCommitResponse
from kafka.structs import OffsetAndMetadata

from migrate.kafka import compat
from migrate.sync.follower_shards import shard_of

from support.consumers import Member, joined
from support.offset_commit_v0 import OffsetCommitV0
from support.prometheus import MONITORING, Prometheus, rules, with_short_for
from support.seeding import kafka_offsets, make_topic, put
from support.source_zookeeper import SourceZooKeeper, client
from support.sync_process import scraped_when, start_sync, stop_sync, value
from support.wait import free_port, wait_for

pytestmark = pytest.mark.integration

DAY = 86400
# Coordinator not available, not the coordinator, loading: the first group call of a topic's life.
NOT_YET = {14, 15, 16}


class OffsetCommitV1(OffsetCommitV0):
    """OffsetCommit v1, which sets each partition's commit timestamp: Kafka keeps it in the commit
    record, and goes by it for the offset's expiry (a group without a protocol type)."""

    def commit_at(self, group: str, offsets: dict[tuple[str, int], int],
                  timestamp_ms: int) -> dict[tuple[str, int], int]:
        topics: dict[str, list] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append((partition, offset, timestamp_ms, ""))
        request = OffsetCommitRequest[1](group_id=group, generation_id_or_member_epoch=-1,
                                         member_id="", topics=list(topics.items()))
        request.with_header(correlation_id=next(self.correlation), client_id=self.client_id)
        self.sock.sendall(request.encode(header=True, framed=True))
        size = int.from_bytes(self._read(4), "big")
        answer = OffsetCommitResponse[1].decode(self._read(size), header=True)
        return {(name, p): error for name, partitions in answer.topics for p, error in partitions}


def retention_minutes(admin) -> int:
    features = compat.BrokerFeatures.of(admin)
    broker = compat.describe_cluster(admin, features).brokers[0]
    return int(compat.broker_setting(admin, features, broker, "offsets.retention.minutes").value)


def firing_now(prometheus: Prometheus) -> set[tuple[str, str]]:
    """(alert, its group or reason) of every alert pending or firing."""
    return {(a["labels"]["alertname"], a["labels"].get("group") or a["labels"].get("reason", ""))
            for a in prometheus.alerts()}


def screenshot(prometheus: Prometheus, path: Path, queries: list[str]) -> None:
    """Prometheus's graph page with `queries`, one panel each, over the last 40 seconds (Debian's
    Prometheus serves its classic page: its /graph redirects there without the queries)."""
    params = {}
    for i, expr in enumerate(queries):
        params.update({f"g{i}.expr": expr, f"g{i}.tab": "0", f"g{i}.range_input": "40s"})
    url = f"http://{prometheus.address}/classic/graph?" + urllib.parse.urlencode(params)
    browser = shutil.which("chromium")
    assert browser, "chromium is not installed (apt-get install chromium)"
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars",
             f"--window-size=1000,{140 + 720 * len(queries)}", "--force-device-scale-factor=0.6",
             "--virtual-time-budget=20000",
             f"--screenshot={path}", url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and path.exists(), done.stderr[-2000:]


def test_each_situation_takes_its_alert_to_firing_in_a_real_prometheus(
        cluster, kafka_admin, prefix, tmp_path):
    bootstrap = cluster.bootstrap_server
    topic = f"{prefix}orders"
    make_topic(kafka_admin, bootstrap, topic, 2, 100)
    with ExitStack() as cleanup:   # every server and client this test starts, stopped at its end
        source = SourceZooKeeper(tmp_path / "zk", "3.9.2")
        cleanup.callback(source.stop)
        connect = source.start()
        zk = client(connect, timeout=30)
        cleanup.callback(zk.close)
        cleanup.callback(zk.stop)
        address = f"127.0.0.1:{free_port()}"
        prometheus = Prometheus(tmp_path / "prometheus", [address], with_short_for(rules(), 2))
        cleanup.callback(prometheus.stop)
        follow(zk, connect, bootstrap, kafka_admin, topic, prefix, address, prometheus, source,
               tmp_path, cleanup)
        # sync gone: Prometheus says so.
        prometheus.wait_alert("ZK2KafkaSyncDown", ("firing",), job="zk2kafka-sync")


def follow(zk, connect, bootstrap, kafka_admin, topic, prefix, address, prometheus, source,
           tmp_path, cleanup) -> None:
    """The situations, each with its alert, while sync follows; sync stopped at the end."""
    switched, taken, idle, busy = (f"{prefix}{name}" for name in
                                   ("switched", "taken", "idle", "busy"))
    for group in (switched, taken, idle, busy):
        if group != idle:   # idle's old consumers are gone: ready as soon as sync has read it
            put(zk, f"/consumers/{group}/ids/{group}_old-1", b'{"version":1}')
        for p in range(2):
            put(zk, f"/consumers/{group}/offsets/{topic}/{p}", b"10")
    # idle's offsets went into Kafka six and a half days ago: the broker deletes them within a day
    # (its retention is offsets.retention.minutes from that commit: idle has no protocol type).
    minutes = retention_minutes(kafka_admin)
    committed_ms = int((time.time() - minutes * 60 + DAY / 2) * 1000)
    v1 = OffsetCommitV1(bootstrap)
    try:
        errors = wait_for("idle's offsets committed", lambda: (
            lambda e: e if not set(e.values()) & NOT_YET else None)(
            v1.commit_at(idle, {(topic, 0): 10, (topic, 1): 10}, committed_ms)))
    finally:
        v1.close()
    assert set(errors.values()) == {0}, errors

    log = tmp_path / "sync.log"
    member = None
    err = cleanup.enter_context(log.open("w"))
    sync = start_sync(connect, bootstrap, prefix, tmp_path / "state", address, err)
    cleanup.callback(lambda: sync.poll() is None and sync.kill())   # stop_sync failed
    try:
        # A group ready and left unswitched, whose offsets Kafka deletes within a day.
        prometheus.wait_alert("ZK2KafkaOffsetsExpireWithinDay", ("firing",), timeout=120, group=idle)
        prometheus.wait_alert("ZK2KafkaGroupReadyNotSwitched", ("firing",), group=idle)
        [expiry] = prometheus.query(
            f'zk2kafka_sync_group_offsets_expire_timestamp_seconds{{group="{idle}"}}')
        assert float(expiry["value"][1]) == pytest.approx(committed_ms / 1000 + minutes * 60,
                                                          abs=1)

        # A takeover: a value zk2kafka did not write lands in Kafka while ZooKeeper moves on.
        wait_for("taken mirrored", lambda: kafka_offsets(kafka_admin, [taken])[taken].get(
            (topic, 0), (None,))[0] == 10)
        kafka_admin.alter_group_offsets(taken, {TopicPartition(topic, 0): OffsetAndMetadata(
            500, "", -1)})
        zk.set(f"/consumers/{taken}/offsets/{topic}/0", b"20")
        stopped = wait_for("a takeover alert", lambda: [
            a for a in prometheus.alerts() if a["labels"]["alertname"] == "ZK2KafkaGroupsStopped"
            and a["state"] == "firing"], timeout=60)
        # The reason as sync names it: a foreign value (taken_over, or differs where nothing shows
        # a new consumer committed it).
        assert {a["labels"]["reason"] for a in stopped} <= {"taken_over", "differs"}, stopped

        # A switch: the old consumer leaves, the new one joins. Nothing pages for it.
        zk.set(f"/consumers/{busy}/offsets/{topic}/1", b"30")   # and busy keeps mirroring
        zk.delete(f"/consumers/{switched}/ids/{switched}_old-1")
        member = Member(bootstrap, topic, switched)
        member.start()
        wait_for("the switch counted", lambda: [
            r for r in prometheus.query(
                'zk2kafka:sync_groups_stopped:by_reason{reason="kafka_members"} == 1')], timeout=60)
        wait_for("busy mirrored", lambda: kafka_offsets(kafka_admin, [busy])[busy].get(
            (topic, 1), (None,))[0] == 30)
        wait_for("no lag left", lambda: [r for r in prometheus.query(
            "zk2kafka:sync_lag_partitions:sum == 0")])
        # Every query of the dashboard returns series from this Prometheus.
        board = runpy.run_path(str(MONITORING / "render.py"))
        empty = [q for q in board["queries"]() if not prometheus.query(q)]
        assert not empty, f"dashboard queries that return no series: {empty}"
        # Every alert now is one of the situations made above: the switch paged nothing, nor did
        # the groups still mirrored (no lag, no error, both stores answering).
        reasons = {a["labels"]["reason"] for a in stopped}
        expected = {("ZK2KafkaOffsetsExpireWithinDay", idle), ("ZK2KafkaGroupReadyNotSwitched", idle)}
        expected |= {("ZK2KafkaGroupsStopped", reason) for reason in reasons}
        # (The switched group's ready alert resolves an evaluation after it stops.)
        wait_for(f"only {sorted(expected)} pending or firing",
                 lambda: firing_now(prometheus) == expected, timeout=30)
        if os.environ.get("ZK2KAFKA_SCREENSHOT"):
            # Groups by state, ready against switched, lag, stopped groups by reason.
            queries = [e for _, targets, _ in board["SERIES"][:4] for e, _ in targets]
            screenshot(prometheus, Path(os.environ["ZK2KAFKA_SCREENSHOT"]),
                       [q for q in queries if "lag_offsets" not in q])

        # ZooKeeper stopped: its alert fires; started again on the same port, it resolves.
        port = int(connect.rpartition(":")[2])
        source.stop()
        prometheus.wait_alert("ZK2KafkaZooKeeperUnreachable", ("firing",), check="zookeeper")
        source.start(clientPort=port)
        wait_for("ZooKeeper's alert resolved", lambda: prometheus.alert(
            "ZK2KafkaZooKeeperUnreachable") is None, timeout=90)
    finally:
        if member is not None:
            member.halt.set()
            member.join(timeout=30)
        stop_sync(sync, log)


def test_sharded_sync_serves_each_groups_retention_clock_by_its_own_rule(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    """--writers 2, one group a shard: an Empty consumer group (its consumer joined and left)
    expires all at once a retention after it became Empty, whatever sync commits into it; a
    group only sync commits to expires a retention after sync's commit."""
    bootstrap = cluster.bootstrap_server
    topic = f"{prefix}orders"
    make_topic(kafka_admin, bootstrap, topic, 1, 100)
    emptied = f"{prefix}emptied"
    plain = next(g for g in (f"{prefix}plain{i}" for i in range(100))
                 if shard_of(g, 2) != shard_of(emptied, 2))
    for group in (emptied, plain):
        put(zk, f"/consumers/{group}/offsets/{topic}/0", b"10")   # no old consumer left
    consumer = joined(bootstrap, emptied, topic)
    consumer.close()
    left = time.time()
    minutes = retention_minutes(kafka_admin)
    address = f"127.0.0.1:{free_port()}"
    log = tmp_path / "sync.log"
    with log.open("w") as err:
        sync = start_sync(zk_chroot, bootstrap, prefix, tmp_path / "state", address, err,
                          "--writers", "2")
        try:
            series = "zk2kafka_sync_group_offsets_expire_timestamp_seconds"
            samples = scraped_when("both groups' clocks read", address, lambda s: value(
                s, series, group=emptied) and value(s, series, group=plain), timeout=90)
            mirrored = time.time()
        finally:
            stop_sync(sync, log)
    assert value(samples, "zk2kafka_sync_groups", state="ready") == 2
    assert kafka_offsets(kafka_admin, [plain])[plain][(topic, 0)][0] == 10
    # The Empty clock started when the consumer left, before sync committed anything.
    assert left - 5 <= value(samples, series, group=emptied) - minutes * 60 <= left + 1
    # The commit clock, from sync's own commit.
    assert left <= value(samples, series, group=plain) - minutes * 60 <= mirrored
    assert value(samples, "zk2kafka_sync_groups_expiry_unknown") == 0
    assert value(samples, "zk2kafka_sync_dry_run") == 0   # --execute, in each shard
    assert value(samples, "zk2kafka_sync_expiry_reads_total", result="ok") >= 2   # a read a shard
    for check in ("zookeeper", "kafka", "rescan"):
        assert value(samples, "zk2kafka_sync_health_check_ok", check=check) == 1
