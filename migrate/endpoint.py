"""The HTTP endpoint of zk2kafka's long-running services (`sync`, `renew`; `--metrics-address`):
`/metrics` in Prometheus text format, served by prometheus_client from the service's own
registry, and `/healthz` for a supervisor or a load balancer: 200 `ok`, or 503 with one reason a
line. What the checks are is the service's (`Health`: sync/service.py, renew/service.py); the
same checks go to `/metrics` as `zk2kafka_<service>_health_check_ok{check}` (1 passing), so the
alert rules (docker/monitoring/) see what a supervisor sees.

The socket is bound when the endpoint is made, before the service reaches any store: a malformed
address or a port in use is refused at once, and journals no run that never ran.
"""

from __future__ import annotations

import logging
import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from migrate.errors import ConfigError

log = logging.getLogger(__name__)
PROBE_TIMEOUT = 5.0   # seconds Kafka has to answer /healthz's metadata request
PROBE_EVERY = 1.0     # one probe's answer serves the checks of this many seconds


class Health(Protocol):
    """A service's checks: each one's problem, or None while it passes."""

    def checks(self) -> dict[str, str | None]: ...

    def close(self) -> None: ...


def problems(health: Health) -> list[str]:
    """Why the service is unhealthy, one reason per item; empty when healthy."""
    return [problem for problem in health.checks().values() if problem]


class KafkaProbe:
    """Kafka's sign of life: `probe` (a call that raises unless Kafka answers; kafka-python keeps
    no session, so a request is the only honest one) run on a thread of its own, one in flight
    whatever the number of scrapers, its answer serving the checks of PROBE_EVERY seconds."""

    def __init__(self, probe: Callable[[], Any]):
        self.probe = probe
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="zk2kafka-healthz")
        self._pending: Future | None = None
        self._sent = 0.0
        self._lock = threading.Lock()

    def problem(self) -> str | None:
        """None while Kafka answers; else why not."""
        with self._lock:
            now = time.monotonic()
            pending = self._pending
            if pending is None or (pending.done() and now - self._sent >= PROBE_EVERY):
                pending = self._pending = self._pool.submit(self.probe)
                self._sent = now
            waited = now - self._sent
        try:
            pending.result(timeout=max(0.0, PROBE_TIMEOUT - waited))
        except FutureTimeout:
            return f"no answer to a metadata request within {PROBE_TIMEOUT:g}s"
        except Exception as exc:  # noqa: BLE001 - any failure of the probe is the reason shown
            return f"{type(exc).__name__}: {exc}"
        return None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class HealthSeries(Collector):
    """/healthz's checks as a series, so that Prometheus sees what a supervisor sees:
    `zk2kafka_<service>_health_check_ok{check}`, 1 while the check passes."""

    def __init__(self, health: Health, service: str = "sync"):
        self.health, self.name = health, f"zk2kafka_{service}_health_check_ok"

    def describe(self) -> list[Metric]:
        return []   # read at scrape time: nothing to describe before

    def collect(self) -> Iterator[Metric]:
        series = GaugeMetricFamily(self.name, "1 while the /healthz check passes, 0 while it"
                                   " fails (/healthz says why)", labels=["check"])
        for check, problem in self.health.checks().items():
            series.add_metric([check], 0 if problem else 1)
        yield series


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True   # a scrape in progress never keeps the service alive at exit
    allow_reuse_address = True   # a restarted service binds its port again at once


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:   # noqa: A002 - the base's name
        # A scrape every 15 s would drown the service's own lines.
        log.debug("metrics endpoint: " + format, *args)


def app(registry: CollectorRegistry, health: Health, service: str = "sync") -> Callable:
    """The WSGI app: /metrics, /healthz, 404 for anything else."""
    metrics = make_wsgi_app(registry)

    def serve(environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return metrics(environ, start_response)
        if path == "/healthz":
            found = problems(health)
            body = ("\n".join(found) if found else "ok") + "\n"
            status = "503 Service Unavailable" if found else "200 OK"
            start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
            return [body.encode()]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [f"zk2kafka {service} serves /metrics and /healthz\n".encode()]

    return serve


def _not_yet(environ: dict, start_response: Callable) -> Iterable[bytes]:
    """What the bound socket answers before the service serves: it is starting."""
    start_response("503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8")])
    return [b"starting\n"]


class Endpoint:
    """The HTTP server, bound at once, serving on its own daemon thread from `serve` until
    `close`. Raises ConfigError for a malformed address or one it cannot listen on."""

    def __init__(self, address: str, service: str = "sync"):
        host, port = split_address(address)
        try:
            self.server = make_server(host, port, _not_yet, server_class=_Server,
                                      handler_class=_Quiet)
        except OSError as exc:
            raise ConfigError(f"--metrics-address {address}: cannot listen there: "
                              f"{exc.strerror or exc}") from None
        self.service = service
        self.health: Health | None = None
        self.address = f"{host}:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                        name=f"zk2kafka-{service}-metrics")

    def serve(self, registry: CollectorRegistry, health: Health) -> Endpoint:
        """Serve `registry` on /metrics, with the checks of `health` (there too), and /healthz."""
        self.health = health
        registry.register(HealthSeries(health, self.service))
        self.server.set_app(app(registry, health, self.service))
        self._thread.start()
        log.info("%s: metrics on http://%s/metrics, health on http://%s/healthz", self.service,
                 self.address, self.address)
        return self

    def close(self) -> None:
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()
        if self.health is not None:
            self.health.close()


def split_address(address: str) -> tuple[str, int]:
    """("host", port) from HOST:PORT; raises ConfigError."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--metrics-address: expected HOST:PORT (e.g. 0.0.0.0:9308), "
                          f"got {address!r}")
    return host, int(port)
