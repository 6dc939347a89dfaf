"""renew as a service, its pure parts: a pass that fails on Kafka away is counted, said and tried
again soon, and the next that goes through clears it; the checks /healthz and the alert rules
read (a failed pass, a renewal overdue past twice --renew-every, Kafka silent). The service itself,
scraped by a real Prometheus, is tests/integration/test_renew.py's."""

from __future__ import annotations

import logging
import threading

from kafka.errors import KafkaTimeoutError
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from migrate.renew import command
from migrate.renew.renewer import PassResult
from migrate.renew.service import RenewHealth, RenewMetrics


def samples(metrics: RenewMetrics) -> dict:
    text = generate_latest(metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_pass_failed_on_kafka_away_is_counted_said_and_tried_again_soon(monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="migrate")
    monkeypatch.setattr(command, "RETRY_AFTER", 0.01)   # a minute, in the command
    stop, calls = threading.Event(), []
    metrics, health = RenewMetrics(3600.0, 2), RenewHealth(lambda: None, 3600.0)
    checked = []

    def one_pass() -> PassResult:
        calls.append(1)
        if len(calls) == 1:
            raise KafkaTimeoutError("Failed to update metadata after 30.0 secs")
        checked.append(health.checks()["renewal"])   # as the failed pass left it
        stop.set()   # then until SIGTERM: the period is an hour
        return PassResult({"billing": {("orders", 0): None, ("orders", 1): None}}, {"reporting": "why"})

    done = command._passes("R1", one_pass, 3600.0, stop, True, metrics, health)
    assert (done["passes"], done["failed_passes"], done["renewals"]) == (1, 1, 2)
    assert checked == ["renewal: the last pass failed: KafkaTimeoutError: Failed to update metadata after 30.0 "
                       "secs"]
    assert health.checks()["renewal"] is None   # the pass that went through cleared it
    got = samples(metrics)
    assert got[("zk2kafka_renew_passes_total", (("result", "failed"),))] == 1
    assert got[("zk2kafka_renew_passes_total", (("result", "renewed"),))] == 1
    assert got[("zk2kafka_renew_offsets_renewed_total", ())] == 2
    assert got[("zk2kafka_renew_groups", (("state", "left_alone"),))] == 1
    assert got[("zk2kafka_renew_every_seconds", ())] == 3600
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("renew R1: a pass failed: KafkaTimeoutError: ") and "; trying again at " in line
               for line in lines), lines


def test_once_a_failed_pass_is_the_run_s_failure():
    def one_pass() -> PassResult:
        raise KafkaTimeoutError("away")

    try:
        command._passes("R1", one_pass, None, threading.Event(), True, None, None)
    except KafkaTimeoutError:
        return
    raise AssertionError("a renewal once, failed, ended as if it went through")


def test_no_group_left_to_renew_says_the_renewal_can_stop(caplog):
    caplog.set_level(logging.INFO, logger="migrate")
    stop = threading.Event()

    def one_pass() -> PassResult:
        stop.set()
        return PassResult({}, {"billing": "a consumer is in the group in Kafka"})

    command._passes("R1", one_pass, 3600.0, stop, True, None, None)
    assert any("no group left to renew" in r.getMessage() and "it can be stopped" in r.getMessage()
               for r in caplog.records)


def test_a_renewal_overdue_past_twice_its_period_is_a_reason():
    clock = Clock()
    health = RenewHealth(lambda: None, 60.0, clock)
    assert health.problems() == []
    clock.now += 121
    assert health.problems() == ["renewal: no pass went through in the 121s since renew started, more than twice "
                                 "--renew-every (2m)"]
    health.renewed()
    assert health.problems() == []
    clock.now += 130
    assert health.problems() == ["renewal: the last pass went through 130s ago, more than twice --renew-every (2m)"]


def test_kafka_failing_is_a_reason_of_its_own():
    def probe():
        raise OSError("connection refused")

    health = RenewHealth(probe, 3600.0)
    try:
        assert health.problems() == ["Kafka: OSError: connection refused"]
    finally:
        health.close()
