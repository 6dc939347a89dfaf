"""A broker killed with SIGKILL and restarted mid-run; the groups' coordinator stopped mid-run.

The cluster has two ZooKeeper-mode brokers and `__consumer_offsets` on both, so committed offsets
survive either broker; the run must ride through by retrying and finding the new coordinator.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from migrate import cli
from migrate.kafka.writer import KafkaOffsetWriter

from support.cli import zk2kafka_json
from support.faults import brokers, coordinator_partition, ensure_up, kill9, restart_broker
from support.wait import wait_for

pytestmark = pytest.mark.integration


def leaders(admin) -> dict[int, int]:
    """`__consumer_offsets` partition -> the broker leading it, i.e. coordinating its groups."""
    (topic,) = admin.describe_topics(["__consumer_offsets"])
    return {p["partition_index"]: p["leader_id"] for p in topic["partitions"]}


def migrated(case) -> str:
    """`migrate --execute` of the case's groups, done: its run id."""
    code, done, err = zk2kafka_json("migrate", *case.args(), "--execute")
    assert code == 0 and done["state"] == "done", (done.get("state"), done.get("failed"), err[-2000:])
    return done["run"]


def verified(case, run: str) -> None:
    """A fresh diff finds every offset in sync, and the run's every value holds."""
    code, data, err = zk2kafka_json("verify", *case.args())
    assert code == 0 and data["verified"], (data.get("mismatched"), err[-2000:])
    case.check(run)


def test_a_broker_killed_and_restarted_mid_run_is_survived(stores, fault_log, monkeypatch):
    case = stores.case("broker-kill")
    case.seed(600, random.Random(f"{fault_log.seed}-broker-kill"))   # three write batches, two in flight
    victim = brokers(stores.cluster)[0]
    first, killed, back = threading.Lock(), threading.Event(), threading.Event()
    real_commit = KafkaOffsetWriter.commit_many

    def commit_many(self, commits, metadata):
        if first.acquire(blocking=False):
            kill9(victim)        # this batch's commits go to a dead broker...
            killed.set()
        else:
            assert back.wait(180), "the broker never came back"   # ...the later ones to the restarted one
        return real_commit(self, commits, metadata)

    monkeypatch.setattr(KafkaOffsetWriter, "commit_many", commit_many)
    old_pid = victim.pid
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(migrated, case)
        assert killed.wait(180) or run.result(), "the run never committed"
        fault_log.fault("kafka broker kill -9 + restart")
        try:
            restart_broker(stores.cluster, stores.zk, 0)   # from the main thread: attached to the test session
        finally:
            back.set()
        run_id = run.result(timeout=300)
    assert victim.alive() and victim.pid != old_pid
    # Checked once the restarted broker is whole again (answering, every replica in sync): a check made
    # while it still loads its partitions tests the check's retries, not what the run left.
    ensure_up(stores.cluster)
    verified(case, run_id)


def test_the_coordinator_stopping_mid_run_is_found_again(stores, fault_log, monkeypatch, capsys):
    case = stores.case("coordinator")
    before = leaders(stores.admin)
    candidates = (f"{case.prefix}g{i:04d}" for i in itertools.count())
    partitions = stores.cluster.offsets_partitions
    first = next(candidates)
    victim_id = before[coordinator_partition(first, partitions)]
    names = [first] + list(itertools.islice(
        (g for g in candidates if before[coordinator_partition(g, partitions)] == victim_id), 99))
    case.seed(names, random.Random(f"{fault_log.seed}-coordinator"))
    victim = brokers(stores.cluster)[victim_id]

    real_commit, stopped = KafkaOffsetWriter.commit_many, threading.Lock()

    def commit_many(self, commits, metadata):
        if stopped.acquire(blocking=False):
            # The run looked the coordinator up for its first read; now it goes away (controlled shutdown).
            victim.stop()
            fault_log.fault("group coordinator stopped")
        return real_commit(self, commits, metadata)

    monkeypatch.setattr(KafkaOffsetWriter, "commit_many", commit_many)
    code = cli.main(["migrate", *case.args(), "--execute", "--json", "-q"])
    out, err = capsys.readouterr()
    done = json.loads(out)
    assert code == 0 and done["state"] == "done", (done.get("state"), done.get("failed"), err[-2000:])
    assert stopped.locked() and not victim.alive()
    # Each group whose commit met the dead coordinator looks the new one up at once, not after a backoff.
    assert err.count("retrying (attempt") < len(names) // 10, err[-2000:]
    verified(case, done["run"])
    after = wait_for("metadata without the stopped broker", lambda: leaders(stores.admin))
    moved = {after[coordinator_partition(g, partitions)] for g in names}
    assert victim_id not in moved, f"the groups are still coordinated by broker {victim_id}"
