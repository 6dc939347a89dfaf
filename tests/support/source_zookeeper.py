"""A ZooKeeper server of a Kafka release's bundle on a dataDir a test keeps across starts: the
server whose files `scan --zookeeper-data` reads, or the ZooKeeper a test stops for good."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from kazoo.client import KazooClient

from migrate.jvm.artifacts import ensure_bundle
from migrate.jvm.server import JavaServer, wait_for_server, zk_answers
from migrate.jvm.releases import release
from support.servers import CACHE_DIR
from support.wait import free_port

MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"


class SourceZooKeeper:
    """One ZooKeeper server of a Kafka release's bundle, on a dataDir the test keeps across starts."""

    def __init__(self, home: Path, kafka_version: str, *, log_dir: bool = False,
                 props: dict | None = None, jvm_opts: tuple[str, ...] = ()):
        self.home = home
        self.jars = ensure_bundle(release(kafka_version).bundle, CACHE_DIR)
        self.data = home / "data"
        self.log = home / "datalog" if log_dir else None
        self.props = dict(props or {})
        self.jvm_opts = ["-Dzookeeper.jmx.log4j.disable=true", *jvm_opts]
        self.server: JavaServer | None = None
        self.connect = ""

    def start(self, main: str = MAIN, jvm_opts: tuple[str, ...] = (), wait: bool = True,
              **more) -> str:
        port = more.pop("clientPort", None) or free_port()
        self.home.mkdir(parents=True, exist_ok=True)
        props = {"dataDir": self.data, "clientPort": port, "clientPortAddress": "127.0.0.1",
                 "tickTime": 2000, "maxSessionTimeout": 600000,
                 "admin.enableServer": "false", "4lw.commands.whitelist": "*",
                 **({"dataLogDir": self.log} if self.log else {}), **self.props, **more}
        (self.home / "zoo.cfg").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.server = JavaServer("zookeeper", self.home, self.jars, main,
                                 [str(self.home / "zoo.cfg")], heap="128m",
                                 jvm_opts=[*self.jvm_opts, *jvm_opts])
        self.server.start(attached=True)
        self.connect = f"127.0.0.1:{port}"
        if wait:
            self.wait()
        return self.connect

    def wait(self) -> None:
        """Until the server serves (an ensemble member: once it has a leader)."""
        wait_for_server("the test's ZooKeeper", self.server, lambda: zk_answers(self.connect), 60)

    def stop(self) -> None:
        self.server.stop()

    def kill(self) -> None:
        """kill -9: what the server had acknowledged is in its log, nothing is closed."""
        self.server.process.kill()
        self.server.process.wait()


def client(connect: str, timeout: float = 300.0) -> KazooClient:
    zk = KazooClient(hosts=connect, timeout=timeout)
    zk.start(timeout=30)
    return zk


def fingerprint(*folders: Path) -> dict[str, str]:
    """Every file under `folders`: its path and the sha256 of its bytes."""
    found = {}
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def new_consumer_positions(bootstrap: str, offsets: dict) -> dict:
    """Where a new consumer of each group of `offsets` ({(group, topic, partition): offset})
    starts on each of those partitions: the offsets Kafka holds for it, read as a consumer does."""
    positions = {}
    for group in sorted({g for g, _, _ in offsets}):
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                 enable_auto_commit=False, auto_offset_reset="none")
        try:
            mine = [TopicPartition(t, p) for g, t, p in sorted(offsets) if g == group]
            consumer.assign(mine)
            positions |= {(group, tp.topic, tp.partition): consumer.position(tp) for tp in mine}
        finally:
            consumer.close()
    return positions
