"""A real local cluster: ZooKeeper, a ZooKeeper-mode Kafka broker and, on request, a KRaft Kafka 4 broker.

The ZooKeeper-mode side is any release in RELEASES (3.9.2 by default), with the
ZooKeeper server that release ships; each server is a JVM started from the
pinned jars of the release's bundle (see `artifacts`) on free 127.0.0.1 ports.
With `security=True` (3.9.2 only) the ZooKeeper-mode broker also listens on
SASL_PLAINTEXT (SCRAM-SHA-256 and -512, user `SCRAM_USER`) and on SSL (client
certificates required; a CA, broker and client certificate made with openssl
under `<home>/tls`); brokers still talk to each other over PLAINTEXT. Two
ownership modes:

- attached (tests): every JVM gets PR_SET_PDEATHSIG, so it dies with the Python
  process that started it, even on `kill -9`; `stop()` and an atexit hook end them.
- detached (`zk2kafka sandbox up`): the JVMs outlive the command; their pids and
  ports go to `<home>/sandbox.json` and `zk2kafka sandbox down` ends them.
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from migrate.errors import ConfigError, SandboxError
from migrate.sandbox.artifacts import ensure_bundle

log = logging.getLogger(__name__)

STATE_FILE = "sandbox.json"
VERSION_FILE = "kafka-version"  # which release wrote the data under a sandbox's home; kept after `down`
# A ZooKeeper super user, so tests and `sandbox down` can clean up nodes behind any ACL. Sandbox only.
SUPER_USER = ("zk2kafka-super", "sandbox-only-super-password")
BROKER_CHROOT = "/kafka"
# The secured listeners' credentials (security=True). Sandbox only.
SCRAM_USER = ("zk2kafka-scram", "sandbox-only-scram-password")
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
TLS_KEY_PASSWORD = "sandbox-only-tls-key-password"  # encrypts the client's private key
JVM_OPTS = ["-Xms64m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]
# ZooKeeper registers log4j's MBeans at start; under reload4j that fails on ZooKeeper 3.4, and the sandbox needs none.
ZK_JVM_OPTS = ["-Dzookeeper.jmx.log4j.disable=true"]


@dataclass(frozen=True)
class Release:
    """A ZooKeeper-mode Kafka release the sandbox runs: its jars' bundle and the ZooKeeper it ships."""

    version: str
    bundle: str
    zookeeper: str

    @property
    def line(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)


RELEASES = {r.version: r for r in (
    Release("0.10.2.2", "kafka-0.10", "3.4.9"),
    Release("1.1.1", "kafka-1.1", "3.4.10"),
    Release("2.4.1", "kafka-2.4", "3.5.7"),
    Release("2.8.2", "kafka-2.8", "3.5.9"),
    Release("3.6.2", "kafka-3.6", "3.8.4"),
    Release("3.9.2", "kafka-3.9", "3.8.4"),
)}
DEFAULT_KAFKA_VERSION = "3.9.2"
KRAFT_VERSION = "4.1.2"  # the kafka-4 bundle


def release(version: str) -> Release:
    """The Release of `version`; raises ConfigError (a usage error) naming the supported ones."""
    try:
        return RELEASES[version]
    except KeyError:
        raise ConfigError(f"unsupported Kafka version {version!r} for the sandbox; "
                          f"supported: {', '.join(RELEASES)}") from None

