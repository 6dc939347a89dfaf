"""renew as a service (`--metrics-address`, with `--execute --renew-every`): its Prometheus series
and the checks behind `/healthz`, served by migrate/endpoint.py.

A renewal that stopped is found by its series, not when the offsets are gone: Prometheus sees the
service down (`up`), or a renewal that failed or went overdue (`zk2kafka_renew_health_check_ok
{check="renewal"}`), and the rules of docker/monitoring/zk2kafka-renew.rules.yml page for either.
`/healthz` answers 200 while Kafka answers a metadata request and the renewal is on time, and
503 with the reasons otherwise, one a line:
- Kafka: the brokers answer a metadata request (for no topic) within endpoint.PROBE_TIMEOUT;
- the renewal: the last pass failed (a store away past the retries: it is tried again soon), or
  none went through within twice --renew-every (a renewal hung, or failing every time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from migrate import endpoint
from migrate.durations import exact_duration

PREFIX = "zk2kafka_renew"
CHECKS = ("kafka", "renewal")
RESULTS = ("renewed", "failed")


class RenewMetrics:
    """The series renew feeds, in a registry of its own."""

    def __init__(self, every: float, groups: int):
        self.registry = r = CollectorRegistry(auto_describe=True)
        Gauge(f"{PREFIX}_every_seconds", "--renew-every: the period in force",
              registry=r).set(every)
        Gauge(f"{PREFIX}_groups_written", "Groups whose offsets zk2kafka wrote, as the journal"
              " holds them for the selection", registry=r).set(groups)
        self.passes = Counter(f"{PREFIX}_passes", "Renewal passes, by result: renewed (the pass"
                              " went through) or failed (a store away past the retries)",
                              ["result"], registry=r)
        for result in RESULTS:
            self.passes.labels(result)
        self.offsets = Counter(f"{PREFIX}_offsets_renewed", "Offsets re-committed as Kafka held"
                               " them", registry=r)
        self.last_renewed = Gauge(f"{PREFIX}_last_renewed_timestamp_seconds", "When the last"
                                  " pass that went through ended (0: none yet)", registry=r)
        self.groups = Gauge(f"{PREFIX}_groups", "Groups by what the last pass that went through"
                            " did: renewed, or left_alone (its members commit for themselves,"
                            " or its offsets are no longer zk2kafka's)", ["state"], registry=r)

    def renewed(self, offsets: int, renewed: int, left_alone: int) -> None:
        self.passes.labels("renewed").inc()
        self.offsets.inc(offsets)
        self.last_renewed.set(time.time())
        self.groups.labels("renewed").set(renewed)
        self.groups.labels("left_alone").set(left_alone)

    def failed(self) -> None:
        self.passes.labels("failed").inc()


class RenewHealth:
    """The checks behind /healthz. `kafka_probe`: a call that raises unless Kafka answers."""

    def __init__(self, kafka_probe: Callable[[], Any], every: float,
                 clock: Callable[[], float] = time.monotonic):
        self.kafka, self.every, self.clock = endpoint.KafkaProbe(kafka_probe), every, clock
        self.started = clock()
        self.last_renewed: float | None = None
        self.failure: str | None = None   # why the last pass failed, until one goes through

    def renewed(self) -> None:
        self.last_renewed, self.failure = self.clock(), None

    def failed(self, why: str) -> None:
        self.failure = why

    def problems(self) -> list[str]:
        return endpoint.problems(self)

    def checks(self) -> dict[str, str | None]:
        """Each of CHECKS: why it fails, or None while it passes."""
        found: dict[str, str | None] = dict.fromkeys(CHECKS)
        kafka = self.kafka.problem()
        if kafka:
            found["kafka"] = f"Kafka: {kafka}"
        allowed = 2 * self.every
        since = self.clock() - (self.last_renewed or self.started)
        if self.failure is not None:
            found["renewal"] = f"renewal: the last pass failed: {self.failure}"
        elif since > allowed:
            when = (f"the last pass went through {since:.0f}s ago" if self.last_renewed else
                    f"no pass went through in the {since:.0f}s since renew started")
            found["renewal"] = (f"renewal: {when}, more than twice --renew-every "
                                f"({exact_duration(allowed)})")
        return found

    def close(self) -> None:
        self.kafka.close()
