"""The pure parts of sync's service endpoint: a group's state and lag as the series show them, the
reasons /healthz gives, and the address check. The endpoint itself is tested on the real sandbox
(tests/integration/test_sync_metrics.py, tests/faults/test_sync_faults.py)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from kazoo.protocol.states import KazooState

from migrate import endpoint
from migrate.endpoint import split_address
from migrate.sync.metrics import lag, state_of
from migrate.sync.service import Health
from migrate.sync.state import GroupState
from migrate.sync.watch import ZkOffset
from migrate.errors import ConfigError


def zk(offset: int) -> ZkOffset:
    return ZkOffset(offset, "/p", 0, "standard")


def test_lag_counts_differing_partitions_and_sums_the_differences():
    group = GroupState(offsets={("t", 0): zk(10), ("t", 1): zk(20), ("t", 2): zk(5)},
                       kafka={("t", 0): 10, ("t", 1): 14})
    assert lag(group) == (2, 6 + 5)   # t-2 absent from Kafka counts its whole offset


def test_state_of_a_group():
    assert state_of(GroupState()) == "mirroring"
    assert state_of(GroupState(ready=True)) == "ready"
    assert state_of(GroupState(ready=True, stopped="taken over")) == "stopped"


def health(state=KazooState.CONNECTED, probe=lambda: None, last=None, every=30.0) -> Health:
    return Health(SimpleNamespace(state=state), probe, lambda: last, every)


def test_healthy_while_both_sessions_live_and_the_rescan_is_recent():
    assert health(last=time.monotonic()).problems() == []


@pytest.mark.parametrize("state, says", [(KazooState.SUSPENDED, "connection lost"),
                                         (KazooState.LOST, "session lost")])
def test_a_zookeeper_session_not_connected_is_a_reason(state, says):
    (reason,) = health(state, last=time.monotonic()).problems()
    assert reason.startswith("ZooKeeper: ") and says in reason


def test_kafka_failing_is_a_reason():
    def probe():
        raise OSError("connection refused")

    (reason,) = health(probe=probe, last=time.monotonic()).problems()
    assert reason == "Kafka: OSError: connection refused"


def test_kafka_silent_past_the_probe_timeout_is_a_reason(monkeypatch):
    monkeypatch.setattr(endpoint, "PROBE_TIMEOUT", 0.2)
    release = threading.Event()
    checks = health(probe=release.wait, last=time.monotonic())
    try:
        assert checks.problems() == ["Kafka: no answer to a metadata request within 0.2s"]
    finally:
        release.set()


def test_a_rescan_older_than_twice_its_interval_is_a_reason():
    (reason,) = health(last=time.monotonic() - 61, every=30.0).problems()
    assert reason.startswith("re-scan: the last one finished 61s ago") and "(60s)" in reason
    fresh = health(last=None, every=30.0)
    assert fresh.problems() == []   # just started: the first re-scan has time
    fresh.started -= 61
    assert fresh.problems()[0].startswith("re-scan: none finished")


@pytest.mark.parametrize("address", ["9308", ":9308", "host:", "host:99999", "host:9x"])
def test_a_malformed_metrics_address_is_a_config_error(address):
    with pytest.raises(ConfigError, match="--metrics-address"):
        split_address(address)
    assert split_address("0.0.0.0:9308") == ("0.0.0.0", 9308)