LOG4J1 = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
"""
LOG4J2 = """status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
"""


@dataclass(frozen=True)
class Endpoints:
    """Where a running sandbox listens."""

    zookeeper: str  # connect string including the broker's chroot, where /consumers lives
    zk_server: str  # the ZooKeeper server without chroot
    bootstrap_server: str  # the ZooKeeper-mode Kafka broker
    kraft_bootstrap_server: str | None = None  # the separate KRaft target cluster, when started
    # security=True: the same broker over SASL_PLAINTEXT (SCRAM_USER) and over SSL (client certificate required).
    sasl_bootstrap_server: str | None = None
    ssl_bootstrap_server: str | None = None
    ssl_cafile: str | None = None  # the CA (PEM) that signed the broker's and the client's certificates
    ssl_client_pem: str | None = None  # the client's certificate and its key, encrypted with TLS_KEY_PASSWORD

    def exports(self) -> str:
        """Shell lines that point the zk2kafka CLI at this sandbox."""
        lines = [f"export ZK2KAFKA_ZOOKEEPER={self.zookeeper}",
                 f"export ZK2KAFKA_BOOTSTRAP_SERVER={self.bootstrap_server}"]
        if self.kraft_bootstrap_server:
            lines.append(f"export ZK2KAFKA_KRAFT_BOOTSTRAP_SERVER={self.kraft_bootstrap_server}")
        return "\n".join(lines)


def super_digest() -> str:
    """The `user:hash` form ZooKeeper's superDigest property takes, for SUPER_USER."""
    from kazoo.security import make_digest_acl_credential

    return make_digest_acl_credential(*SUPER_USER)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent(parent_pid: int) -> None:
    """Runs in the forked child before exec: ask Linux to SIGKILL it when the parent dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the atexit hook remains
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


class JavaServer:
    """One JVM: started with its own log file, stopped with SIGTERM and killed after a timeout."""

    def __init__(self, name: str, workdir: Path, classpath: list[Path], main: str, args: list[str],
                 heap: str = "512m", jvm_opts: list[str] | None = None):
        self.name = name
        self.heap = heap
        self.jvm_opts = list(jvm_opts or [])
        self.workdir = workdir
        self.classpath = classpath
        self.main = main
        self.args = args
        self.process: subprocess.Popen | None = None
        self.pid: int | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def command(self) -> list[str]:
        log_opts = [f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}",
                    f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}"]
        return ["java", f"-Xmx{self.heap}", *JVM_OPTS, *self.jvm_opts, *log_opts, "-cp",
                os.pathsep.join(map(str, self.classpath)), self.main, *self.args]

    def start(self, attached: bool) -> None:
        (self.workdir / "log4j.properties").write_text(LOG4J1)
        (self.workdir / "log4j2.properties").write_text(LOG4J2)
        parent = os.getpid()
        with self.log_path.open("ab") as out:
            # A session of its own: a Ctrl-C in the terminal reaches zk2kafka, which then stops the JVM in order.
            self.process = subprocess.Popen(
                self.command(), cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=(lambda: _die_with_parent(parent)) if attached else None)
        self.pid = self.process.pid

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return self.pid is not None and _pid_alive(self.pid)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def cause(self) -> str:
        """The last error line of the log (its first line only), or its last line: why the JVM stopped."""
        try:
            lines = [line.strip() for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return "no log"
        errors = [line for line in lines if " ERROR " in line or " FATAL " in line
                  or "Exception" in line.split(" ", 1)[0] or line.startswith("Error:")]
        line = (errors or lines or ["empty log"])[-1]
        return line if len(line) <= 300 else line[:297] + "..."

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, wait up to `timeout` seconds for a clean shutdown, then SIGKILL."""
        if self.pid is None or not self.alive():
            return
        _signal(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.alive():
            log.warning("%s (pid %d) did not stop in %.0fs; killing it", self.name, self.pid, timeout)
            _signal(self.pid, signal.SIGKILL)
            while self.alive():
                time.sleep(0.05)


def _signal(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the JVM leads its own process group
    except ProcessLookupError:
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def wait_until(what: str, check, timeout: float, alive=lambda: True, logs=lambda: "") -> None:
    """Poll `check()` until true; raise SandboxError, one line ending in `logs()`, if it dies or times out."""
    from kafka.errors import KafkaError

    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if not alive():
            raise SandboxError(f"{what} exited while starting: {logs()}")
        try:
            if check():
                return
        except (OSError, KafkaError) as e:  # refused, reset, no broker yet: not ready, try again
            last_error = e
        time.sleep(0.25)
    raise SandboxError(f"{what} did not answer within {timeout:.0f}s (last error: {last_error}): {logs()}")


def _wait(what: str, server: JavaServer, check, timeout: float) -> None:
    # One line: the log's last error and its path; the broker's config dump stays in the log.
    wait_until(what, check, timeout, server.alive, lambda: f"{server.cause()} (log: {server.log_path})")


def zk_answers(host_port: str) -> bool:
    """True when a ZooKeeper server answers the `srvr` four-letter word."""
    host, port = host_port.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2) as s:
        s.sendall(b"srvr")
        return b"Zookeeper version" in s.recv(4096)


def kafka_ready(bootstrap: str, **client_options) -> bool:
    """True when the broker answers metadata and its group coordinator is loaded (`client_options`: security)."""
    from kafka.admin import KafkaAdminClient

    host, port = bootstrap.rsplit(":", 1)
    socket.create_connection((host, int(port)), timeout=2).close()  # listening yet? (quietly, before kafka-python)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000, client_id="zk2kafka-sandbox",
                             **client_options)
    try:
        # Metadata, not DescribeCluster: brokers before 2.8 lack it, and kafka-python 3.0.12 cannot
        # parse the v0 answer of 2.8-3.6 (KeyError 'endpoint_type').
        admin.list_topics()
        # Describing a group makes the broker create __consumer_offsets and load its coordinator,
        # so the first real commit does not race the coordinator's start-up.
        admin.describe_groups(["zk2kafka-sandbox-probe"])
        return True
    finally:
        admin.close()


