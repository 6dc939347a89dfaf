"""sync's checks behind `/healthz` (the endpoint, `--metrics-address`, is migrate/endpoint.py).

`/healthz` answers 200 while both sessions are alive and the last re-scan finished within twice
`--rescan-every`, and 503 with the reasons otherwise, one a line:
- ZooKeeper: the kazoo session is CONNECTED (SUSPENDED: the connection is lost and the session may
  yet resume; LOST: it expired);
- Kafka: the brokers answer a metadata request (for no topic) within `PROBE_TIMEOUT`;
- the re-scan: a sync whose re-scans keep failing (a store away, retries running out) or take
  longer than twice their interval catches nothing a watch missed.
`/metrics` carries the same checks as `zk2kafka_sync_health_check_ok{check}` (1 passing, 0 failing).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from migrate import endpoint

CHECKS = ("zookeeper", "kafka", "rescan")


class Health:
    """The checks behind /healthz. `last_rescan`: () -> time.monotonic() of the last re-scan that
    finished, or None; `kafka_probe`: a call that raises unless Kafka answers."""

    def __init__(self, zk: KazooClient, kafka_probe: Callable[[], Any],
                 last_rescan: Callable[[], float | None], rescan_every: float):
        self.zk, self.kafka = zk, endpoint.KafkaProbe(kafka_probe)
        self.last_rescan, self.rescan_every = last_rescan, rescan_every
        self.started = time.monotonic()

    def problems(self) -> list[str]:
        """Why sync is unhealthy, one reason per item; empty when healthy."""
        return endpoint.problems(self)

    def checks(self) -> dict[str, str | None]:
        """Each of CHECKS: why it fails, or None while it passes."""
        found: dict[str, str | None] = dict.fromkeys(CHECKS)
        state = self.zk.state
        if state == KazooState.SUSPENDED:
            found["zookeeper"] = ("ZooKeeper: connection lost (SUSPENDED); the session may yet"
                                  " resume")
        elif state == KazooState.LOST:
            found["zookeeper"] = "ZooKeeper: session lost (LOST): expired or closed"
        kafka = self.kafka.problem()
        if kafka:
            found["kafka"] = f"Kafka: {kafka}"
        now = time.monotonic()
        last, allowed = self.last_rescan(), 2 * self.rescan_every
        if last is None and now - self.started > allowed:
            found["rescan"] = (f"re-scan: none finished in the {now - self.started:.0f}s since"
                               f" sync started, more than twice --rescan-every ({allowed:g}s)")
        elif last is not None and now - last > allowed:
            found["rescan"] = (f"re-scan: the last one finished {now - last:.0f}s ago, more than"
                               f" twice --rescan-every ({allowed:g}s)")
        return found

    def close(self) -> None:
        self.kafka.close()
