"""Taken over only on evidence, on the sandbox: ready-for-kraft, the diff and sync say the same of each
value Kafka holds that zk2kafka did not write (migrate/kafka/takeover.py over migrate/kafka/offsets_log/).

The cases, each a group of its own with ZooKeeper's offsets at 5 and 6:
- `outside-low`, `outside-high`: an admin tool committed 1, 1 or 80, 90 after ZooKeeper's last write; no
  consumer ever joined: DIFFERS, blocking;
- `reset`: a canary of the new application joined, committed and left (the group keeps protocol type
  `consumer` while Empty); after the old consumers' last commit to ZooKeeper an admin reset it to the log
  end, with no member in it: DIFFERS (a commit from outside), blocking;
- `canary`: a consumer of the new application joined once, committed and left; the old consumers then
  committed to ZooKeeper after it: DIFFERS, blocking;
- `aborted`: the canary's commit, the old consumers' after it, then an exactly-once application sent
  another offset for the group inside a transaction and aborted it: Kafka holds the canary's value, dated by
  the canary's record (the aborted one is no commit): DIFFERS, blocking;
- `once`: no consumer ever joined; during ready-for-kraft's watch an admin committed the log end, once:
  DIFFERS there ("one commit during the watch"), blocking;
- `renewed`: zk2kafka moved ZooKeeper's values; during the watch it renewed them and, just after, an admin
  committed the log end once: zk2kafka's own commit is no consumer's, so DIFFERS ("one commit"), blocking;
- `txn`: while a member of the group held the partitions, a producer committed the log's 90 inside a
  transaction, after ZooKeeper's last write, without the group's generation (the coordinator takes it): the
  record does not show whose it is: DIFFERS, blocking;
- `static`, `crashed`: a canary committed before the old consumers' last write to ZooKeeper and is gone, a
  static member (group.instance.id) stopped without a LeaveGroup, a member killed with SIGKILL: each still
  holds the partitions of a Stable group for its five-minute session: DIFFERS, naming the member, blocking;
- `switched`: the new consumers joined after the old ones' last commit, committed, and left: taken over;
- `assigning`: a client of no group (as Flink and Spark assign partitions themselves) commits as it reads,
  moving forward, during ready-for-kraft's watch: taken over there; the diff, which watches nothing, and a
  sync that saw its values before it began to watch, keep it as a difference that says so (a sync that saw
  it committing took it over: the last test);
- `live`: a member of the live group is assigned the partitions and commits them: taken over.
Then the same through `--map-group OLD=NEW`, NEW holding the values.

The clocks of ZooKeeper and Kafka are this host's: the tests give `--clock-margin 1s` and wait, on the
znodes' own mtime, until the margin has passed before Kafka commits. What is committed during the watch is
committed by the watch itself (WriteWatch.wait, wrapped): after the watch's mark in __consumer_offsets and
before the gate reads it, whatever the host's speed.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafka import KafkaProducer

from migrate.ready.watch import WriteWatch
from support.cli import ROOT, zk2kafka_json
from support.consumers import REBALANCE_MS, joined, settled_commit
from support.seeding import kafka_offsets, make_topic, put
from support.wait import wait_for

pytestmark = pytest.mark.integration

MARGIN = ["--clock-margin", "1s"]
ZK_OFFSETS = {0: 5, 1: 6}


def write_zk(zk, group: str, topic: str, offsets: dict[int, int]) -> float:
    """The old consumers' commits to ZooKeeper; when the last was written (its mtime, seconds)."""
    written = 0.0
    for p, offset in offsets.items():
        path = f"/consumers/{group}/offsets/{topic}/{p}"
        if zk.exists(path):
            zk.set(path, str(offset).encode())
        else:
            put(zk, path, str(offset).encode())
        written = max(written, zk.get(path)[1].mtime / 1000)
    return written


def past_the_margin(written: float, margin: float = 1.0) -> None:
    """Until this host's clock (both servers' here) is past ZooKeeper's write by more than the margin."""
    wait_for("the clock margin to pass", lambda: time.time() > written + margin + 0.2, 10)


