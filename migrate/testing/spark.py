"""A real Spark standalone cluster, one master and one worker, from the installed pyspark package.

For tests and benchmarks of the distributed path: `run_diff(..., master=spark.master_url)` then
runs its tasks in executor JVMs the worker launches, exactly as on a production standalone cluster.

Both daemons start through the package's own `bin/spark-class`, so they get the JVM flags Spark
needs on Java 17+ (module opens, Netty options) from Spark itself, as `start-master.sh` would.
Each one is a `JavaServer` (migrate/jvm/server.py): its own log file under `home`, SIGTERM then
SIGKILL, and when attached PR_SET_PDEATHSIG plus an atexit hook, so no daemon outlives the Python
process that started it.
"""

from __future__ import annotations

import atexit
import json
import sys
import urllib.request
from pathlib import Path

from migrate.errors import JvmError
from migrate.jvm.server import JVM_OPTS, JavaServer, free_port, wait_until

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """The pyspark package directory, which holds `bin/spark-class` and `jars/`.

    Raises JvmError when it holds neither.
    """
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
        raise JvmError(f"{home} is not a Spark home: no bin/spark-class or jars/")
    return home


class _SparkDaemon(JavaServer):
    """A JavaServer launched through spark-class, with Spark's environment added to ours."""

    def __init__(self, name: str, workdir: Path, main: str, args: list[str],
                 env: dict[str, str], heap: str):
        super().__init__(name, workdir, [], main, args, heap)
        self.env = env

    def command(self) -> list[str]:
        # JavaServer.start hands its environment down unchanged; `env` adds Spark's variables,
        # then execs spark-class, which execs the JVM: the pid JavaServer signals (and
        # PR_SET_PDEATHSIG) stays the daemon's.
        java_opts = [*JVM_OPTS,
                     f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}"]
        env = {**self.env, "SPARK_DAEMON_MEMORY": self.heap,
               "SPARK_DAEMON_JAVA_OPTS": " ".join(java_opts)}
        return ["env", *(f"{k}={v}" for k, v in env.items()),
                str(Path(env["SPARK_HOME"]) / "bin" / "spark-class"), self.main, *self.args]


class StandaloneSpark:
    """Spark master + one worker on free 127.0.0.1 ports, logs under `home`; a context manager.

    `with StandaloneSpark(home) as spark: run_diff(..., master=spark.master_url)`.
    """

    def __init__(self, home: Path, *, cores: int = 2, memory: str = "1g", daemon_heap: str = "256m",
                 attached: bool = True):
        self.home = Path(home).resolve()
        self.cores = cores
        self.memory = memory
        self.daemon_heap = daemon_heap
        self.attached = attached
        self.servers: list[_SparkDaemon] = []
        self.master_url: str | None = None
        self.master_ui: str | None = None
        self.worker_dir = self.home / "worker" / "work"

    def __enter__(self) -> StandaloneSpark:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float = 90.0) -> str:
        """Start master and worker, wait until the worker has registered; returns the master URL.

        Raises JvmError (with the daemons' last log lines) if either exits or the worker does
        not register within `timeout` seconds; whatever started is stopped again.
        """
        if self.attached:
            atexit.register(self.stop)
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> str:
        home = spark_home()
        # Our own conf dir, so a spark-env.sh or spark-defaults.conf in the package cannot leak in.
        conf_dir = self.home / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        # The master's REST submission server listens on the fixed port 6066: two clusters would
        # collide.
        (conf_dir / "spark-defaults.conf").write_text("spark.master.rest.enabled false\n")
        local_dirs = self.home / "worker" / "local"  # executors' shuffle and block files, not /tmp
        for d in (self.worker_dir, local_dirs):
            d.mkdir(parents=True, exist_ok=True)
        env = {"SPARK_HOME": str(home), "SPARK_CONF_DIR": str(conf_dir),
               "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_DIRS": str(local_dirs),
               # Executors inherit the worker's environment: a Python worker, if a job needs one,
               # runs this venv.
               "PYSPARK_PYTHON": sys.executable}

        port, ui_port = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{port}"
        self.master_ui = f"http://127.0.0.1:{ui_port}"
        self._daemon("master", MASTER_CLASS, ["--host", "127.0.0.1", "--port", str(port),
                                              "--webui-port", str(ui_port)], env)
        self._daemon("worker", WORKER_CLASS, [
            "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
            "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(self.worker_dir),
            self.master_url], env)
        wait_until("Spark standalone master + worker", self._worker_registered, timeout,
                   alive=lambda: all(s.alive() for s in self.servers), logs=self._log_tails)
        return self.master_url

    def _worker_registered(self) -> bool:
        try:
            return self.state().get("aliveworkers", 0) >= 1
        except ValueError:
            # Seen: while starting, the UI serves its HTML page for /json/; not ready yet.
            return False

    def _daemon(self, name: str, main: str, args: list[str], env: dict[str, str]) -> None:
        workdir = self.home / name
        workdir.mkdir(parents=True, exist_ok=True)
        server = _SparkDaemon(name, workdir, main, args, env, self.daemon_heap)
        server.start(self.attached)
        self.servers.append(server)

    def state(self) -> dict:
        """The master's status JSON (`aliveworkers`, `activeapps`, `completedapps`, ...).

        Raises OSError when the master does not answer, ValueError when the answer is not JSON.
        """
        if self.master_ui is None:
            raise JvmError("the Spark master has not been started")
        with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=5) as answer:
            return json.load(answer)

    def _log_tails(self) -> str:
        return "\n".join(f"{s.log_path}:\n{s.log_tail()}" for s in self.servers)

    def stop(self) -> None:
        """Stop the worker (and with it its executors), then the master; safe to call twice."""
        for server in reversed(self.servers):
            server.stop()
        if self.attached:
            atexit.unregister(self.stop)
