"""Kafka's own migration of a ZooKeeper-mode sandbox to KRaft, in place (KIP-866), as Kafka 3.9's
operations guide gives it ("ZooKeeper to KRaft Migration"), in its three phases:

- `migration` (steps 1-5): a KRaft controller, formatted with the cluster's id (ZooKeeper's
  /cluster/id) and started with `zookeeper.metadata.migration.enable=true` and the brokers'
  `zookeeper.connect`; the broker restarted in migration mode (the same config plus the migration
  flag, the controller quorum and `inter.broker.protocol.version` 3.9); the controller copies the
  metadata from ZooKeeper (`ZkMigrationClient.readAllMetadata`: topics, configs, quotas, SCRAM
  credentials, ACLs, the producer-id block, delegation tokens, nothing under /consumers), done
  when ZooKeeper's /migration znode carries a KRaft metadata offset
  (`ZkMigrationLeadershipState.initialZkMigrationComplete`: kraft_metadata_offset > 0). The KRaft
  controller is the metadata's truth now and writes every change back to ZooKeeper (dual-write),
  so a revert to ZooKeeper mode stays possible;
- `kraft` (step 6): the broker restarted as a KRaft broker (`process.roles=broker`, `node.id` =
  its broker.id, no ZooKeeper settings); from here a v0 OffsetCommit is refused; the controller
  still writes ZooKeeper, and Kafka's guide can still go back to ZooKeeper mode;
- `finalized` (step 7): the controller restarted without the migration flag: it finalizes
  (writes POST_MIGRATION and logs "Completing the ZK migration"); from here there is no way back
  to ZooKeeper; then (step 8) ZooKeeper stopped, unless kept.

`sandbox kraft-migrate --to PHASE` stops after that phase, and a later call goes on from where the
last one stopped, so the check between phases can be practised. Only the 3.9.2 sandbox with one
broker (what `zk2kafka sandbox up` starts) is migrated. The mode the cluster is in is recorded
after each step, so `sandbox status` and `sandbox down` know every server, also after a step
failed.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from migrate.errors import JvmError, SandboxError
from migrate.sandbox.cluster import Endpoints, LocalCluster, write_properties
from migrate.jvm.server import (JavaServer, free_port, jmx_opts, kafka_ready, wait_for_server,
                                 wait_until)
from migrate.jvm.releases import DEFAULT_KAFKA_VERSION
from migrate.sandbox.modes import (KRAFT, KRAFT_BROKERS, MIGRATED_FILE, MIGRATING, MIGRATION,
                                   PHASES, ZOOKEEPER, phase_of)

log = logging.getLogger(__name__)

CONTROLLER_ID = 3000   # brokers and controllers share one id space: far from the brokers' 0..n
CONTROLLER = "kraft-controller"
# The last step of each phase (the steps are numbered across the whole migration).
LAST_STEP = {MIGRATION: 5, KRAFT_BROKERS: 6, KRAFT: 7}
MIGRATION_ONLY = ("zookeeper.metadata.migration.enable", "zookeeper.connect")


class Migration:
    """The migration of one detached sandbox, phase by phase; `run()` leaves `cluster` (its
    servers, mode and endpoints) as the cluster is afterwards, recorded in its state file."""

    def __init__(self, cluster: LocalCluster, jars: list[Path], timeout: float = 120.0):
        self.cluster, self.jars, self.timeout = cluster, jars, timeout
        self.home = cluster.home
        self.broker = _server(cluster, "kafka")
        self.endpoints = cluster.endpoints
        self.step, self.steps = 0, 0
        self.controller_dir = self.home / CONTROLLER
        self.config = self.controller_dir / "controller.properties"
        self.broker_config = self.broker.workdir / "server.properties"

    def run(self, to: str, keep_zookeeper: bool) -> None:
        """Go on from the mode the sandbox is in up to phase `to` (a key of PHASES); once
        finalized, stop ZooKeeper unless `keep_zookeeper`. Raises SandboxError, one line naming
        the step that failed and its log."""
        target = PHASES[to]
        stop_zk = target == KRAFT and not keep_zookeeper
        self.steps = LAST_STEP[target] + stop_zk
        phases = ((ZOOKEEPER, self._to_migration), (MIGRATION, self._to_kraft_brokers),
                  (KRAFT_BROKERS, self._finalize))
        for (start, phase), reached in zip(phases, LAST_STEP):
            if self.cluster.mode == start:
                self.step = {ZOOKEEPER: 0, **LAST_STEP}[start]
                self._mode(MIGRATING)
                phase()
                self._mode(reached)
                log.info("kraft-migrate: phase %s done", phase_of(reached))
            if reached == target:
                break
        if stop_zk:
            with self._step("stop ZooKeeper", _server(self.cluster, "zookeeper")):
                stop_zookeeper(self.cluster)

    def _to_migration(self) -> None:
        zk = _server(self.cluster, "zookeeper")
        with self._step("read the cluster id from ZooKeeper", zk):
            cluster_id = self._cluster_id()
        port = free_port()
        controller = {
            "process.roles": "controller", "node.id": CONTROLLER_ID,
            "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{port}",
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": self.controller_dir / "data",
            # the migration: ZooKeeper as the brokers see it, and their listener for its RPCs
            "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": self.endpoints.zookeeper,
            "inter.broker.listener.name": "PLAINTEXT",
        }
        self.controller_dir.mkdir(parents=True, exist_ok=True)
        write_properties(self.config, controller)
        fmt = JavaServer("kraft-controller-format", self.controller_dir, self.jars,
                         "kafka.tools.StorageTool", format_args(cluster_id, self.config))
        with self._step("format the KRaft controller's log dir", fmt):
            fmt.start(attached=False)
            if fmt.process.wait(timeout=self.timeout) != 0:
                raise SandboxError(f"kafka-storage format exited {fmt.process.returncode}: "
                                   f"{fmt.cause()}")
        server = self._controller_server()
        with self._step("start the KRaft controller in migration mode", server):
            server.start(attached=False)
            self.cluster.servers.insert(1, server)
            self.cluster.save_state()
            wait_until("the KRaft controller", lambda: _listens(port), self.timeout,
                       server.alive, server.cause)
        zk_mode = _read_properties(self.broker_config)
        with self._step("restart the broker in migration mode", self.broker):
            write_properties(self.broker_config, {**zk_mode, **self._quorum(),
                                                  "zookeeper.metadata.migration.enable": "true",
                                                  "inter.broker.protocol.version": "3.9"})
            self._restart_broker()
        with self._step("wait until the controller has migrated the metadata", server):
            wait_until("the metadata migration", self._migrated, self.timeout,
                       server.alive, server.cause)

    def _to_kraft_brokers(self) -> None:
        with self._step("restart the broker as a KRaft broker", self.broker):
            migration_mode = _read_properties(self.broker_config)
            kraft = {k: v for k, v in migration_mode.items()
                     if not k.startswith("zookeeper.")
                     and k not in ("broker.id", "inter.broker.protocol.version")}
            write_properties(self.broker_config, {"process.roles": "broker",
                                                  "node.id": migration_mode["broker.id"],
                                                  **kraft, **self._quorum()})
            self._restart_broker()

    def _finalize(self) -> None:
        old = _server(self.cluster, CONTROLLER)
        server = self._controller_server()
        with self._step("restart the controller without migration (finalize)", old):
            old.stop()
            controller = _read_properties(self.config)
            write_properties(self.config, {k: v for k, v in controller.items()
                                           if k not in MIGRATION_ONLY})
            server.start(attached=False)
            self.cluster.servers[self.cluster.servers.index(old)] = server
            self.cluster.save_state()
            wait_until("the controller to finalize the migration", lambda: _finalized(server),
                       self.timeout, server.alive, server.cause)
            wait_for_server("the KRaft broker", self.broker,
                            lambda: kafka_ready(self.endpoints.bootstrap_server), self.timeout)
        (self.home / MIGRATED_FILE).write_text("kraft\n")

    def _mode(self, mode: str) -> None:
        self.cluster.mode = mode
        self.cluster.save_state()

    @contextmanager
    def _step(self, what: str, server: JavaServer) -> Iterator[None]:
        self.step += 1
        log.info("kraft-migrate: step %d of %d: %s", self.step, self.steps, what)
        try:
            yield
        except (JvmError, OSError, KazooException, KazooTimeoutError, ValueError) as exc:
            cause = str(exc) if "(log: " in str(exc) else f"{exc} (log: {server.log_path})"
            raise SandboxError(f"kraft-migrate, step {self.step} of {self.steps} ({what}) failed: "
                               f"{cause}") from exc

    def _controller_server(self) -> JavaServer:
        return JavaServer(CONTROLLER, self.controller_dir, self.jars, "kafka.Kafka",
                          [str(self.config)], "384m")

    def _quorum(self) -> dict[str, str]:
        """What a broker needs to find the controller quorum (from the controller's config)."""
        return {"controller.quorum.voters":
                _read_properties(self.config)["controller.quorum.voters"],
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"}

    def _restart_broker(self) -> None:
        self.broker.stop()
        index = self.cluster.servers.index(self.broker)
        self.broker = JavaServer("kafka", self.broker.workdir, self.jars, "kafka.Kafka",
                                 [str(self.broker_config)], "512m", _broker_jmx(self.endpoints))
        self.broker.start(attached=False)
        self.cluster.servers[index] = self.broker
        self.cluster.save_state()
        wait_for_server("the broker", self.broker,
                        lambda: kafka_ready(self.endpoints.bootstrap_server), self.timeout)

    def _zookeeper(self) -> KazooClient:
        client = KazooClient(hosts=self.endpoints.zookeeper, timeout=10)
        client.start(timeout=15)
        return client

    def _cluster_id(self) -> str:
        client = self._zookeeper()
        try:
            return json.loads(client.get("/cluster/id")[0])["id"]
        finally:
            client.stop()
            client.close()

    def _migrated(self) -> bool:
        """The controller wrote the KRaft metadata offset it migrated to into /migration."""
        client = self._zookeeper()
        try:
            if not client.exists("/migration"):
                return False
            return json.loads(client.get("/migration")[0]).get("kraft_metadata_offset", -1) > 0
        finally:
            client.stop()
            client.close()


def format_args(cluster_id: str, config: Path) -> list[str]:
    """kafka-storage's arguments that format a log dir for `cluster_id`: one `--cluster-id=` word,
    as an id Kafka drew may start with "-" (1 in 64), which `-t ID` would read as an option."""
    return ["format", f"--cluster-id={cluster_id}", "-c", str(config)]


def _finalized(controller: JavaServer) -> bool:
    # Logged by the controller when it activates with the flag off (ActivationRecordsGenerator);
    # "Loaded ZK migration state of POST_MIGRATION" when it had already finalized.
    text = controller.log_path.read_text(errors="replace")
    return ("Completing the ZK migration" in text
            or "Loaded ZK migration state of POST_MIGRATION" in text)


def migrate_to_kraft(cluster: LocalCluster, jars: list[Path], keep_zookeeper: bool,
                     to: str = "finalized") -> None:
    """KIP-866 on a running detached sandbox, from where it is up to phase `to` (PHASES); raises
    SandboxError when it cannot be done, or a step failed."""
    if cluster.release.version != DEFAULT_KAFKA_VERSION:
        raise SandboxError(f"kraft-migrate needs the Kafka {DEFAULT_KAFKA_VERSION} sandbox (the "
                           "last release with ZooKeeper mode, whose KIP-866 migration it runs); "
                           f"this one is Kafka {cluster.release.version}")
    names = [s.name for s in cluster.servers]
    if cluster.mode == MIGRATING:
        raise SandboxError(f"the sandbox is half-way through a migration step that failed; "
                           f"`zk2kafka sandbox down` it, then start afresh with another "
                           f"--state-dir (or remove {cluster.home})")
    order = [ZOOKEEPER, *PHASES.values()]
    if order.index(cluster.mode) > order.index(PHASES[to]):
        raise SandboxError(f"the sandbox is past phase {to} already ({phase_of(cluster.mode)}); "
                           "KIP-866's way back to ZooKeeper mode is Kafka's guide's, not the "
                           "sandbox's: start afresh with another --state-dir")
    if "kafka-1" in names or "zookeeper" not in names or "kafka" not in names:
        raise SandboxError(f"kraft-migrate migrates a sandbox of ZooKeeper and one broker, as "
                           f"`zk2kafka sandbox up` starts it; this one runs {', '.join(names)}")
    dead = [s.name for s in cluster.servers if not s.alive()]
    if dead:
        raise SandboxError(f"{', '.join(dead)} of the sandbox is not running: "
                           "`zk2kafka sandbox status` shows its log")
    Migration(cluster, jars).run(to, keep_zookeeper)


def stop_zookeeper(cluster: LocalCluster) -> bool:
    """Stop the ZooKeeper of a sandbox migrated to KRaft (decommissioned: its endpoints go);
    whether there was one to stop."""
    zk = next((s for s in cluster.servers if s.name == "zookeeper"), None)
    if zk is None:
        return False
    zk.stop()
    cluster.servers.remove(zk)
    cluster.endpoints = cluster.endpoints.without_zookeeper()
    cluster.save_state()
    return True


def restart_in_kraft_mode(home: Path, jars: list[Path], timeout: float = 120.0) -> LocalCluster:
    """`sandbox up` of a home migrated to KRaft: its controller and broker started again from
    their configs (same ports, same data); raises SandboxError naming the one that failed."""
    cluster = LocalCluster(home, home, attached=False)
    controller_dir, broker_dir = home / "kraft-controller", home / "kafka"
    bootstrap = _read_properties(broker_dir / "server.properties")["listeners"].split("//", 1)[1]
    endpoints = Endpoints(None, None, bootstrap, broker_jmx=f"127.0.0.1:{free_port()}")
    for name, workdir, config in (("kraft-controller", controller_dir, "controller.properties"),
                                  ("kafka", broker_dir, "server.properties")):
        broker = name == "kafka"
        server = JavaServer(name, workdir, jars, "kafka.Kafka", [str(workdir / config)],
                            "512m" if broker else "384m",
                            _broker_jmx(endpoints) if broker else None)
        server.start(attached=False)
        cluster.servers.append(server)
    cluster.mode = KRAFT
    cluster.endpoints = endpoints
    cluster.save_state()
    wait_for_server("Kafka (KRaft, migrated in place)", cluster.servers[-1],
                    lambda: kafka_ready(bootstrap), timeout)
    return cluster


def _broker_jmx(endpoints: Endpoints) -> list[str] | None:
    return jmx_opts(int(endpoints.broker_jmx.rsplit(":", 1)[1])) if endpoints.broker_jmx else None


def _server(cluster: LocalCluster, name: str) -> JavaServer:
    return next(s for s in cluster.servers if s.name == name)


def _listens(port: int) -> bool:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    return True


def _read_properties(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines()
             if "=" in line and not line.lstrip().startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}
