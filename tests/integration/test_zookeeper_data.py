"""`scan --zookeeper-data`: data directories written by the ZooKeeper servers Kafka 1.1.1 (3.4),
2.4.1 (3.5) and 3.9.2 (3.8) ship, read back into the zk snapshot by a private ZooKeeper 3.8 on a copy.

Each test starts the release's own ZooKeeper from the pinned jars, writes old-consumer offsets with
kazoo, stops or kills it, scans the directory it left and compares the snapshot's rows with what
was written; the original files are byte-identical afterwards. No session cluster is needed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient

from migrate.sandbox.artifacts import ensure_bundle
from migrate.sandbox.jvm import JavaServer, wait_for_server, zk_answers
from migrate.sandbox.releases import release
from migrate.zk.datadir import zxid_files

from support.cli import zk2kafka_json
from support.servers import CACHE_DIR
from support.wait import free_port

MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


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

    def start(self, main: str = MAIN, jvm_opts: tuple[str, ...] = (), **more) -> str:
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
        wait_for_server("the test's ZooKeeper", self.server, lambda: zk_answers(self.connect), 60)
        return self.connect

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


def write_offsets(zk: KazooClient, root: str, offsets: dict) -> dict:
    """Old-consumer offsets `{(group, topic, partition): offset}` under `root`, each znode set as an
    old consumer sets it (created once, then setData); returns `offsets`."""
    for (group, topic, partition), offset in offsets.items():
        path = f"{root}/{group}/offsets/{topic}/{partition}"
        if zk.exists(path):
            zk.set(path, str(offset).encode())
        else:
            zk.create(path, str(offset).encode(), makepath=True)
    return offsets


def fingerprint(*folders: Path) -> dict[str, str]:
    """Every file under `folders`: its path and the sha256 of its bytes."""
    found = {}
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def scan_data_dir(state: Path, data: Path, *more: str) -> tuple[int, dict, str]:
    return zk2kafka_json("scan", "--zookeeper-data", str(data), "--state-dir", str(state), *more)


def snapshot_rows(data: dict) -> dict:
    table = pq.read_table(data["snapshot"])
    return {(r["group"], r["topic"], r["partition"]): r["offset"] for r in table.to_pylist()}


def offsets_of(groups: int, topics: int, partitions: int, base: int) -> dict:
    return {(f"g{g}", f"t{t}", p): base + 100 * g + 10 * t + p
            for g in range(groups) for t in range(topics) for p in range(partitions)}


@pytest.mark.parametrize("kafka_version, chroot", [("1.1.1", "/kafka"), ("2.4.1", ""),
                                                   ("3.9.2", "")])
def test_a_data_dir_of_each_release_with_offsets_only_in_the_log(tmp_path, kafka_version, chroot):
    # Written by the release's own ZooKeeper: offsets, a clean stop (the next start snapshots
    # them), then newer offsets and a kill -9, so those are only in the transaction log.
    # A low snapCount for the first run: several snapshots and logs; the default for the second.
    source = SourceZooKeeper(tmp_path / "zk", kafka_version)
    zk = client(source.start(jvm_opts=("-Dzookeeper.snapCount=10",)))
    root = f"{chroot}/consumers"
    written = write_offsets(zk, root, offsets_of(3, 2, 3, 1000))
    zk.stop()
    source.stop()
    zk = client(source.start())
    newer = write_offsets(zk, root, {**offsets_of(1, 2, 3, 5000), ("late", "t0", 0): 7})
    # An old consumer's registration, left behind as a crash leaves it.
    zk.create(f"{root}/g1/ids/consumer-1", b"{}", ephemeral=True, makepath=True)
    last_write = zk.exists(f"{root}/late/offsets/t0/0").mzxid
    first_newer = zk.exists(f"{root}/g0/offsets/t0/0").mzxid
    source.kill()
    version2 = source.data / "version-2"
    assert max(zxid_files(version2, "snapshot").values()) < first_newer, \
        "the newer offsets must be in no snapshot, only in the log"
    before = fingerprint(source.data)

    code, data, err = scan_data_dir(tmp_path / "state", source.data, "--zk-root", root)

    assert code == 0, err
    assert snapshot_rows(data) == {**written, **newer}
    found = data["zookeeper_data"]
    assert found["dir"] == str(source.data) and int(found["last_zxid"], 16) >= last_write
    assert found["read_with"] == "ZooKeeper 3.8.4" and found["logs_replayed"] >= 1
    assert data["groups_with_live_zk_consumers"] == ["g1"]   # as the copy held it
    metadata = pq.read_schema(data["snapshot"]).metadata
    assert metadata[b"zk2kafka.zookeeper_data.dir"] == str(source.data).encode()
    assert metadata[b"zk2kafka.zookeeper_data.last_zxid"] == found["last_zxid"].encode()
    assert fingerprint(source.data) == before
