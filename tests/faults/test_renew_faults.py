"""`renew` as a watched service while Kafka does not answer: ZK2KafkaRenewalFailing fires in a real Prometheus.

Groups migrated onto the fault cluster, then renewed every minute (the floor of --renew-every) with
--metrics-address, scraped by a real Prometheus with docker/monitoring/zk2kafka-renew.rules.yml (`for:` windows of
2 s). Both brokers are frozen (SIGSTOP) once the first pass went through: the next pass fails (a request timed
out) or is overdue (twice --renew-every after the first), /healthz says which and the alert fires, while the
scrapes go on (renew is up, so ZK2KafkaRenewDown stays quiet). Thawed, a pass goes through again, and /healthz
and the alert clear.
About three minutes: --renew-every's floor sets the pace.
"""

from __future__ import annotations

import random
import signal
from contextlib import ExitStack

import pytest

from support.cli import zk2kafka_json
from support.faults import brokers, pause, spawn
from support.prometheus import RENEW_JOB, RENEW_RULES, Prometheus, rules, with_short_for
from support.sync_process import get, scraped_when, value
from support.wait import free_port, wait_for

pytestmark = pytest.mark.integration

RENEWAL = 'zk2kafka_renew_health_check_ok{job="%s", check="renewal"}' % RENEW_JOB


def test_a_renewal_kafka_does_not_answer_pages_and_clears_when_it_answers(stores, fault_log, tmp_path):
    case = stores.case("renew-frozen")
    case.seed(3, random.Random(f"{fault_log.seed}-renew-frozen"))
    code, done, _ = zk2kafka_json("migrate", *case.args(), "--execute")
    assert code == 0 and done["state"] == "done", (done.get("state"), done.get("failed"))
    address = f"127.0.0.1:{free_port()}"
    # A scrape waits up to 5 s for /healthz's Kafka probe: a scrape timeout above it keeps renew "up".
    prometheus = Prometheus(tmp_path / "prometheus", [address], with_short_for(rules(RENEW_RULES), 2), scrape=8,
                            job=RENEW_JOB)
    renewing = spawn(["renew", "--execute", "--renew-every", "1m", "--bootstrap-server",
                      stores.endpoints.bootstrap_server, "--state-dir", str(case.state_dir),
                      "--group", f"{case.prefix}.*", "--metrics-address", address])
    try:
        scraped_when("renew's first pass", address, lambda s: value(
            s, "zk2kafka_renew_passes_total", result="renewed") == 1, timeout=120)
        wait_for("Prometheus to see the renewal pass", lambda: prometheus.query(f"{RENEWAL} == 1"), timeout=60)

        with ExitStack() as frozen:
            for broker in brokers(stores.cluster).values():
                frozen.enter_context(pause(broker))
            fault_log.fault("kafka brokers SIGSTOP under renew")
            firing = prometheus.wait_alert("ZK2KafkaRenewalFailing", ("firing",), timeout=240, job=RENEW_JOB)
            assert firing["labels"]["instance"] == address
            assert prometheus.alert("ZK2KafkaRenewDown") is None   # still scraped: renew is up
            status, body = get(f"http://{address}/healthz")
            assert status == 503, body
            (renewal,) = [line for line in body.splitlines() if line.startswith("renewal: ")]
            # Which is said first depends on how the stalled pass ends: its request timing out, or overdue.
            failed = renewal.startswith("renewal: the last pass failed: ")
            assert failed or ("renewal: the last pass went through" in renewal
                              and "more than twice --renew-every (2m)" in renewal), body

        # Thawed: the next pass goes through, and the page clears.
        scraped_when("a second pass once Kafka answers", address, lambda s: value(
            s, "zk2kafka_renew_passes_total", result="renewed") == 2, timeout=240)
        wait_for("/healthz healthy again", lambda: get(f"http://{address}/healthz") == (200, "ok\n"), timeout=60)
        wait_for("ZK2KafkaRenewalFailing cleared", lambda: prometheus.query(f"{RENEWAL} == 1")
                 and prometheus.alert("ZK2KafkaRenewalFailing") is None, timeout=60)
    finally:
        renewing.send_signal(signal.SIGTERM)
        out, err = renewing.communicate(timeout=120)
        prometheus.stop()
    assert renewing.returncode == 0, err
    assert "renewing the 6 offset(s) of 3 group(s) zk2kafka wrote, every 1m" in err, err
    assert not failed or ": a pass failed: " in err and "; trying again at " in err, err
    assert case.kafka_state() == case.expected   # renewed as they were: no offset moved