class LocalCluster:
    """ZooKeeper + ZooKeeper-mode Kafka broker(s) (+ optional KRaft Kafka 4) as local JVMs under `home`.

    `kafka_version` is a key of RELEASES (ConfigError otherwise); ZooKeeper runs from the same
    release's bundle. The security listeners exist on the default release only.

    With `brokers` > 1 the ZooKeeper-mode cluster has that many brokers (`kafka`, `kafka-1`, ...),
    `__consumer_offsets` is replicated to all of them and the bootstrap string lists them all;
    fault tests stop one to move group coordinators. `broker_properties` go into every broker's
    server.properties (fault tests shorten `zookeeper.session.timeout.ms`).
    """

    def __init__(self, home: Path, cache_dir: Path, *, kraft: bool = False, attached: bool = True,
                 offsets_partitions: int = 10, zk_heap: str = "512m", broker_heap: str = "512m",
                 security: bool = False, brokers: int = 1, broker_properties: dict | None = None,
                 kafka_version: str = DEFAULT_KAFKA_VERSION):
        self.release = release(kafka_version)
        if security and self.release.version != DEFAULT_KAFKA_VERSION:
            raise ConfigError(f"the sandbox's SASL and TLS listeners exist on Kafka {DEFAULT_KAFKA_VERSION} only, "
                              f"not {kafka_version}")
        self.zk_heap, self.broker_heap = zk_heap, broker_heap  # brokers hold every committed offset in heap
        self.security = security
        self._secured: dict[str, str] = {}  # the secured listeners' Endpoints fields, once chosen
        self.brokers = brokers
        self.broker_properties = dict(broker_properties or {})
        self.home = Path(home).resolve()  # the JVMs run in their own directories: relative paths would break
        self.cache_dir = Path(cache_dir).resolve()
        self.kraft = kraft
        self.attached = attached
        self.offsets_partitions = offsets_partitions
        self.servers: list[JavaServer] = []
        self.endpoints: Endpoints | None = None

    def start(self, timeout: float = 120.0) -> Endpoints:
        """Fetch jars if needed, start every server, wait until each answers; raises SandboxError."""
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
        zk = self._server("zookeeper", ensure_bundle(self.release.bundle, self.cache_dir),
                          "org.apache.zookeeper.server.ZooKeeperServerMain", "zoo.cfg", {
            "dataDir": self.home / "zookeeper" / "data", "clientPort": port, "clientPortAddress": "127.0.0.1",
            "tickTime": 500, "minSessionTimeout": 1000, "maxSessionTimeout": 60000, "maxClientCnxns": 0,
            "admin.enableServer": "false", "4lw.commands.whitelist": "*",
            # ZooKeeper 3.4 has no admin server or 4lw whitelist; it turns unknown keys into system properties.
            "DigestAuthenticationProvider.superDigest": super_digest(),
        }, heap=self.zk_heap, jvm_opts=ZK_JVM_OPTS)
        _wait("ZooKeeper", zk, lambda: zk_answers(f"127.0.0.1:{port}"), timeout)
        return f"127.0.0.1:{port}"

    def _start(self, timeout: float) -> Endpoints:
        zk_server = self._start_zookeeper(timeout)
        jars = ensure_bundle(self.release.bundle, self.cache_dir)
        broker_port = free_port()

        broker = self._server("kafka", jars, "kafka.Kafka", "server.properties", {
            "broker.id": 0, "listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
            "zookeeper.connect": zk_server + BROKER_CHROOT, **self._broker_common("kafka"),
            **(self._secured_listeners(f"PLAINTEXT://127.0.0.1:{broker_port}") if self.security else {}),
        }, heap=self.broker_heap)
        more = self._start_more_brokers(jars, zk_server)
        kraft_bootstrap = self._start_kraft(timeout) if self.kraft else None
        bootstrap = f"127.0.0.1:{broker_port}"
        _wait(f"Kafka {self.release.version} (ZooKeeper mode)", broker, lambda: kafka_ready(bootstrap), timeout)
        if self.security:
            self._secure(broker, bootstrap, timeout)
        bootstrap = ",".join([bootstrap, *self._wait_brokers(more, timeout)])
        self.endpoints = Endpoints(zk_server + BROKER_CHROOT, zk_server, bootstrap, kraft_bootstrap,
                                   **self._secured)
        self._save_state()
        return self.endpoints

    def _start_more_brokers(self, jars: list[Path], zk_server: str) -> list[tuple[JavaServer, str]]:
        """Start brokers 1.. of a multi-broker cluster (`kafka-1`, ...); each with its host:port."""
        started = []
        for n in range(1, self.brokers):
            port = free_port()
            server = self._server(f"kafka-{n}", jars, "kafka.Kafka", "server.properties", {
                "broker.id": n, "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "zookeeper.connect": zk_server + BROKER_CHROOT, **self._broker_common(f"kafka-{n}"),
            })
            started.append((server, f"127.0.0.1:{port}"))
        return started

    def _wait_brokers(self, started: list[tuple[JavaServer, str]], timeout: float) -> list[str]:
        for server, bootstrap in started:
            _wait(f"Kafka (ZooKeeper mode) {server.name}", server, lambda b=bootstrap: kafka_ready(b), timeout)
        return [bootstrap for _, bootstrap in started]

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
        _write_properties(workdir / "server.properties", props)
        # A second `up` in the same state dir finds the log dir formatted: the broker refuses any other
        # cluster id, so the stored one is reused (and its data kept).
        cluster_id = _stored_cluster_id(workdir / "data")
        if cluster_id is not None:
            log.info("KRaft: reusing cluster id %s and the data already in %s", cluster_id, workdir / "data")
        else:
            # kafka-storage reads an id starting with "-" (1 in 64) as an option; Kafka's Uuid.randomUuid() redraws too.
            cluster_id = "-"
            while cluster_id.startswith("-"):
                cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            log.info("KRaft: formatting %s with a new cluster id %s", workdir / "data", cluster_id)
        fmt = JavaServer("kraft-format", workdir, jars4, "kafka.tools.StorageTool",
                         ["format", "-t", cluster_id, "-c", str(workdir / "server.properties"), "--ignore-formatted"])
        fmt.start(self.attached)
        if fmt.process.wait(timeout=timeout) != 0:
            raise SandboxError(f"formatting the KRaft log dir failed: {fmt.cause()} (log: {fmt.log_path})")
        server = JavaServer("kraft", workdir, jars4, "kafka.Kafka", [str(workdir / "server.properties")])
        server.start(self.attached)
        self.servers.append(server)
        bootstrap = f"127.0.0.1:{port}"
        _wait("Kafka (KRaft)", server, lambda: kafka_ready(bootstrap), timeout)
        return bootstrap

    def _secured_listeners(self, plaintext: str) -> dict:
        """Broker properties adding a SASL_PLAINTEXT (SCRAM) and an SSL listener beside `plaintext`."""
        tls = make_tls(self.home / "tls")
        sasl, ssl = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
        self._secured = {"sasl_bootstrap_server": sasl, "ssl_bootstrap_server": ssl,
                         "ssl_cafile": str(tls["ca"]), "ssl_client_pem": str(tls["client"])}
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        return {
            "listeners": f"{plaintext},SASL_PLAINTEXT://{sasl},SSL://{ssl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": ",".join(SCRAM_MECHANISMS),
            **{f"listener.name.sasl_plaintext.{m.lower()}.sasl.jaas.config": scram for m in SCRAM_MECHANISMS},
            "listener.name.ssl.ssl.keystore.type": "PEM", "listener.name.ssl.ssl.keystore.location": tls["broker"],
            "listener.name.ssl.ssl.truststore.type": "PEM", "listener.name.ssl.ssl.truststore.location": tls["ca"],
            "listener.name.ssl.ssl.client.auth": "required",
        }

    def _secure(self, broker: JavaServer, bootstrap: str, timeout: float) -> None:
        """Create SCRAM_USER (over PLAINTEXT), then wait until it logs in and the SSL listener answers."""
        from kafka.admin import KafkaAdminClient, UserScramCredentialUpsertion

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="zk2kafka-sandbox")
        try:
            errors = admin.alter_user_scram_credentials(
                [UserScramCredentialUpsertion(SCRAM_USER[0], m, SCRAM_USER[1]) for m in SCRAM_MECHANISMS])
        finally:
            admin.close()
        if any(errors.values()):
            raise SandboxError(f"creating the SCRAM user failed: {errors}")
        # In ZooKeeper mode the broker learns of the user through a ZooKeeper watch: log in until it has.
        sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": SCRAM_MECHANISMS[0],
                "sasl_plain_username": SCRAM_USER[0], "sasl_plain_password": SCRAM_USER[1]}
        _wait("Kafka SASL_PLAINTEXT listener", broker,
              lambda: kafka_ready(self._secured["sasl_bootstrap_server"], **sasl), timeout)
        pem = self._secured["ssl_client_pem"]
        ssl = {"security_protocol": "SSL", "ssl_cafile": self._secured["ssl_cafile"], "ssl_certfile": pem,
               "ssl_keyfile": pem, "ssl_password": TLS_KEY_PASSWORD}
        _wait("Kafka SSL listener", broker, lambda: kafka_ready(self._secured["ssl_bootstrap_server"], **ssl), timeout)

    def _broker_common(self, name: str) -> dict:
        replicas = 1 if name == "kraft" else self.brokers   # offsets survive the loss of a broker
        props = {
            "log.dirs": self.home / name / "data",
            "offsets.topic.replication.factor": replicas, "offsets.topic.num.partitions": self.offsets_partitions,
            "auto.create.topics.enable": "false", "num.partitions": 1, "log.retention.check.interval.ms": 5000,
        }
        # Transactions and the initial rebalance delay came in 0.11: older brokers would warn about unknown keys.
        if name == "kraft" or self.release.line >= (0, 11):
            props.update({"transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1,
                          "group.initial.rebalance.delay.ms": 0})
        return {**props, **self.broker_properties}

    def _server(self, name: str, jars: list[Path], main: str, config_name: str, props: dict,
                heap: str = "512m", jvm_opts: list[str] | None = None) -> JavaServer:
        workdir = self.home / name
        workdir.mkdir(parents=True, exist_ok=True)
        _write_properties(workdir / config_name, props)
        server = JavaServer(name, workdir, jars, main, [str(workdir / config_name)], heap, jvm_opts)
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
        """Record the release whose data `home` holds; refuse data another release wrote (SandboxError)."""
        self.home.mkdir(parents=True, exist_ok=True)
        refuse_other_release(self.home, self.release.version)
        (self.home / VERSION_FILE).write_text(self.release.version + "\n")

    def _save_state(self) -> None:
        state = {"kafka_version": self.release.version, "endpoints": asdict(self.endpoints), "servers": [
            {"name": s.name, "pid": s.pid, "workdir": str(s.workdir)} for s in self.servers]}
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
        for s in state["servers"]:
            server = JavaServer(s["name"], Path(s["workdir"]), [], "", [])
            server.pid = s["pid"]
            cluster.servers.append(server)
        return cluster

    def status(self) -> dict:
        """Per server: pid, alive, log file; plus the endpoints."""
        return {
            "kafka_version": self.release.version,
            "endpoints": asdict(self.endpoints) if self.endpoints else None,
            "servers": [{"name": s.name, "pid": s.pid, "alive": s.alive(), "log": str(s.log_path)}
                        for s in self.servers],
        }


