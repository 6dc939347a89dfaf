"""What sync's log says of a ZooKeeper outage (migrate/sync/outage.py), told kazoo's states on a
clock of the test's: a connection lost and back within the session, a session that expired, and
the groups an outage leaves to read again, a group stopped since not waited for. The real outage,
through a cut network on the real ZooKeeper, is tests/integration/test_sync_outage.py's."""

from __future__ import annotations

import logging

from kazoo.protocol.states import KazooState
from prometheus_client import CollectorRegistry, Counter

from migrate.durations import took
from migrate.sync.outage import ZkOutage
from migrate.sync.state import GroupState, SyncStatus, status_line

T0 = 1_800_000_000.0   # 2027-01-15T08:00:00Z


class Clock:
    def __init__(self):
        self.now = T0

    def __call__(self) -> float:
        return self.now


def outage(groups: dict[str, GroupState]):
    clock, status = Clock(), SyncStatus()
    lost = Counter("lost", "sessions lost", registry=CollectorRegistry())
    return ZkOutage(lost, status, lambda: groups, clock), clock, status, lost


def said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "migrate.sync.outage"]


def test_a_connection_lost_and_back_within_the_session_is_two_lines_and_the_reads_a_third(caplog):
    caplog.set_level(logging.INFO, logger="migrate")
    groups = {"billing": GroupState(), "shipping": GroupState()}
    told, clock, status, lost = outage(groups)
    told(KazooState.SUSPENDED)
    assert status.zookeeper_away_since == T0
    clock.now += 12
    told(KazooState.SUSPENDED)   # kazoo says it again: the outage began at the first
    clock.now += 30
    told(KazooState.CONNECTED)
    assert status.zookeeper_away_since is None and lost._value.get() == 0
    told.read(["billing"])
    clock.now += 2
    told.read(["shipping", "billing"])
    assert said(caplog) == [
        "sync: ZooKeeper connection lost at 2027-01-15T08:00:00Z: nothing the old consumers "
        "commit is mirrored until it is back and every group is read again",
        "sync: ZooKeeper back at 2027-01-15T08:00:42Z after 42s away (connection lost at "
        "2027-01-15T08:00:00Z; the same session): nothing was mirrored from ZooKeeper for 42s; "
        "reading every group again (2)",
        "sync: every group read again at 2027-01-15T08:00:44Z, 2.0s after ZooKeeper came back "
        "(connection lost at 2027-01-15T08:00:00Z, 44s before): Kafka follows ZooKeeper again"]
    told.read(["billing"])   # said once
    assert len(said(caplog)) == 3


def test_an_expired_session_is_counted_and_said_with_when_the_connection_went(caplog):
    caplog.set_level(logging.INFO, logger="migrate")
    told, clock, status, lost = outage({"billing": GroupState()})
    told(KazooState.SUSPENDED)
    clock.now += 80
    told(KazooState.LOST)
    line = status_line({**status.figures(), "groups_synced": ["billing"], "groups_ready": [],
                        "groups_unmirrored": {}, "groups_stopped": {}})
    assert line.startswith("sync: ZooKeeper away since 2027-01-15T08:00:00Z (")
    assert "nothing mirrored meanwhile; 1 group(s) followed, 0 offset change(s)" in line
    clock.now += 1
    told(KazooState.CONNECTED)
    assert lost._value.get() == 1
    assert said(caplog)[1:] == [
        "sync: ZooKeeper session expired at 2027-01-15T08:01:20Z (the connection lost at "
        "2027-01-15T08:00:00Z, 80s before): its watches are gone; a new session reads every "
        "group again",
        "sync: ZooKeeper back at 2027-01-15T08:01:21Z after 81s away (connection lost at "
        "2027-01-15T08:00:00Z; the session expired at 2027-01-15T08:01:20Z: a new one): nothing "
        "was mirrored from ZooKeeper for 81s; reading every group again (1)"]


def test_a_session_expired_without_a_lost_connection_starts_the_outage_then(caplog):
    caplog.set_level(logging.INFO, logger="migrate")
    told, clock, status, _ = outage({})
    told(KazooState.LOST)
    assert status.zookeeper_away_since == T0
    told(KazooState.CONNECTED)   # no group to read again: caught up at once
    assert said(caplog)[0] == ("sync: ZooKeeper session expired at 2027-01-15T08:00:00Z: its "
                               "watches are gone; a new session reads every group again")
    assert said(caplog)[-1].startswith("sync: every group read again at 2027-01-15T08:00:00Z")


def test_a_group_stopped_after_the_outage_is_not_waited_for(caplog):
    caplog.set_level(logging.INFO, logger="migrate")
    groups = {"billing": GroupState(), "taken": GroupState(), "gone": GroupState(stopped="why")}
    told, _, _, _ = outage(groups)
    told(KazooState.SUSPENDED)
    told(KazooState.CONNECTED)
    assert "reading every group again (2)" in said(caplog)[-1]   # a stopped group is read no more
    told.read(["billing"])
    assert not said(caplog)[-1].startswith("sync: every group read again")
    groups["taken"].stopped = "taken over"
    told.read([])
    assert said(caplog)[-1].startswith("sync: every group read again")


def test_spans_are_said_as_an_operator_reads_them():
    assert [took(s) for s in (0.42, 9.96, 80, 119.6, 725, 7200, 10920)] == [
        "0.4s", "10s", "80s", "2m00s", "12m05s", "2h00m", "3h02m"]
