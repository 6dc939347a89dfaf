"""A real local cluster: ZooKeeper, ZooKeeper-mode Kafka broker(s) and, on request, a KRaft Kafka 4.

The ZooKeeper-mode side is any release in RELEASES (3.9.2 by default), with the ZooKeeper server
that release ships; each server is a JVM (migrate/jvm/server.py) started from the pinned jars of
the release's bundle (migrate/jvm/artifacts.py) on free 127.0.0.1 ports. With `security=True`
(3.9.2 only) the ZooKeeper-mode broker also listens on SASL_PLAINTEXT and on SSL (see
`security`); brokers still talk to each other over PLAINTEXT. Two ownership modes:

- attached (tests): every JVM dies with the Python process that started it, even on `kill -9`;
  `stop()` and an atexit hook end them.
- detached (`zk2kafka sandbox up`): the JVMs outlive the command; their pids and ports go to
  `<home>/sandbox.json` and `zk2kafka sandbox down` ends them.
"""

from __future__ import annotations

import atexit
import base64
import json
import logging
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import NamedTuple

from migrate.errors import ConfigError, SandboxError
from migrate.jvm.artifacts import ensure_bundle
from migrate.jvm.server import (DEFAULT_HEAP, JavaServer, free_port, jmx_opts, kafka_ready,
                                 wait_for_server, zk_answers)
from migrate.jvm.releases import DEFAULT_KAFKA_VERSION, release
from migrate.sandbox.modes import VERSION_FILE, refuse_other_release
from migrate.sandbox.security import open_secured_listeners, secured_listeners, super_digest

log = logging.getLogger(__name__)


STATE_FILE = "sandbox.json"
BROKER_CHROOT = "/kafka"
# ZooKeeper registers log4j's MBeans at start; under reload4j that fails on ZooKeeper 3.4, and the
# sandbox needs none.
ZK_JVM_OPTS = ["-Dzookeeper.jmx.log4j.disable=true"]


@dataclass(frozen=True)
class Endpoints:
    """Where a running sandbox listens."""

    # connect string including the broker's chroot, where /consumers lives; None once a
    # `sandbox kraft-migrate` stopped ZooKeeper
    zookeeper: str | None
    zk_server: str | None  # the ZooKeeper server without chroot
    bootstrap_server: str  # the ZooKeeper-mode Kafka broker
    kraft_bootstrap_server: str | None = None  # the separate KRaft target cluster, when started
    # security=True: the same broker over SASL_PLAINTEXT (security.SCRAM_USER) and over SSL
    # (client certificate required).
    sasl_bootstrap_server: str | None = None
    ssl_bootstrap_server: str | None = None
    # the CA (PEM) that signed the broker's and the client's certificates
    ssl_cafile: str | None = None
    # the client's certificate and its key, encrypted with tls.TLS_KEY_PASSWORD
    ssl_client_pem: str | None = None
    broker_jmx: str | None = None  # host:port of the broker's JMX (the CLI's sandbox)

    def exports(self) -> str:
        """Shell lines that point the zk2kafka CLI at this sandbox."""
        lines = [f"export ZK2KAFKA_ZOOKEEPER={self.zookeeper}" if self.zookeeper
                 else "unset ZK2KAFKA_ZOOKEEPER   # ZooKeeper was stopped: the cluster left it",
                 f"export ZK2KAFKA_BOOTSTRAP_SERVER={self.bootstrap_server}"]
        if self.kraft_bootstrap_server:
            lines.append(f"export ZK2KAFKA_KRAFT_BOOTSTRAP_SERVER={self.kraft_bootstrap_server}")
        return "\n".join(lines)

    def without_zookeeper(self) -> Endpoints:
        """These endpoints once ZooKeeper is gone (after a migration to KRaft)."""
        return replace(self, zookeeper=None, zk_server=None)


class _Broker(NamedTuple):
    """A started ZooKeeper-mode broker and the host:port it listens on."""

    server: JavaServer
    bootstrap: str