def make_tls(directory: Path) -> dict[str, Path]:
    """A CA, a broker certificate for 127.0.0.1/localhost and a client certificate, as PEM files, with openssl.

    Returns {"ca": CA certificate, "broker": broker key + certificate, "client": client key + certificate};
    the client's key is encrypted with TLS_KEY_PASSWORD. Raises SandboxError when openssl fails.
    """
    directory.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ZK2KAFKA_SANDBOX_KEY_PASSWORD": TLS_KEY_PASSWORD}  # never on a command line
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]

    def openssl(*args: str) -> None:
        try:
            done = subprocess.run(["openssl", *args], cwd=directory, env=env, capture_output=True, text=True,
                                  timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxError(f"openssl is needed for the sandbox's TLS listener: {e}") from None
        if done.returncode != 0:
            raise SandboxError(f"openssl {args[0]} failed: {done.stderr.strip()}")

    openssl("req", "-x509", *ec, "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "7",
            "-subj", "/CN=zk2kafka sandbox CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, extensions in (("broker", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
                             ("client", "extendedKeyUsage=clientAuth\n")):
        (directory / f"{name}.ext").write_text(extensions)
        # Java 17 cannot read OpenSSL 3's encrypted PKCS#8 (PBES2/AES), so the broker's key stays in the clear.
        protect = ["-passout", "env:ZK2KAFKA_SANDBOX_KEY_PASSWORD"] if name == "client" else ["-nodes"]
        openssl("req", *ec, "-keyout", f"{name}-key.pem", *protect, "-out", f"{name}.csr",
                "-subj", f"/CN=zk2kafka-sandbox-{name}")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                "-days", "7", "-extfile", f"{name}.ext", "-out", f"{name}-cert.pem")
        pem = directory / f"{name}.pem"
        pem.write_text((directory / f"{name}-key.pem").read_text() + (directory / f"{name}-cert.pem").read_text())
        pem.chmod(0o600)
    return {"ca": directory / "ca.pem", "broker": directory / "broker.pem", "client": directory / "client.pem"}


def recorded_version(home: Path) -> str | None:
    """The release whose data a sandbox home holds (written by its first start), or None for a fresh home."""
    try:
        return (Path(home) / VERSION_FILE).read_text().strip() or None
    except OSError:
        return None


def refuse_other_release(home: Path, version: str) -> None:
    """Raise SandboxError when `home` holds the data of another release than `version` (no downgrades, no mixes)."""
    written = recorded_version(home)
    if written is not None and written != version:
        raise SandboxError(f"{home} holds the data of a Kafka {written} sandbox, not {version}; "
                           f"use another --state-dir, or remove {home} to start clean")


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


def _write_properties(path: Path, props: dict) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

