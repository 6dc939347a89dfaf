"""One JVM server process (start, stop, why it died) and the waits until a server answers.

An attached JVM gets PR_SET_PDEATHSIG, so it dies with the Python process that started it,
even on `kill -9`; a detached one outlives it and is found again by its pid.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from migrate.processes import pid_alive
from migrate.errors import JvmError

log = logging.getLogger(__name__)

JVM_OPTS = ["-Xms64m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]
DEFAULT_HEAP = "512m"
# -Xmx's own syntax: bytes, or a number with k, m, g or t (either case).
_HEAP = re.compile(r"(\d{1,15})([kmgt]?)", re.IGNORECASE)
_UNIT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
# JVM_OPTS start every heap at 64 MiB: a smaller maximum stops the JVM at its start.
MIN_HEAP = 64 << 20

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


def jmx_opts(port: int) -> list[str]:
    """A JVM's remote JMX on 127.0.0.1:`port` (its RMI server on the same port), no auth."""
    return ["-Dcom.sun.management.jmxremote", f"-Dcom.sun.management.jmxremote.port={port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={port}",
            "-Dcom.sun.management.jmxremote.host=127.0.0.1", "-Djava.rmi.server.hostname=127.0.0.1",
            "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false"]


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


def heap_size(text: str) -> str:
    """`text` as the JVM's -Xmx takes it (`512m`, `4g`, `4096M`, bytes), at least 64 MiB.

    Returns it unchanged; raises ValueError saying what is wrong.
    """
    match = _HEAP.fullmatch(text.strip()) if text.isascii() else None
    if match is None:
        raise ValueError(f"expected a JVM heap size such as 512m or 4g, got {text!r}")
    size = int(match.group(1)) * _UNIT[match.group(2).lower()]
    if size < MIN_HEAP:
        raise ValueError(f"a heap of {text!r} is below the 64m the servers start with")
    return text.strip()


class JavaServer:
    """One JVM: started with its own log file, stopped with SIGTERM and killed after a timeout."""

    def __init__(self, name: str, workdir: Path, classpath: list[Path], main: str, args: list[str],
                 heap: str = DEFAULT_HEAP, jvm_opts: list[str] | None = None,
                 env: dict[str, str] | None = None):
        self.name = name
        self.env = dict(env or {})   # added to the environment it starts in
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
        classpath = os.pathsep.join(map(str, self.classpath))
        return ["java", f"-Xmx{self.heap}", *JVM_OPTS, *self.jvm_opts, *log_opts,
                "-cp", classpath, self.main, *self.args]

    def start(self, attached: bool) -> None:
        (self.workdir / "log4j.properties").write_text(LOG4J1)
        (self.workdir / "log4j2.properties").write_text(LOG4J2)
        parent = os.getpid()
        die_with_parent = (lambda: _die_with_parent(parent)) if attached else None
        with self.log_path.open("ab") as out:
            # A session of its own: a Ctrl-C in the terminal reaches zk2kafka, which then stops
            # the JVM in order.
            self.process = subprocess.Popen(
                self.command(), cwd=self.workdir, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **self.env},
                start_new_session=True, preexec_fn=die_with_parent)
        self.pid = self.process.pid

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return self.pid is not None and pid_alive(self.pid)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def cause(self) -> str:
        """Why the JVM stopped: the log's last error line (first line only), else its last line."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "no log"
        lines = [line.strip() for line in text.splitlines() if line.strip()]
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
            log.warning("%s (pid %d) did not stop in %.0fs; killing it",
                        self.name, self.pid, timeout)
            _signal(self.pid, signal.SIGKILL)
            while self.alive():
                time.sleep(0.05)


def _signal(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the JVM leads its own process group
    except ProcessLookupError:
        pass


def wait_until(what: str, check, timeout: float, alive=lambda: True, logs=lambda: "") -> None:
    """Poll `check()` until true.

    Raises JvmError, one line ending in `logs()`, when `alive()` turns false or time runs out.
    """
    from kafka.errors import KafkaError

    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if not alive():
            raise JvmError(f"{what} exited while starting: {logs()}")
        try:
            if check():
                return
        except (OSError, KafkaError) as e:  # refused, reset, no broker yet: not ready, try again
            last_error = e
        time.sleep(0.25)
    raise JvmError(f"{what} did not answer within {timeout:.0f}s "
                       f"(last error: {last_error}): {logs()}")


def wait_for_server(what: str, server: JavaServer, check, timeout: float) -> None:
    """wait_until `check()` while `server` lives; raises JvmError naming its log."""
    # One line: the log's last error and its path; the broker's config dump stays in the log.
    wait_until(what, check, timeout, server.alive,
               lambda: f"{server.cause()} (log: {server.log_path})")


def zk_answers(host_port: str) -> bool:
    """True when a ZooKeeper server answers the `srvr` four-letter word."""
    host, port = host_port.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2) as s:
        s.sendall(b"srvr")
        return b"Zookeeper version" in s.recv(4096)


def kafka_ready(bootstrap: str, **client_options) -> bool:
    """True when the broker answers metadata and its group coordinator is loaded.

    `client_options` go to kafka-python (the secured listeners' settings).
    """
    from kafka.admin import KafkaAdminClient

    host, port = bootstrap.rsplit(":", 1)
    # Listening yet? Asked quietly, before kafka-python would log its connection errors.
    socket.create_connection((host, int(port)), timeout=2).close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000,
                             client_id="zk2kafka-sandbox", **client_options)
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
