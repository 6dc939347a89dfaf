"""sync's HTTP endpoint (`--metrics-address`): `/metrics` in Prometheus text format, served by
prometheus_client from sync's own registry, and `/healthz` for a supervisor or a load balancer.

`/healthz` answers 200 while both sessions are alive and the last re-scan finished within twice
`--rescan-every`, and 503 with the reasons otherwise, one a line:
- ZooKeeper: the kazoo session is CONNECTED (SUSPENDED: the connection is lost and the session may
  yet resume; LOST: it expired);
- Kafka: the brokers answer a metadata request (for no topic) within `PROBE_TIMEOUT`;
  kafka-python keeps no session, so a request is the only honest sign of life;
- the re-scan: a sync whose re-scans keep failing (a store away, retries running out) or take
  longer than twice their interval catches nothing a watch missed.
`/metrics` carries the same checks as `zk2kafka_sync_health_check_ok{check}` (1 passing, 0 failing),
so the alert rules (docker/monitoring/) see what a supervisor sees.
"""

from __future__ import annotations

import logging
import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState
from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from migrate.errors import ConfigError

log = logging.getLogger(__name__)
PROBE_TIMEOUT = 5.0   # seconds Kafka has to answer /healthz's metadata request
PROBE_EVERY = 1.0     # one probe's answer serves the checks of this many seconds
CHECKS = ("zookeeper", "kafka", "rescan")


class Health:
    """The checks behind /healthz. `last_rescan`: () -> time.monotonic() of the last re-scan that
    finished, or None; `kafka_probe`: a call that raises unless Kafka answers."""

    def __init__(self, zk: KazooClient, kafka_probe: Callable[[], Any],
                 last_rescan: Callable[[], float | None], rescan_every: float):
        self.zk, self.kafka_probe = zk, kafka_probe
        self.last_rescan, self.rescan_every = last_rescan, rescan_every
        self.started = time.monotonic()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="zk2kafka-healthz")
        self._probe: Future | None = None
        self._probe_sent = 0.0
        self._lock = threading.Lock()

    def problems(self) -> list[str]:
        """Why sync is unhealthy, one reason per item; empty when healthy."""
        return [problem for problem in self.checks().values() if problem]

    def checks(self) -> dict[str, str | None]:
        """Each of CHECKS: why it fails, or None while it passes."""
        found: dict[str, str | None] = dict.fromkeys(CHECKS)
        state = self.zk.state
        if state == KazooState.SUSPENDED:
            found["zookeeper"] = ("ZooKeeper: connection lost (SUSPENDED); the session may yet"
                                  " resume")
        elif state == KazooState.LOST:
            found["zookeeper"] = "ZooKeeper: session lost (LOST): expired or closed"
        kafka = self._kafka()
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

    def _kafka(self) -> str | None:
        """None while Kafka answers; else why not."""
        with self._lock:   # one probe in flight, whatever the number of scrapers
            now = time.monotonic()
            probe = self._probe
            if probe is None or (probe.done() and now - self._probe_sent >= PROBE_EVERY):
                probe = self._probe = self._pool.submit(self.kafka_probe)
                self._probe_sent = now
            waited = now - self._probe_sent
        try:
            probe.result(timeout=max(0.0, PROBE_TIMEOUT - waited))
        except FutureTimeout:
            return f"no answer to a metadata request within {PROBE_TIMEOUT:g}s"
        except Exception as exc:  # noqa: BLE001 - any failure of the probe is the reason shown
            return f"{type(exc).__name__}: {exc}"
        return None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class HealthSeries(Collector):
    """/healthz's checks as a series, so that Prometheus sees what a supervisor sees:
    `zk2kafka_sync_health_check_ok{check="zookeeper|kafka|rescan"}`, 1 while the check passes."""

    def __init__(self, health: Health):
        self.health = health

    def describe(self) -> list[Metric]:
        return []   # read at scrape time: nothing to describe before

    def collect(self) -> Iterator[Metric]:
        series = GaugeMetricFamily("zk2kafka_sync_health_check_ok", "1 while the /healthz check"
                                   " passes, 0 while it fails (/healthz says why)",
                                   labels=["check"])
        for check, problem in self.health.checks().items():
            series.add_metric([check], 0 if problem else 1)
        yield series


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True   # a scrape in progress never keeps sync alive at exit
    allow_reuse_address = True   # a restarted sync binds its port again at once


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:   # noqa: A002 - the base's name
        # A scrape every 15 s would drown sync's own lines.
        log.debug("metrics endpoint: " + format, *args)


def app(registry: CollectorRegistry, health: Health) -> Callable:
    """The WSGI app: /metrics, /healthz, 404 for anything else."""
    metrics = make_wsgi_app(registry)

    def serve(environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return metrics(environ, start_response)
        if path == "/healthz":
            problems = health.problems()
            body = ("\n".join(problems) if problems else "ok") + "\n"
            status = "503 Service Unavailable" if problems else "200 OK"
            start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
            return [body.encode()]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"zk2kafka sync serves /metrics and /healthz\n"]

    return serve


class Endpoint:
    """The HTTP server on its own daemon thread, from `start` until `close`."""

    def __init__(self, address: str, registry: CollectorRegistry, health: Health):
        host, port = split_address(address)
        try:
            self.server = make_server(host, port, app(registry, health), server_class=_Server,
                                      handler_class=_Quiet)
        except OSError as exc:
            raise ConfigError(f"--metrics-address {address}: cannot listen there: "
                              f"{exc.strerror or exc}") from None
        self.health = health
        registry.register(HealthSeries(health))
        self.address = f"{host}:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                        name="zk2kafka-metrics")

    def start(self) -> Endpoint:
        self._thread.start()
        log.info("sync: metrics on http://%s/metrics, health on http://%s/healthz",
                 self.address, self.address)
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.health.close()


def split_address(address: str) -> tuple[str, int]:
    """("host", port) from HOST:PORT; raises ConfigError."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--metrics-address: expected HOST:PORT (e.g. 0.0.0.0:9308), "
                          f"got {address!r}")
    return host, int(port)
