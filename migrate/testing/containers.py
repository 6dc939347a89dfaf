"""The same sandbox in containers (testcontainers), for machines where a Docker engine answers.

ZooKeeper (official image) and a ZooKeeper-mode broker (cp-kafka 7.9 = Apache Kafka 3.9)
on one network, the broker under the same `/kafka` chroot as the local sandbox,
plus an `apache/kafka` 4.x KRaft broker when asked. testcontainers' reaper
removes the containers if the test process dies.
"""

from __future__ import annotations

import logging

from migrate.sandbox.cluster import BROKER_CHROOT, Endpoints
from migrate.sandbox.security import super_digest
from migrate.jvm.server import free_port, kafka_ready, wait_until, zk_answers

log = logging.getLogger(__name__)

ZOOKEEPER_IMAGE = "zookeeper:3.8"
KAFKA_ZK_IMAGE = "confluentinc/cp-kafka:7.9.2"
KAFKA_KRAFT_IMAGE = "apache/kafka:4.1.2"
# What a single-broker cluster needs, as the images' KAFKA_* environment (the same as
# LocalCluster's).
SINGLE_BROKER_ENV = dict(
    KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR="1", KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS="10",
    KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR="1", KAFKA_TRANSACTION_STATE_LOG_MIN_ISR="1",
    KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS="0", KAFKA_AUTO_CREATE_TOPICS_ENABLE="false",
)


def docker_engine_answers() -> bool:
    """True when a Docker engine answers a ping (fails fast when there is none)."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        return False
    try:
        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (DockerException, OSError) as e:  # requests' errors are OSErrors too
        log.debug("no Docker engine: %s", e)
        return False


class ContainerCluster:
    """Start/stop the containerised sandbox; `start()` returns Endpoints, as LocalCluster's does."""

    def __init__(self, kraft: bool = False):
        self.kraft = kraft
        self.containers: list = []
        self.network = None

    def start(self, timeout: float = 180.0) -> Endpoints:
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> Endpoints:
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.network import Network

        self.network = Network().create()
        zk_port, kafka_port = free_port(), free_port()
        digest = f"-Dzookeeper.DigestAuthenticationProvider.superDigest={super_digest()}"
        zk = self._run(
            DockerContainer(ZOOKEEPER_IMAGE).with_network(self.network)
            .with_network_aliases("zookeeper")
            .with_env("ZOO_4LW_COMMANDS_WHITELIST", "*").with_bind_ports(2181, zk_port)
            .with_env("SERVER_JVMFLAGS", digest))
        zk_server = f"127.0.0.1:{zk_port}"
        wait_until("ZooKeeper container", lambda: zk_answers(zk_server), timeout,
                   logs=lambda: _logs(zk))

        # Two listeners: one advertised to the host on a fixed free port, one for the broker itself.
        kafka = self._run(
            DockerContainer(KAFKA_ZK_IMAGE).with_network(self.network).with_network_aliases("kafka")
            .with_envs(
                KAFKA_BROKER_ID="0",
                KAFKA_ZOOKEEPER_CONNECT="zookeeper:2181" + BROKER_CHROOT,
                KAFKA_LISTENERS="HOST://0.0.0.0:9092,BROKER://0.0.0.0:9093",
                KAFKA_ADVERTISED_LISTENERS=f"HOST://127.0.0.1:{kafka_port},BROKER://kafka:9093",
                KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="HOST:PLAINTEXT,BROKER:PLAINTEXT",
                KAFKA_INTER_BROKER_LISTENER_NAME="BROKER",
                **SINGLE_BROKER_ENV,
            ).with_bind_ports(9092, kafka_port))
        bootstrap = f"127.0.0.1:{kafka_port}"
        wait_until("Kafka container", lambda: kafka_ready(bootstrap), timeout,
                   logs=lambda: _logs(kafka))

        kraft_bootstrap = None
        if self.kraft:
            port = free_port()
            kraft = self._run(DockerContainer(KAFKA_KRAFT_IMAGE).with_envs(
                KAFKA_NODE_ID="1", KAFKA_PROCESS_ROLES="broker,controller",
                KAFKA_LISTENERS="PLAINTEXT://0.0.0.0:9092,CONTROLLER://localhost:9093",
                KAFKA_ADVERTISED_LISTENERS=f"PLAINTEXT://127.0.0.1:{port}",
                KAFKA_CONTROLLER_LISTENER_NAMES="CONTROLLER",
                KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                KAFKA_CONTROLLER_QUORUM_VOTERS="1@localhost:9093",
                **SINGLE_BROKER_ENV,
            ).with_bind_ports(9092, port))
            kraft_bootstrap = f"127.0.0.1:{port}"
            wait_until("KRaft Kafka container", lambda: kafka_ready(kraft_bootstrap), timeout,
                       logs=lambda: _logs(kraft))
        return Endpoints(zk_server + BROKER_CHROOT, zk_server, bootstrap, kraft_bootstrap)

    def _run(self, container):
        self.containers.append(container)
        return container.start()

    def stop(self) -> None:
        for container in reversed(self.containers):
            container.stop()
        self.containers.clear()
        if self.network is not None:
            self.network.remove()
            self.network = None


def _logs(container) -> str:
    out, err = container.get_logs()
    return "\n".join((out + err).decode(errors="replace").splitlines()[-30:])