def admin_commit(kafka_admin, group: str, topic: str, offsets: dict[int, int], metadata: str = "") -> None:
    """A commit from outside: generation -1, no member, as kafka-consumer-groups --reset-offsets makes it (or, with
    zk2kafka's metadata, as a migrate, a sync or a renewal does)."""
    kafka_admin.alter_group_offsets(group, {TopicPartition(topic, p): OffsetAndMetadata(o, metadata, -1)
                                            for p, o in offsets.items()})


# A member whose process is gone holds its partitions until its session times out: five minutes here, past the
# end of each test.
SESSION_MS = 300_000
RENEWAL = "zk2kafka migrate 20261205-000000-a1b2c3"   # a run's metadata, as a renewal re-commits it


def static_member_commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """A static member (group.instance.id, KIP-345) joins, commits and stops: it sends no LeaveGroup, so the group
    stays Stable with it holding the partitions until its session times out."""
    consumer = KafkaConsumer(group_id=group, bootstrap_servers=bootstrap, enable_auto_commit=False,
                             group_instance_id=f"{group}-canary", session_timeout_ms=SESSION_MS,
                             max_poll_interval_ms=REBALANCE_MS)
    wait_for("the static member's metadata", lambda: consumer.partitions_for_topic(topic), 60)
    consumer.subscribe([topic])
    wait_for("the static member's assignment", lambda: consumer.poll(timeout_ms=1000) is not None
             and consumer.assignment(), 60)
    settled_commit(consumer, {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
    consumer.close()


CRASHING = """
import sys, time
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import CommitFailedError, RebalanceInProgressError
from kafka.structs import OffsetAndMetadata
bootstrap, group, topic, offset, session = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
consumer = KafkaConsumer(group_id=group, bootstrap_servers=bootstrap, enable_auto_commit=False,
                         session_timeout_ms=session, max_poll_interval_ms=15000)
while not consumer.partitions_for_topic(topic):
    time.sleep(0.2)
consumer.subscribe([topic])
while not consumer.assignment():
    consumer.poll(timeout_ms=3000)
while True:
    try:
        consumer.commit({tp: OffsetAndMetadata(offset, "", -1) for tp in consumer.assignment()})
        break
    except (CommitFailedError, RebalanceInProgressError):   # a rebalance under way: poll, rejoin, commit
        consumer.poll(timeout_ms=3000)
print("committed", flush=True)
sys.stdin.read()
"""


def crashed_member_commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """A consumer joins, commits `offset` of each partition and is killed with SIGKILL: no LeaveGroup, and its
    session (SESSION_MS) has not timed out, so it holds the partitions of a Stable group."""
    process = subprocess.Popen([sys.executable, "-c", CRASHING, bootstrap, group, topic, str(offset), str(SESSION_MS)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([process.stdout], [], [], 180)
        assert ready and process.stdout.readline().strip() == "committed", \
            "timed out after 180s waiting for the crashing consumer to join its group and commit"
    finally:
        process.kill()
        process.wait(30)


def member_commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """A consumer joins the group (protocol type `consumer`), commits and leaves: the group is Empty."""
    consumer = joined(bootstrap, group, topic, rebalance_ms=REBALANCE_MS)
    try:
        settled_commit(consumer, {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
    finally:
        consumer.close()


def transaction_commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """A producer sends `offsets` for `group` inside a transaction without the group's generation (as before
    KIP-447) and commits it: the coordinator takes it even while the group has members."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{group}-txn")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send_offsets_to_transaction({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                                              for p, o in offsets.items()}, group)
        producer.commit_transaction()
    finally:
        producer.close()


def aborted_commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """An exactly-once application sends `offsets` for `group` inside a transaction, then aborts it."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{group}-eos")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send_offsets_to_transaction({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                                              for p, o in offsets.items()}, group)
        producer.abort_transaction()
    finally:
        producer.close()


class Assigning(threading.Thread):
    """A client that assigns itself the partitions and commits as it reads (one message further each time, up to
    the log end), joining no group, until stopped."""

    def __init__(self, bootstrap: str, group: str, topic: str, offsets: dict[int, int], end: int = 100):
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(group_id=group, bootstrap_servers=bootstrap, enable_auto_commit=False)
        self.consumer.assign([TopicPartition(topic, p) for p in offsets])
        self.offsets, self.end, self.halt, self.commits = dict(offsets), end, threading.Event(), 0

    def run(self) -> None:
        while not self.halt.is_set():
            self.consumer.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
                                  for p, o in self.offsets.items()})
            self.offsets = {p: min(o + 1, self.end) for p, o in self.offsets.items()}
            self.commits += 1
            self.halt.wait(0.3)
        self.consumer.close()

    @property
    def topic(self) -> str:
        return next(iter(self.consumer.assignment())).topic

    def stop(self) -> None:
        self.halt.set()
        self.join(30)


def seed(cluster, zk, kafka_admin, prefix: str, names: dict[str, str]) -> tuple[str, Assigning, KafkaConsumer]:
    """The cases of the module docstring; `names`: case -> the Kafka group holding its values (the same name,
    or another under --map-group). Returns the topic, the assigning client (committing) and the live member."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 100)
    bootstrap = cluster.bootstrap_server
    # The canaries commit first, then the old consumers write ZooKeeper after them, past the margin. Two of them
    # still hold the partitions: a static member that stopped, a member killed with SIGKILL.
    for case in ("canary", "reset", "aborted"):
        member_commit(bootstrap, names[case], topic, {0: 100, 1: 100})
    static_member_commit(bootstrap, names["static"], topic, {0: 100, 1: 100})
    crashed_member_commit(bootstrap, names["crashed"], topic, 100)
    past_the_margin(time.time())
    written = max(write_zk(zk, f"{prefix}{case}", topic, ZK_OFFSETS) for case in names)
    past_the_margin(written)
    admin_commit(kafka_admin, names["outside-low"], topic, {0: 1, 1: 1})
    admin_commit(kafka_admin, names["outside-high"], topic, {0: 80, 1: 90})
    admin_commit(kafka_admin, names["reset"], topic, {0: 100, 1: 100})
    aborted_commit(bootstrap, names["aborted"], topic, {0: 80, 1: 80})
    admin_commit(kafka_admin, names["once"], topic, {0: 5, 1: 6})   # as ZooKeeper: the watch's commit moves it
    admin_commit(kafka_admin, names["renewed"], topic, ZK_OFFSETS, RENEWAL)   # zk2kafka moved it
    member_commit(bootstrap, names["switched"], topic, {0: 40, 1: 50})
    held = joined(bootstrap, names["txn"], topic)   # holds the partitions, commits nothing itself
    transaction_commit(bootstrap, names["txn"], topic, {0: 90, 1: 90})
    held.close(autocommit=False)
    live = joined(bootstrap, names["live"], topic)
    settled_commit(live, {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in {0: 60, 1: 70}.items()})
    assigning = Assigning(bootstrap, names["assigning"], topic, {0: 30, 1: 31})
    return topic, assigning, live


CASES = ("outside-low", "outside-high", "reset", "canary", "aborted", "once", "renewed", "txn", "switched",
         "assigning", "live", "static", "crashed")
TAKEN_OVER = {"switched", "assigning", "live"}
BLOCKED = sorted(set(CASES) - TAKEN_OVER)
HOLDING = ("static", "crashed")   # a live group's members hold the partitions: the diff and sync see it live


def during_the_watch(monkeypatch, kafka_admin, topic: str, names: dict[str, str], assigning: Assigning) -> None:
    """What happens while the gate watches: the assigning client commits twice more (moving forward), an admin
    commits `once`'s group to the log end, once, and `renewed`'s too, just after zk2kafka renewed its values there
    (a renewal is no consumer's commit: one commit, not two moving forward). Done by the watch as it begins
    waiting: past its mark in __consumer_offsets, before its read of it."""
    wait = WriteWatch.wait

    def watched(self, seconds):
        seen = assigning.commits
        wait_for("two commits of the assigning client", lambda: assigning.commits >= seen + 2, 30)
        admin_commit(kafka_admin, names["once"], topic, {0: 100, 1: 100})
        admin_commit(kafka_admin, names["renewed"], topic, ZK_OFFSETS, RENEWAL)
        admin_commit(kafka_admin, names["renewed"], topic, {0: 100, 1: 100})
        return wait(self, seconds)
    monkeypatch.setattr(WriteWatch, "wait", watched)


def sync(cluster, zk_chroot, state, *extra, stop_after="5m") -> subprocess.Popen:
    """`zk2kafka sync --execute` as its own process (it installs its own signal handlers); stopped by
    `stopped_then_ended`."""
    return subprocess.Popen(
        [sys.executable, "-m", "migrate", "sync", "--execute", "--zookeeper", zk_chroot, "--bootstrap-server",
         cluster.bootstrap_server, "--state-dir", str(state), "--stop-after", stop_after, "--rescan-every", "1s",
         "--json", "-q", *MARGIN, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})


def stopped_then_ended(process: subprocess.Popen, state, groups: set[str]) -> dict:
    """Once sync's status file lists every one of `groups` as stopped, SIGTERM it; its JSON result."""
    def listed() -> bool:
        assert process.poll() is None, process.communicate()[1]
        for status in state.glob("reports/*/sync-status.json"):
            try:
                return groups <= set(json.loads(status.read_text())["groups_stopped"])
            except (ValueError, KeyError):   # written as it is read: the next poll
                return False
        return False
    try:
        wait_for(f"sync to stop {sorted(groups)}", listed, 90)
        process.terminate()
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    return json.loads(out)


def gate(cluster, zk_chroot, state, prefix, *extra) -> tuple[int, dict]:
    code, data, err = zk2kafka_json("ready-for-kraft", "--zookeeper", zk_chroot, "--bootstrap-server",
                                    cluster.bootstrap_server, "--state-dir", str(state), "--quiet-for", "4s",
                                    *MARGIN, *extra)
    assert data, err
    return code, data


def check_gate(code: int, data: dict, prefix: str) -> None:
    verdicts = {v["group"][len(prefix):]: v for v in data["verdicts"]}
    assert code == 3 and not data["ready"], data["blocking"]
    for case in CASES:
        v = verdicts[case]
        if case in TAKEN_OVER:
            assert v["taken_over"] == 2 and not v["differs"] and v["ready"], (case, v)
        else:
            assert v["taken_over"] == 0 and len(v["differs"]) == 2 and v["foreign"] == 2, (case, v)
            assert not any("committed by a new consumer" in d for d in v["differs"]), (case, v["differs"])
    assert "from outside: no consumer had joined the group then" in verdicts["outside-high"]["differs"][0]
    assert "ZooKeeper 5, Kafka 80" in verdicts["outside-high"]["differs"][0]
    assert "from outside: the group had no member then (protocol type consumer, Empty)" in \
        verdicts["reset"]["differs"][0]
    assert "before ZooKeeper's last write" in verdicts["canary"]["differs"][0]
    # Kafka holds the canary's 100, dated by the canary's own record: the aborted 80 is no commit.
    assert "ZooKeeper 5, Kafka 100" in verdicts["aborted"]["differs"][0]
    assert "before ZooKeeper's last write" in verdicts["aborted"]["differs"][0]
    assert "one commit during the watch: not shown to be a consumer" in verdicts["once"]["differs"][0]
    assert "one commit during the watch: not shown to be a consumer" in verdicts["renewed"]["differs"][0]
    assert "committed by a new consumer" in verdicts["switched"]["taken_over_offsets"][0]
    assert "by member " in verdicts["switched"]["taken_over_offsets"][0]
    assert "seen consuming" in verdicts["assigning"]["taken_over_offsets"][0]
    assert "by member " in verdicts["live"]["taken_over_offsets"][0]
    for line in verdicts["txn"]["differs"]:   # a transaction's commit while the group had a member
        assert "Kafka 90 (" in line and "in a transaction while the group had 1 member(s)" in line, line
    for case in HOLDING:   # holding the partitions, gone: what it committed before ZooKeeper's last write stands
        assert verdicts[case]["kafka_state"] == "Stable" and verdicts[case]["kafka_members"] == 1, verdicts[case]
        for line in verdicts[case]["differs"]:
            assert "ZooKeeper 5, Kafka 100 (assigned to live member " in line or \
                "ZooKeeper 6, Kafka 100 (assigned to live member " in line, line
            assert "not shown consuming it: Kafka's commit " in line and "before ZooKeeper's last write" in line, line
    assert sorted(g[len(prefix):] for g in data["not_ready"]) == BLOCKED
    clocks = data["clocks"]
    assert clocks["assumed"] and clocks["margin"] == 1.0 and clocks["effective_margin"] >= 1.0, clocks


def test_the_gate_the_diff_and_sync_agree_on_evidence(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path,
                                                      monkeypatch):
    names = {case: f"{prefix}{case}" for case in CASES}
    topic, assigning, live = seed(cluster, zk, kafka_admin, prefix, names)
    assigning.start()
    during_the_watch(monkeypatch, kafka_admin, topic, names, assigning)
    try:
        code, data = gate(cluster, zk_chroot, tmp_path / "gate", prefix)
        check_gate(code, data, prefix)
        # Named on purpose, the blockers are left behind and the gate passes (the admin's commit of `once` now
        # before this watch: from outside).
        code, named = gate(cluster, zk_chroot, tmp_path / "gate", prefix,
                           "--leave-behind", f"{prefix}({'|'.join(BLOCKED)})")
        assert code == 0 and named["ready"], named["blocking"]

        # The diff: the same rows, the same words, no watch.
        code, diff, err = zk2kafka_json("diff", "--zookeeper", zk_chroot, "--bootstrap-server",
                                        cluster.bootstrap_server, "--state-dir", str(tmp_path / "diff"), *MARGIN)
        assert code == 3, err
        per_group = json.loads(Path(diff["files"]["summary"]).read_text())["per_group"]
        statuses = {g["group"][len(prefix):]: g["counts"] for g in per_group}
        assert statuses["switched"] == {"TAKEN_OVER": 2}, statuses
        for case in (*sorted(set(BLOCKED) - set(HOLDING)), "assigning"):
            assert statuses[case] == {"CONFLICT": 2}, (case, statuses)
        for case in ("live", *HOLDING):
            assert statuses[case] == {"GROUP_ACTIVE_KAFKA": 2}, (case, statuses)
        first = {g["group"][len(prefix):]: g.get("first_blocker") or "" for g in per_group}
        assert "from outside: no consumer had joined the group then" in first["outside-low"], first
        assert "from outside: the group had no member then (protocol type consumer, Empty)" in first["reset"], first
        assert "before ZooKeeper's last write" in first["canary"], first
        assert "before ZooKeeper's last write" in first["aborted"], first

        # sync: never writes over them; taken over where the evidence shows it, differs where it does not. The
        # assigning client stopped before it began: its commits were made before sync's watch.
        assigning.stop()
        ended = stopped_then_ended(sync(cluster, zk_chroot, tmp_path / "sync"), tmp_path / "sync",
                                   set(names.values()))
        stopped = {g[len(prefix):]: why for g, why in ended["groups_stopped"].items()}
        for case in (*sorted(set(BLOCKED) - set(HOLDING)), "assigning"):
            assert stopped[case].startswith("differs: "), (case, stopped)
        for case in ("live", *HOLDING):
            assert "Kafka group" in stopped[case], (case, stopped)
        assert "from outside: no consumer had joined the group then" in stopped["outside-low"], stopped
        assert "from outside: the group had no member then" in stopped["reset"], stopped
        assert "before ZooKeeper's last write" in stopped["aborted"], stopped
        assert stopped["switched"].startswith("taken over: "), stopped
        assert "Kafka group" in stopped["live"], stopped
    finally:
        assigning.stop()
        live.close()
    held = kafka_offsets(kafka_admin, list(names.values()))
    assert held[names["outside-low"]] == {(topic, 0): (1, ""), (topic, 1): (1, "")}, "sync moved another's offset"
    assert held[names["canary"]] == {(topic, 0): (100, ""), (topic, 1): (100, "")}, "sync moved another's offset"
    assert held[names["txn"]] == {(topic, 0): (90, ""), (topic, 1): (90, "")}, "sync moved txn's offset"
    for case in ("aborted", "renewed", *HOLDING):
        assert held[names[case]] == {(topic, 0): (100, ""), (topic, 1): (100, "")}, f"sync moved {case}'s offset"


def test_through_a_group_mapping_the_new_group_is_judged(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path,
                                                         monkeypatch):
    names = {case: f"{prefix}{case}-v2" for case in CASES}
    topic, assigning, live = seed(cluster, zk, kafka_admin, prefix, names)
    assigning.start()
    during_the_watch(monkeypatch, kafka_admin, topic, names, assigning)
    try:
        code, data = gate(cluster, zk_chroot, tmp_path / "gate", prefix, "--map-group", f"{prefix}(.*)={prefix}\\1-v2")
        check_gate(code, data, prefix)
    finally:
        assigning.stop()
        live.close()


def test_sync_takes_a_group_over_when_it_sees_a_client_of_no_group_begin_committing(cluster, zk, zk_chroot, kafka_admin,
                                                                                   prefix, tmp_path):
    topic, group = f"{prefix}orders", f"{prefix}flink"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 100)
    write_zk(zk, group, topic, ZK_OFFSETS)
    running = sync(cluster, zk_chroot, tmp_path / "sync")
    assigning = None
    try:
        mirrored = wait_for("sync to mirror the group", lambda: all(
            meta.startswith("zk2kafka sync") for _, meta in kafka_offsets(kafka_admin, [group])[group].values()
        ) and len(kafka_offsets(kafka_admin, [group])[group]) == 2 and time.time(), 60)
        past_the_margin(mirrored)   # sync began watching before it mirrored
        assigning = Assigning(cluster.bootstrap_server, group, topic, {0: 30, 1: 31})
        assigning.start()
        stopped = stopped_then_ended(running, tmp_path / "sync", {group})["groups_stopped"]
    finally:
        if assigning is not None:
            assigning.stop()
        if running.poll() is None:
            running.kill()
    assert stopped[group].startswith("taken over: "), stopped
    assert "by a client of no consumer group seen consuming" in stopped[group], stopped
    assert kafka_offsets(kafka_admin, [group])[group][(topic, 0)][0] >= 30, "sync moved the new client's offset"


def test_sync_judges_a_differing_group_again_and_says_when_it_is_taken_over(cluster, zk, zk_chroot, kafka_admin,
                                                                           prefix, tmp_path):
    """A client of no group committed once after the old consumers' last write, before sync began: at its first
    pass sync has seen nothing of it consuming and leaves the group alone as differing. The client then commits as
    it reads, during sync's watch: sync judges the group again and says it was taken over, never writing."""
    topic, group = f"{prefix}orders", f"{prefix}late"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 100)
    past_the_margin(write_zk(zk, group, topic, ZK_OFFSETS))
    admin_commit(kafka_admin, group, topic, {0: 30, 1: 31})
    state = tmp_path / "sync"
    running = sync(cluster, zk_chroot, state)
    assigning = None

    def stopped() -> str:
        assert running.poll() is None, running.communicate()[1]
        for status in state.glob("reports/*/sync-status.json"):
            try:
                return json.loads(status.read_text())["groups_stopped"].get(group, "")
            except (ValueError, KeyError):   # written as it is read: the next poll
                return ""
        return ""
    try:
        first = wait_for("sync to leave the group alone", stopped, 90)
        assert first.startswith("differs: "), first
        assigning = Assigning(cluster.bootstrap_server, group, topic, {0: 40, 1: 41})
        assigning.start()
        again = wait_for("sync to judge the group taken over", lambda: (
            why if (why := stopped()).startswith("taken over: ") else None), 90)
        running.terminate()
        running.communicate(timeout=60)
    finally:
        if assigning is not None:
            assigning.stop()
        if running.poll() is None:
            running.kill()
    assert "by a client of no consumer group seen consuming" in again, again
    held = kafka_offsets(kafka_admin, [group])[group]
    assert held[(topic, 0)][0] >= 40 and not held[(topic, 0)][1].startswith("zk2kafka"), "sync wrote the group"
