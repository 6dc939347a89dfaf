"""ZooKeeper session expiry and connection loss during `scan` and during `migrate --execute`.

Session expiry is the real thing: a second client attaches to the session and closes it, so the
server ends it. Connection loss is the ZooKeeper JVM killed with SIGKILL and started again (its
sessions survive a restart), or paused with SIGSTOP while a writer's transactions are on the wire.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pyarrow.parquet as pq
import pytest

from migrate.zk.walk import AsyncBatch
from migrate.zk.writer import ZkOffsetWriter

from support.cli import zk2kafka_json
from support.faults import journal_progress, journaled_run, kill9, pause, restart_zookeeper, server, spawn
from support.seeding import expire_session
from support.wait import wait_for

pytestmark = pytest.mark.integration

GROUPS = 300


def expire_twice(client, hosts: str) -> None:
    """Expire the session now, and once more a moment later, while requests are in flight on the new one."""
    expire_session(client, hosts)
    threading.Timer(0.01, expire_session, (client, hosts)).start()


REAL_SUBMIT = AsyncBatch._submit   # scan_after patches it, maybe several times in one test


def scan_after(stores, case, monkeypatch, capsys, fault, after: int = 5, before=lambda: None) -> int:
    """`scan` with `fault(client)` injected once the `after`-th pipelined read is on the wire (and `before()`
    just before it is sent); it must still read every offset. Returns how many reads the fault made it send
    again."""
    real_submit, calls = REAL_SUBMIT, []

    def submit(self, chunk):
        calls.append(len(chunk))
        if len(calls) == after:
            before()
        pending = real_submit(self, chunk)
        if len(calls) == after:   # with this read on the wire
            fault(self.client)
        return pending

    monkeypatch.setattr(AsyncBatch, "_submit", submit)
    code, scanned, _ = zk2kafka_json("scan", *case.args())
    assert len(calls) > after, "the scan ended before the fault: it tested nothing"
    assert code == 0, scanned
    snapshot = pq.read_table(scanned["snapshot"]).to_pylist()
    rows = {(r["group"], r["topic"], r["partition"]): r["offset"] for r in snapshot}
    lost = sum(rows.get(k) != v for k, v in case.expected.items())
    stores.log.outcome(converged=not lost and scanned["counts"] == {"OK": len(case.expected)}, lost=lost)
    assert lost == 0 and scanned["counts"] == {"OK": len(case.expected)}, scanned["counts"]
    return scanned["retried_reads"]


def test_scan_survives_a_session_expiry_mid_walk(stores, fault_log, monkeypatch, capsys):
    case = stores.case("scan-expiry")
    case.seed(GROUPS, random.Random(f"{fault_log.seed}-scan-expiry"))

    def expire(client):
        expire_twice(client, case.zookeeper)
        fault_log.fault("zookeeper session expiry")

    assert scan_after(stores, case, monkeypatch, capsys, expire) > 0, "no read was lost to the fault"


def test_scan_survives_zookeeper_killed_and_restarted_mid_walk(stores, fault_log, monkeypatch, capsys):
    def stop():
        # the read goes out but is not answered (a fast server would)
        os.killpg(server(stores.cluster, "zookeeper").pid, signal.SIGSTOP)

    def crash(client):
        # Only requests kazoo has written fail on a lost connection; a queued one simply goes out after the
        # reconnect. A fixed sleep lost that race on a loaded CI machine, so wait until the queue is drained.
        wait_for("kazoo to write the read", lambda: not client._queue, 30)
        kill9(server(stores.cluster, "zookeeper"))
        restart_zookeeper(stores.cluster)    # the scan's requests meet a dead server, then a new one
        fault_log.fault("zookeeper kill -9 + restart")

    # Every scan must read every offset. Whether the kill meets a read in flight is still up to the
    # scheduler (a CI run found the read answered in time), so the crash is tried on up to three fresh
    # cases until it costs the scan a read; it must, or the test tested nothing.
    for attempt in range(3):
        case = stores.case(f"scan-restart-{attempt}")
        case.seed(GROUPS, random.Random(f"{fault_log.seed}-scan-restart-{attempt}"))
        if scan_after(stores, case, monkeypatch, capsys, crash, before=stop) > 0:
            return
    pytest.fail("no read was lost to the fault in three tries")


def migrate_with_zk_fault(case, monkeypatch, capsys, fault, recover=lambda: None) -> tuple[int, dict]:
    """`migrate --execute` with `fault(client)` injected as its ZooKeeper half begins, and `recover()` run meanwhile
    on the main thread (JVMs started there die with the test session); its exit code and JSON."""
    real_write, hit, injected = ZkOffsetWriter.write_many, threading.Lock(), threading.Event()

    def write_many(self, writes):
        if hit.acquire(blocking=False):   # the first batch only
            fault(self.client)
            injected.set()
        return real_write(self, writes)

    monkeypatch.setattr(ZkOffsetWriter, "write_many", write_many)
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(zk2kafka_json, "migrate", *case.args(), "--execute")
        assert injected.wait(180) or run.result(), "the run never reached its ZooKeeper half"
        recover()
        code, done, _ = run.result(timeout=600)
        return code, done


def verified(case, capsys, run_id: str) -> None:
    code, data, _ = zk2kafka_json("verify", *case.args())
    assert code == 0 and data["verified"], data.get("mismatched")
    case.check(run_id)


def test_migrate_survives_a_session_expiry_in_its_zookeeper_half(stores, fault_log, monkeypatch, capsys):
    case = stores.case("write-expiry")
    case.seed(GROUPS, random.Random(f"{fault_log.seed}-write-expiry"))

    def expire(client):
        expire_twice(client, case.zookeeper)
        fault_log.fault("zookeeper session expiry")

    code, done = migrate_with_zk_fault(case, monkeypatch, capsys, expire)
    assert code == 0 and done["state"] == "done", done
    verified(case, capsys, done["run"])


def test_migrate_survives_zookeeper_killed_and_restarted_in_its_zookeeper_half(stores, fault_log, monkeypatch,
                                                                               capsys):
    case = stores.case("write-restart")
    case.seed(GROUPS, random.Random(f"{fault_log.seed}-write-restart"))

    def crash(client):
        kill9(server(stores.cluster, "zookeeper"))   # the writer's transactions meet a dead server...
        fault_log.fault("zookeeper kill -9 + restart")

    def restart():
        time.sleep(1)
        restart_zookeeper(stores.cluster)            # ...then a new one

    code, done = migrate_with_zk_fault(case, monkeypatch, capsys, crash, restart)
    assert code == 0 and done["state"] == "done", done
    verified(case, capsys, done["run"])


@pytest.mark.slow
def test_zookeeper_gone_past_the_retry_deadline_ends_incomplete_then_resume_converges(stores, fault_log,
                                                                                      monkeypatch, capsys):
    """Past its retry deadline (about 2.5 minutes) the run stops: a reported, resumable state, no group failed."""
    case = stores.case("zk-gone")
    case.seed(GROUPS, random.Random(f"{fault_log.seed}-zk-gone"))

    def crash(client):
        kill9(server(stores.cluster, "zookeeper"))
        fault_log.fault("zookeeper down past the retry deadline")

    code, done = migrate_with_zk_fault(case, monkeypatch, capsys, crash)
    assert code == 1 and done["state"] == "incomplete" and not done["failed"], done
    assert done["groups"]["verified"] == 0 and done["groups"]["committed"] > 0, done["groups"]
    restart_zookeeper(stores.cluster)
    assert case.disagreements(done["run"]) == []

    code, resumed, _ = zk2kafka_json("migrate", *case.args(), "--execute", "--resume", done["run"])
    assert code == 0 and resumed["state"] == "done", resumed
    verified(case, capsys, done["run"])


def test_zookeeper_paused_under_a_killed_writer_then_resume_converges(stores, fault_log, monkeypatch, capsys):
    """The writer dies with its ZooKeeper transactions sent but unanswered; ZooKeeper may apply them after."""
    case = stores.case("paused")
    case.seed(GROUPS, random.Random(f"{fault_log.seed}-paused"))
    run_id = journaled_run(case.args(), case.state_dir, monkeypatch)
    zookeeper = server(stores.cluster, "zookeeper")

    writer = spawn(["migrate", *case.args(), "--execute", "--resume", run_id, "-q"])
    try:
        # Its ZooKeeper reads are done once it journals the before-values: pause ZooKeeper then, and
        # kill the writer once it journaled `committed`, i.e. is in its ZooKeeper half.
        wait_for("the writer to journal before-values", lambda: journal_progress(case.state_dir, run_id)["touched"],
                 60, every=0.01)
        with pause(zookeeper):
            wait_for("the writer to reach its ZooKeeper half",
                     lambda: journal_progress(case.state_dir, run_id)["committed"], 30, every=0.01)
            time.sleep(0.3)   # its transactions are on the wire
            writer.kill()
            writer.wait(timeout=30)
    finally:
        writer.kill()
    _, err = writer.communicate()
    assert writer.returncode == -9, err
    fault_log.fault("zookeeper paused + zk2kafka kill -9")
    assert case.disagreements(run_id) == []

    code, resumed, _ = zk2kafka_json("migrate", *case.args(), "--execute", "--resume", run_id)
    assert code == 0 and resumed["state"] == "done", resumed
    verified(case, capsys, run_id)
