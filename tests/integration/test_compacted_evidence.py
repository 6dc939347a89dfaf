"""The cleaner's work on `__consumer_offsets` never turns into a claim: a new consumer joins a group after the old
consumers' last write to ZooKeeper, commits and leaves. Before the log is cleaned its records show the member, and
the gate, the diff and sync take the group over, each keeping the member's commit in its state dir. Once the
cleaner has run, the group's Empty record has superseded the one that showed the member, and its commit has no
record of the group before it:
- with a state dir where the gate, the diff or sync saw it, each of them shows the commit as the member's, seen
  before the log was cleaned: taken over;
- with a state dir that saw nothing, they say that the group's earlier records were compacted away and whether a
  consumer had joined is not shown, never "no consumer had joined": the group differs and blocks.

Its own sandbox: one partition of `__consumer_offsets`, small segments and a cleaner that compacts in seconds
(what a busy cluster's does in hours)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient

from migrate.sandbox.cluster import LocalCluster
from support.cli import ROOT, zk2kafka_json
from support.consumers import joined, settled_commit
from support.records import read_groups
from support.seeding import make_topic, put
from support.servers import CACHE_DIR
from support.wait import wait_for

pytestmark = pytest.mark.integration
TOPIC, GROUP, FILLER = "orders", "billing", "filler"
MARGIN = ["--clock-margin", "1s"]
NOT_SHOWN = "with the group's earlier records compacted away"
SEEN_BEFORE = "seen by zk2kafka before __consumer_offsets was cleaned"


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("compacting"), CACHE_DIR, offsets_partitions=1,
                           broker_properties={
                               "offsets.topic.segment.bytes": 65536,   # rolled by the filler's commits
                               "log.cleaner.backoff.ms": 200,
                               "log.cleaner.min.cleanable.ratio": 0.01,
                               "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024})
    endpoints = cluster.start()
    yield endpoints
    cluster.stop()


def gate(endpoints, state: Path) -> tuple[int, dict]:
    code, data, err = zk2kafka_json("ready-for-kraft", "--zookeeper", endpoints.zookeeper, "--bootstrap-server",
                                    endpoints.bootstrap_server, "--state-dir", str(state), "--quiet-for", "1s",
                                    "--group", GROUP, *MARGIN)
    assert data, err
    return code, data


def test_a_takeover_whose_records_were_compacted_away_is_not_shown_and_never_said_to_be_from_outside(
        cleaned, tmp_path):
    admin = KafkaAdminClient(bootstrap_servers=cleaned.bootstrap_server)
    zk = KazooClient(hosts=cleaned.zookeeper)
    zk.start()
    try:
        make_topic(admin, cleaned.bootstrap_server, TOPIC, 1, 100)
        put(zk, f"/consumers/{GROUP}/offsets/{TOPIC}/0", b"60")
        written = zk.get(f"/consumers/{GROUP}/offsets/{TOPIC}/0")[1].mtime / 1000
        wait_for("the 1 s margin to pass after ZooKeeper's write", lambda: time.time() > written + 1.5, 10)
        consumer = joined(cleaned.bootstrap_server, GROUP, TOPIC)   # the new consumer: joins, commits, leaves
        settled_commit(consumer, {TopicPartition(TOPIC, 0): OffsetAndMetadata(80, "", -1)})
        consumer.close()

        # Each command sees the member's commit, and keeps it in its state dir.
        code, before = gate(cleaned, tmp_path / "gate")
        (verdict,) = before["verdicts"]
        assert code == 0 and verdict["taken_over"] == 1 and verdict["ready"], verdict
        counts, code, _ = diff(cleaned, tmp_path / "diff")
        assert (counts, code) == ({"TAKEN_OVER": 1}, 0), counts
        stopped = sync(cleaned, tmp_path / "sync")
        assert stopped.startswith("taken over: ") and "by member" in stopped, stopped

        def compacted() -> bool:
            # Commits of another group roll the segments; the cleaner then removes what later records superseded.
            admin.alter_group_offsets(FILLER, {TopicPartition(TOPIC, 0): OffsetAndMetadata(1, "x" * 4000, -1)})
            groups, why = read_groups(admin, [GROUP])
            commit = groups[GROUP].committed((TOPIC, 0)) if not why else None
            return commit is not None and commit.by.compacted
        wait_for("the cleaner to remove the record that showed the member", compacted, 180, every=0.5)
    finally:
        zk.stop()
        zk.close()
        admin.close()

    # A state dir that saw nothing before the cleaner ran.
    code, after = gate(cleaned, tmp_path / "after")
    (verdict,) = after["verdicts"]
    assert code == 3 and verdict["taken_over"] == 0 and len(verdict["differs"]) == 1, verdict
    (why,) = verdict["differs"]
    assert "ZooKeeper 60, Kafka 80" in why and NOT_SHOWN in why, why
    assert "whether a consumer had joined then is not shown" in why and "no consumer had joined" not in why, why
    counts, code, first = diff(cleaned, tmp_path / "after")
    assert (counts, code) == ({"CONFLICT": 1}, 3) and NOT_SHOWN in first, first
    stopped = sync(cleaned, tmp_path / "after")
    assert stopped.startswith("differs: ") and NOT_SHOWN in stopped, stopped

    # A state dir where a command saw the member's commit: the same record, kept, shows it to each of them.
    code, again = gate(cleaned, tmp_path / "sync")
    (verdict,) = again["verdicts"]
    assert code == 0 and verdict["taken_over"] == 1 and verdict["ready"], verdict
    assert SEEN_BEFORE in json.dumps(again), again
    counts, code, _ = diff(cleaned, tmp_path / "gate")
    assert (counts, code) == ({"TAKEN_OVER": 1}, 0), counts
    stopped = sync(cleaned, tmp_path / "diff")
    assert stopped.startswith("taken over: ") and SEEN_BEFORE in stopped, stopped


def diff(endpoints, state: Path) -> tuple[dict, int, str]:
    """The diff's statuses of the group, its exit code and its first blocker."""
    code, data, err = zk2kafka_json("diff", "--zookeeper", endpoints.zookeeper, "--bootstrap-server",
                                    endpoints.bootstrap_server, "--state-dir", str(state), "--group", GROUP, *MARGIN)
    assert data, err
    (group,) = json.loads(Path(data["files"]["summary"]).read_text())["per_group"]
    return group["counts"], code, group.get("first_blocker") or ""


def sync(endpoints, state: Path) -> str:
    """Why `sync --execute` left the group alone: it never writes over the value."""
    running = subprocess.Popen(
        [sys.executable, "-m", "migrate", "sync", "--execute", "--zookeeper", endpoints.zookeeper,
         "--bootstrap-server", endpoints.bootstrap_server, "--state-dir", str(state), "--group", GROUP,
         "--stop-after", "5m", "--rescan-every", "1s", "--json", "-q", *MARGIN],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        def stopped() -> str | None:
            assert running.poll() is None, running.communicate()[1]
            for status in state.glob("reports/*/sync-status.json"):
                try:
                    return json.loads(status.read_text()).get("groups_stopped", {}).get(GROUP)
                except ValueError:   # written as it is read: the next poll
                    return None
            return None
        why = wait_for("sync to leave the group alone", stopped, 90)
        running.terminate()
        running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
    return why