class LocalCluster:
    """ZooKeeper, ZooKeeper-mode Kafka broker(s) and optionally a KRaft Kafka 4, as local JVMs.

    Every server runs in a directory of its own under `home`.

    `kafka_version` is a key of RELEASES (ConfigError otherwise); ZooKeeper runs from the same
    release's bundle. The security listeners exist on the default release only.

    With `brokers` > 1 the ZooKeeper-mode cluster has that many brokers (`kafka`, `kafka-1`, ...),
    `__consumer_offsets` is replicated to all of them and the bootstrap string lists them all;
    fault tests stop one to move group coordinators. `broker_properties` go into every broker's
    server.properties (fault tests shorten `zookeeper.session.timeout.ms`).
    """

    def __init__(self, home: Path, cache_dir: Path, *, kraft: bool = False, attached: bool = True,
                 offsets_partitions: int = 10, zk_heap: str = DEFAULT_HEAP,
                 broker_heap: str = DEFAULT_HEAP,
                 security: bool = False, brokers: int = 1, broker_properties: dict | None = None,
                 kafka_version: str = DEFAULT_KAFKA_VERSION, broker_env: dict | None = None):
        self.release = release(kafka_version)
        if security and self.release.version != DEFAULT_KAFKA_VERSION:
            raise ConfigError(f"the sandbox's SASL and TLS listeners exist on Kafka "
                              f"{DEFAULT_KAFKA_VERSION} only, not {kafka_version}")
        # ZooKeeper holds every znode in heap, brokers every committed offset: a million offsets
        # need more than the default (docs/sandbox.md); every broker, the KRaft one too, gets
        # broker_heap.
        self.zk_heap, self.broker_heap = zk_heap, broker_heap
        self.security = security
        self.brokers = brokers
        self.broker_properties = dict(broker_properties or {})
        # added to the ZooKeeper-mode brokers' environment (tests run one under libfaketime)
        self.broker_env = dict(broker_env or {})
        # The JVMs run in their own directories: relative paths would break.
        self.home = Path(home).resolve()
        self.cache_dir = Path(cache_dir).resolve()
        self.kraft = kraft
        self.attached = attached
        self.offsets_partitions = offsets_partitions
        self.servers: list[JavaServer] = []
        self.endpoints: Endpoints | None = None
        # zookeeper | migration | kraft: where `sandbox kraft-migrate` got to (kraft_migration.py)
        self.mode = "zookeeper"

    def start(self, timeout: float = 120.0) -> Endpoints:
        """Fetch jars if needed, start every server and wait until each answers.

        Returns where the cluster listens; raises SandboxError.
        """
        return self._guarded(self._start, timeout)

    def start_zookeeper(self, timeout: float = 120.0) -> str:
        """Start ZooKeeper alone (benchmarks); returns its host:port."""
        return self._guarded(self._start_zookeeper, timeout)

    def _guarded(self, start, timeout: float):
        if self.attached:
            atexit.register(self.stop)
        try:
            return start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start_zookeeper(self, timeout: float) -> str:
        self._claim_home()
        port = free_port()
        zoo_cfg = {
            "dataDir": self.home / "zookeeper" / "data",
            "clientPort": port, "clientPortAddress": "127.0.0.1",
            "tickTime": 500, "minSessionTimeout": 1000, "maxSessionTimeout": 60000,
            "maxClientCnxns": 0,
            "admin.enableServer": "false", "4lw.commands.whitelist": "*",
            # ZooKeeper 3.4 has no admin server or 4lw whitelist; it turns unknown keys into
            # system properties.
            "DigestAuthenticationProvider.superDigest": super_digest(),
        }
        zk = self._server("zookeeper", ensure_bundle(self.release.bundle, self.cache_dir),
                          "org.apache.zookeeper.server.ZooKeeperServerMain", "zoo.cfg", zoo_cfg,
                          heap=self.zk_heap, jvm_opts=ZK_JVM_OPTS)
        wait_for_server("ZooKeeper", zk, lambda: zk_answers(f"127.0.0.1:{port}"), timeout)
        return f"127.0.0.1:{port}"

    def _start(self, timeout: float) -> Endpoints:
        zk_server = self._start_zookeeper(timeout)
        jars = ensure_bundle(self.release.bundle, self.cache_dir)
        broker_port = free_port()
        plaintext = f"PLAINTEXT://127.0.0.1:{broker_port}"
        secured = secured_listeners(self.home, plaintext) if self.security else None

        # The CLI's sandbox serves the broker's metrics over JMX on loopback, as brokers are
        # watched (kafka-jmx.sh): DeprecatedRequestsPerSec names the old clients.
        jmx = free_port() if not self.attached else None
        broker = self._server("kafka", jars, "kafka.Kafka", "server.properties", {
            "broker.id": 0, "listeners": plaintext,
            "zookeeper.connect": zk_server + BROKER_CHROOT, **self._broker_common("kafka"),
            **(secured.properties if secured else {}),
        }, heap=self.broker_heap, jvm_opts=jmx_opts(jmx) if jmx else None, env=self.broker_env)
        more = self._start_more_brokers(jars, zk_server)
        kraft_bootstrap = self._start_kraft(timeout) if self.kraft else None
        bootstrap = f"127.0.0.1:{broker_port}"
        wait_for_server(f"Kafka {self.release.version} (ZooKeeper mode)", broker,
                        lambda: kafka_ready(bootstrap), timeout)
        if self.security:
            open_secured_listeners(broker, bootstrap, secured.endpoints, timeout)
        bootstrap = ",".join([bootstrap, *self._wait_brokers(more, timeout)])
        self.endpoints = Endpoints(zk_server + BROKER_CHROOT, zk_server, bootstrap, kraft_bootstrap,
                                   **(secured.endpoints if secured else {}),
                                   broker_jmx=f"127.0.0.1:{jmx}" if jmx else None)
        self.save_state()
        return self.endpoints

    def _start_more_brokers(self, jars: list[Path], zk_server: str) -> list[_Broker]:
        """Start brokers 1.. of a multi-broker cluster (`kafka-1`, ...)."""
        started = []
        for n in range(1, self.brokers):
            port = free_port()
            server = self._server(f"kafka-{n}", jars, "kafka.Kafka", "server.properties", {
                "broker.id": n, "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "zookeeper.connect": zk_server + BROKER_CHROOT,
                **self._broker_common(f"kafka-{n}"),
            }, heap=self.broker_heap, env=self.broker_env)
            started.append(_Broker(server, f"127.0.0.1:{port}"))
        return started

    def _wait_brokers(self, started: list[_Broker], timeout: float) -> list[str]:
        """Wait until each of `started` answers; returns their host:port."""
        for broker in started:
            wait_for_server(f"Kafka (ZooKeeper mode) {broker.server.name}", broker.server,
                            lambda b=broker.bootstrap: kafka_ready(b), timeout)
        return [broker.bootstrap for broker in started]

    def _start_kraft(self, timeout: float) -> str:
        jars4 = ensure_bundle("kafka-4", self.cache_dir)
        port, controller = free_port(), free_port()
        props = {
            "process.roles": "broker,controller", "node.id": 1,
            "controller.quorum.voters": f"1@127.0.0.1:{controller}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            **self._broker_common("kraft"),
        }
        workdir = self.home / "kraft"
        workdir.mkdir(parents=True, exist_ok=True)
        write_properties(workdir / "server.properties", props)
        config = str(workdir / "server.properties")
        # A second `up` in the same state dir finds the log dir formatted: the broker refuses any
        # other cluster id, so the stored one is reused (and its data kept).
        cluster_id = _stored_cluster_id(workdir / "data")
        if cluster_id is not None:
            log.info("KRaft: reusing cluster id %s and the data already in %s",
                     cluster_id, workdir / "data")
        else:
            # kafka-storage reads an id starting with "-" (1 in 64) as an option; Kafka's
            # Uuid.randomUuid() redraws too.
            cluster_id = "-"
            while cluster_id.startswith("-"):
                cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            log.info("KRaft: formatting %s with a new cluster id %s", workdir / "data", cluster_id)
        fmt = JavaServer("kraft-format", workdir, jars4, "kafka.tools.StorageTool",
                         ["format", "-t", cluster_id, "-c", config, "--ignore-formatted"])
        fmt.start(self.attached)
        if fmt.process.wait(timeout=timeout) != 0:
            raise SandboxError(f"formatting the KRaft log dir failed: {fmt.cause()} "
                               f"(log: {fmt.log_path})")
        server = JavaServer("kraft", workdir, jars4, "kafka.Kafka", [config], self.broker_heap)
        server.start(self.attached)
        self.servers.append(server)
        bootstrap = f"127.0.0.1:{port}"
        wait_for_server("Kafka (KRaft)", server, lambda: kafka_ready(bootstrap), timeout)
        return bootstrap

    def _broker_common(self, name: str) -> dict:
        replicas = 1 if name == "kraft" else self.brokers   # offsets survive the loss of a broker
        props = {
            "log.dirs": self.home / name / "data",
            "offsets.topic.replication.factor": replicas,
            "offsets.topic.num.partitions": self.offsets_partitions,
            "auto.create.topics.enable": "false", "num.partitions": 1,
            "log.retention.check.interval.ms": 5000,
        }
        # Transactions and the initial rebalance delay came in 0.11: older brokers would warn
        # about unknown keys.
        if name == "kraft" or self.release.line >= (0, 11):
            props.update({"transaction.state.log.replication.factor": 1,
                          "transaction.state.log.min.isr": 1,
                          "group.initial.rebalance.delay.ms": 0})
        return {**props, **self.broker_properties}

    def _server(self, name: str, jars: list[Path], main: str, config_name: str, props: dict,
                heap: str = DEFAULT_HEAP, jvm_opts: list[str] | None = None,
                env: dict | None = None) -> JavaServer:
        workdir = self.home / name
        workdir.mkdir(parents=True, exist_ok=True)
        write_properties(workdir / config_name, props)
        server = JavaServer(name, workdir, jars, main, [str(workdir / config_name)], heap, jvm_opts,
                            env)
        server.start(self.attached)
        self.servers.append(server)
        return server

    def stop(self) -> None:
        """Stop every server, newest first (brokers before ZooKeeper); safe to call twice."""
        for server in reversed(self.servers):
            server.stop()
        (self.home / STATE_FILE).unlink(missing_ok=True)
        if self.attached:
            atexit.unregister(self.stop)

    def _claim_home(self) -> None:
        """Record the release whose data `home` holds.

        Raises SandboxError when another release wrote it.
        """
        self.home.mkdir(parents=True, exist_ok=True)
        refuse_other_release(self.home, self.release.version)
        (self.home / VERSION_FILE).write_text(self.release.version + "\n")

    def save_state(self) -> None:
        """Record the release, mode, endpoints and servers in `<home>/sandbox.json`."""
        state = {"kafka_version": self.release.version, "mode": self.mode,
                 "endpoints": asdict(self.endpoints),
                 "servers": [{"name": s.name, "pid": s.pid, "workdir": str(s.workdir),
                              "heap": s.heap} for s in self.servers]}
        (self.home / STATE_FILE).write_text(json.dumps(state, indent=1))

    @classmethod
    def from_state(cls, home: Path) -> LocalCluster | None:
        """The detached cluster recorded under `home`, or None when there is none."""
        try:
            state = json.loads((Path(home) / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        # A state file from before versions were recorded is the default release's.
        cluster = cls(home, cache_dir=Path(home), attached=False,
                      kafka_version=state.get("kafka_version", DEFAULT_KAFKA_VERSION))
        cluster.endpoints = Endpoints(**state["endpoints"])
        cluster.mode = state.get("mode", "zookeeper")
        for s in state["servers"]:
            # A state file from before heaps were recorded: the heap is not known.
            server = JavaServer(s["name"], Path(s["workdir"]), [], "", [], s.get("heap"))
            server.pid = s["pid"]
            cluster.servers.append(server)
        return cluster

    def status(self) -> dict:
        """Per server: pid, alive, log file; plus the endpoints."""
        return {
            "kafka_version": self.release.version, "mode": self.mode,
            "endpoints": asdict(self.endpoints) if self.endpoints else None,
            "servers": [{"name": s.name, "pid": s.pid, "alive": s.alive(), "heap": s.heap,
                         "log": str(s.log_path)} for s in self.servers],
        }


def _stored_cluster_id(log_dir: Path) -> str | None:
    """The cluster.id of a formatted KRaft log dir, or None when it was never formatted."""
    try:
        text = (log_dir / "meta.properties").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "cluster.id" and value.strip():
            return value.strip()
    return None


def write_properties(path: Path, props: dict) -> None:
    """A Java properties file of `props`, one `key=value` a line."""
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

