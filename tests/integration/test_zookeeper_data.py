"""`scan --zookeeper-data`: data directories written by the ZooKeeper servers Kafka 1.1.1 (3.4),
2.4.1 (3.5) and 3.9.2 (3.8) ship, read back into the zk snapshot by a private ZooKeeper 3.8 on a copy.

Each test starts the release's own ZooKeeper from the pinned jars, writes old-consumer offsets with
kazoo, stops or kills it, scans the directory it left and compares the snapshot's rows with what
was written; the original files are byte-identical afterwards. Each release's directory is then
recovered into the session cluster's Kafka with that ZooKeeper stopped (diff from the scan, the
plan executed), and a new consumer of each group starts exactly where the old one stopped.
"""

from __future__ import annotations

import json
import multiprocessing.util
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient

from migrate.zk.datadir import zxid_files

from support.cli import clean_env, zk2kafka_bin, zk2kafka_json, zk2kafka_text
from support.hints import hints, paste
from support.seeding import make_topic
from support.source_zookeeper import SourceZooKeeper, client, fingerprint, new_consumer_positions
from support.wait import free_port

QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


@pytest.fixture(autouse=True)
def copies_left_behind(monkeypatch):
    """Where zk2kafka makes its copies in these tests; after each, no copy and no process of it
    is left. multiprocessing's own folder (its fork server's socket, for --zk-readers) is made
    first, in the system's temp root: under the patched one it would go with it, and a parallel
    worker's tmp_path is too long for a socket's path (AF_UNIX)."""
    multiprocessing.util.get_temp_dir()
    folder = Path(tempfile.mkdtemp(prefix="zk2kafka-t-"))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    try:
        copies = list(folder.glob("zk2kafka-zookeeper-data-*"))
        assert copies == [], "the copy was not removed"
        running = [pid for pid in os.listdir("/proc") if pid.isdigit()
                   and f"{folder}/zk2kafka-zookeeper-data-".encode() in _cmdline(pid)]
        assert running == [], "the private ZooKeeper server was not stopped"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:   # gone meanwhile
        return b""


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


def shell(state: Path) -> dict[str, str]:
    """An operator's shell with zk2kafka on its PATH and no ZooKeeper exported."""
    return clean_env(ZK2KAFKA_STATE_DIR=str(state), PATH=os.pathsep.join(
        [str(Path(zk2kafka_bin()).parent), os.environ.get("PATH", "")]))


def scan_data_dir(state: Path, data: Path, *more: str) -> tuple[int, dict, str]:
    return zk2kafka_json("scan", "--zookeeper-data", str(data), "--state-dir", str(state), *more)


def snapshot_rows(data: dict) -> dict:
    table = pq.read_table(data["snapshot"])
    return {(r["group"], r["topic"], r["partition"]): r["offset"] for r in table.to_pylist()}


def offsets_of(groups: int, topics: int, partitions: int, base: int, prefix: str = "") -> dict:
    return {(f"{prefix}g{g}", f"{prefix}t{t}", p): base + 100 * g + 10 * t + p
            for g in range(groups) for t in range(topics) for p in range(partitions)}


@pytest.mark.parametrize("kafka_version, chroot, readers", [
    ("1.1.1", "/kafka", "1"), ("2.4.1", "", "2"), ("3.9.2", "", "1")])
def test_a_data_dir_of_each_release_with_offsets_only_in_the_log(tmp_path, kafka_version, chroot,
                                                                 readers, cluster, kafka_admin,
                                                                 prefix):
    # Written by the release's own ZooKeeper: offsets, a clean stop (the next start snapshots
    # them), then newer offsets and a kill -9, so those are only in the transaction log.
    # A low snapCount for the first run: several snapshots and logs; the default for the second.
    source = SourceZooKeeper(tmp_path / "zk", kafka_version)
    zk = client(source.start(jvm_opts=("-Dzookeeper.snapCount=10",)))
    root = f"{chroot}/consumers"
    t0, g0, g1, late = f"{prefix}t0", f"{prefix}g0", f"{prefix}g1", f"{prefix}late"
    # What the brokers keep beside the offsets: a topic's registration (before its consumers'
    # offsets, as a broker makes it), the cluster's id.
    zk.create(f"{chroot}/brokers/topics/{t0}", b"{}", makepath=True)
    topic_ctime = zk.exists(f"{chroot}/brokers/topics/{t0}").ctime
    zk.create(f"{chroot}/cluster/id", b'{"version":"1","id":"copy-cluster"}', makepath=True)
    written = write_offsets(zk, root, offsets_of(3, 2, 3, 100, prefix))
    zk.stop()
    source.stop()
    zk = client(source.start())
    newer = write_offsets(zk, root, {**offsets_of(1, 2, 3, 500, prefix), (late, t0, 0): 7})
    # An old consumer's registration, left behind as a crash leaves it.
    zk.create(f"{root}/{g1}/ids/consumer-1", b"{}", ephemeral=True, makepath=True)
    last_write = zk.exists(f"{root}/{late}/offsets/{t0}/0").mzxid
    first_newer = zk.exists(f"{root}/{g0}/offsets/{t0}/0").mzxid
    source.kill()
    version2 = source.data / "version-2"
    assert max(zxid_files(version2, "snapshot").values()) < first_newer, \
        "the newer offsets must be in no snapshot, only in the log"
    before = fingerprint(source.data)

    code, data, err = scan_data_dir(tmp_path / "state", source.data, "--zk-root", root,
                                    "--zk-readers", readers)

    assert code == 0, err
    assert snapshot_rows(data) == {**written, **newer}
    found = data["zookeeper_data"]
    assert found["dir"] == str(source.data) and int(found["last_zxid"], 16) >= last_write
    assert found["read_with"] == "ZooKeeper 3.8.4" and found["logs_replayed"] >= 1
    assert data["groups_with_live_zk_consumers"] == [g1]   # as the copy held it
    assert (found["ephemerals_loaded"], found["ephemerals_expired"]) == (1, 0)
    assert (found["zookeeper_cluster_id"], found["zookeeper_chroot"]) == ("copy-cluster", chroot)
    assert found["elsewhere"]["trees"] == [] and found["elsewhere"]["complete"]
    created = {r["topic"]: r["topic_ctime"] for r in pq.read_table(data["snapshot"]).to_pylist()}
    assert created[f"{prefix}t1"] is None
    assert created[t0].timestamp() * 1000 == topic_ctime   # under the chroot, as a live scan
    metadata = pq.read_schema(data["snapshot"]).metadata
    assert metadata[b"zk2kafka.zookeeper_data.dir"] == str(source.data).encode()
    assert metadata[b"zk2kafka.zookeeper_data.last_zxid"] == found["last_zxid"].encode()
    if chroot:
        # The default --zk-root is the ensemble root's /consumers: nothing there, and the scan says
        # how to name the brokers' chroot.
        code, nothing, err = scan_data_dir(tmp_path / "state", source.data)
        assert code == 1 and nothing == {}
        assert "no offsets found under /consumers in the ZooKeeper data directory" in err
        assert "--zk-root /kafka/consumers" in err and "\n" not in err.strip()
    assert fingerprint(source.data) == before

    # ZooKeeper stays stopped: the scan is the ZooKeeper side, Kafka is the session cluster's.
    recovered = {**written, **newer}
    for topic in (t0, f"{prefix}t1"):
        make_topic(kafka_admin, cluster.bootstrap_server, topic, 3, 520)   # past every offset
    kafka = ["--bootstrap-server", cluster.bootstrap_server, "--state-dir", str(tmp_path / "state")]
    # g1's registration is a crash's leftover in the copy, not a consumer running now.
    code, out, err = zk2kafka_text("diff", *kafka, "--zk-snapshot", data["run"],
                                   "--allow-live-zk-consumers")
    assert code == 0, out + err
    plan_id = out.strip().splitlines()[-1].split()[1].removeprefix("plan=")
    code, run, err = zk2kafka_json("migrate", *kafka, "--execute", "--plan", plan_id,
                                   "--allow-live-zk-consumers")
    assert code == 0, err
    assert new_consumer_positions(cluster.bootstrap_server, recovered) == recovered
    assert fingerprint(source.data) == before


def newest_log(version2: Path) -> Path:
    logs = zxid_files(version2, "log")
    return version2 / max(logs, key=logs.get)


def written_length(log: Path) -> int:
    """Where a log's records end: ZooKeeper preallocates its logs with zeros past them."""
    data = log.read_bytes()
    return len(data.rstrip(b"\0"))


@pytest.mark.parametrize("method", ["gz", "snappy"])
def test_a_compressed_snapshot_and_a_separate_log_dir(tmp_path, method):
    # ZooKeeper 3.6+ compresses its snapshots by zookeeper.snapshot.compression.method; the logs
    # are kept apart in a dataLogDir. The clean stop and start snapshot every offset, compressed.
    source = SourceZooKeeper(tmp_path / "zk", "3.9.2", log_dir=True,
                             jvm_opts=(f"-Dzookeeper.snapshot.compression.method={method}",))
    zk = client(source.start())
    written = write_offsets(zk, "/consumers", offsets_of(4, 2, 2, 300))
    zk.stop()
    source.stop()
    source.start()
    source.stop()
    snapshots = zxid_files(source.data / "version-2", "snapshot")
    assert max(snapshots, key=snapshots.get).endswith(f".{method}")
    assert not zxid_files(source.data / "version-2", "log")   # the logs are in dataLogDir only
    before = fingerprint(source.data, source.log)

    code, data, err = scan_data_dir(tmp_path / "state", source.data,
                                    "--zookeeper-data-log", str(source.log))

    assert code == 0, err
    assert snapshot_rows(data) == written
    assert data["zookeeper_data"]["log_dir"] == str(source.log)
    assert data["zookeeper_data"]["warnings"] == []
    if method == "gz":
        # The dataDir without its dataLogDir: the snapshot alone, read, and said to be so.
        code, data, err = scan_data_dir(tmp_path / "state", source.data)
        assert code == 0, err
        assert snapshot_rows(data) == written   # this snapshot was taken at a start: whole
        assert "misses any write after it" in data["zookeeper_data"]["warnings"][0]
    assert fingerprint(source.data, source.log) == before


def test_a_log_cut_in_its_last_record_is_read_as_zookeeper_reads_it(tmp_path):
    # A crash in the middle of writing a record: ZooKeeper takes a partial last record for the
    # log's end, so every transaction before it is read and that one is not.
    source = SourceZooKeeper(tmp_path / "zk", "3.9.2")
    zk = client(source.start())
    written = write_offsets(zk, "/consumers", offsets_of(2, 1, 2, 100))
    zk.stop()
    source.stop()
    zk = client(source.start())
    kept = write_offsets(zk, "/consumers", {("g0", "t0", 0): 150, ("g1", "t0", 1): 151})
    kept_zxid = zk.exists("/consumers/g1/offsets/t0/1").mzxid
    zk.set("/consumers/g0/offsets/t0/1", b"999")   # the record the crash cuts
    source.kill()
    log = newest_log(source.data / "version-2")
    with log.open("r+b") as f:
        f.truncate(written_length(log) - 5)   # the end-of-record byte and 4 of its bytes
    before = fingerprint(source.data)

    code, data, err = scan_data_dir(tmp_path / "state", source.data)

    assert code == 0, err
    assert snapshot_rows(data) == {**written, **kept}   # g0/t0/1 keeps 101, not 999
    assert int(data["zookeeper_data"]["last_zxid"], 16) == kept_zxid
    assert fingerprint(source.data) == before


def test_a_corrupt_log_is_one_clear_error(tmp_path):
    # A record whose bytes changed fails ZooKeeper's checksum: it refuses to load the directory,
    # and the scan says so in one line.
    source = SourceZooKeeper(tmp_path / "zk", "3.9.2")
    zk = client(source.start())
    write_offsets(zk, "/consumers", offsets_of(2, 1, 2, 100))
    source.kill()
    log = newest_log(source.data / "version-2")
    end = written_length(log)
    with log.open("r+b") as f:
        f.seek(end - 20)
        f.write(b"\x01" * 10)
    before = fingerprint(source.data)

    code, data, err = scan_data_dir(tmp_path / "state", source.data)

    assert code == 1 and data == {}
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line, err
    assert line == (f"zk2kafka: error: --zookeeper-data {source.data}: ZooKeeper 3.8.4 could "
                    "not load it: java.io.IOException: CRC check failed"), line
    assert fingerprint(source.data) == before


def test_logs_with_no_snapshot(tmp_path):
    # Only the transaction logs (a dataLogDir copied without the dataDir): replayed whole when
    # they start at ZooKeeper's first transaction, one clear error when the first ones are gone.
    source = SourceZooKeeper(tmp_path / "zk", "3.9.2", log_dir=True)
    zk = client(source.start(jvm_opts=("-Dzookeeper.snapCount=10",)))
    written = write_offsets(zk, "/consumers", offsets_of(3, 2, 2, 700))
    source.kill()
    logs = sorted(zxid_files(source.log / "version-2", "log"), key=lambda n: int(n[4:], 16))
    assert len(logs) > 1 and logs[0] == "log.1"
    only_logs = tmp_path / "logs-only"
    shutil.copytree(source.log, only_logs)
    before = fingerprint(only_logs)

    code, data, err = scan_data_dir(tmp_path / "state", only_logs)

    assert code == 0, err
    assert snapshot_rows(data) == written
    assert data["zookeeper_data"]["snapshot_zxid"] is None
    assert fingerprint(only_logs) == before

    (only_logs / "version-2" / logs[0]).unlink()
    code, data, err = scan_data_dir(tmp_path / "state", only_logs)
    assert code == 1 and "\n" not in err.strip()
    assert f"the first transaction log ({logs[1]}) does not start at ZooKeeper's first" in err


def test_a_member_of_a_three_node_ensemble(tmp_path):
    # Three ZooKeeper 3.8 servers on loopback; one member's dataDir, with its myid and epochs,
    # copied while it runs, once it holds every write (a sync through it).
    members = [SourceZooKeeper(tmp_path / f"zk{n}", "3.9.2") for n in (1, 2, 3)]
    client_ports = [free_port() for _ in members]
    servers = {f"server.{n}": f"127.0.0.1:{free_port()}:{free_port()}" for n in (1, 2, 3)}
    for n, member in enumerate(members, 1):
        member.data.mkdir(parents=True)
        (member.data / "myid").write_text(f"{n}\n")
    try:
        for member, port in zip(members, client_ports):
            member.start(QUORUM_MAIN, wait=False, clientPort=port, initLimit=10, syncLimit=5,
                         **servers)
        for member in members:
            member.wait()
        ensemble = ",".join(f"127.0.0.1:{p}" for p in client_ports)
        zk = client(ensemble)
        written = write_offsets(zk, "/kafka/consumers", offsets_of(3, 2, 2, 40))
        zk.stop()
        copied = tmp_path / "copy-of-zk2"
        through = client(members[1].connect)
        through.sync("/")
        through.stop()
        shutil.copytree(members[1].data, copied)
    finally:
        for member in members:
            if member.server is not None:
                member.stop()
    assert (copied / "myid").read_text() == "2\n" and (copied / "version-2" / "currentEpoch").exists()
    before = fingerprint(copied)

    code, data, err = scan_data_dir(tmp_path / "state", copied, "--zk-root", "/kafka/consumers")

    assert code == 0, err
    assert snapshot_rows(data) == written
    assert int(data["zookeeper_data"]["last_zxid"], 16) >> 32 >= 1   # an ensemble's epoch
    assert fingerprint(copied) == before



def test_the_scan_of_a_copy_names_the_other_offsets_trees_it_holds(tmp_path):
    # One ensemble, three offsets trees: the brokers' chroot, old consumers configured without
    # it, and another application's chroot. The scan of one names the other two, each with the
    # scan that reads it, pasted here as printed.
    source = SourceZooKeeper(tmp_path / "zk", "3.9.2")
    zk = client(source.start())
    trees = {root: write_offsets(zk, root, offsets_of(groups, 1, 2, base))
             for root, groups, base in (("/kafka/consumers", 2, 10), ("/consumers", 1, 20),
                                        ("/other-app/consumers", 3, 30))}
    zk.create("/kafka/brokers/ids/1", b"{}", makepath=True)
    zk.create("/kafka/cluster/id", b'{"version":"1","id":"copy-cluster"}', makepath=True)
    zk.stop()
    source.stop()
    state, data_dir = tmp_path / "state", tmp_path / "zk data"   # a path the shell must quote
    source.data.rename(data_dir)

    code, data, err = scan_data_dir(state, data_dir, "--zk-root", "/kafka/consumers")

    assert code == 0, err
    assert snapshot_rows(data) == trees["/kafka/consumers"]
    found = data["zookeeper_data"]["elsewhere"]
    assert (found["checked_root"], found["complete"], found["unreadable"]) == (
        "/kafka/consumers", True, [])
    assert [(t["path"], t["groups"], t["offsets"]) for t in found["trees"]] == [
        ("/consumers", 1, 2), ("/other-app/consumers", 3, 6)]
    assert found["trees"][1]["scan"] == (f"zk2kafka scan --zookeeper-data '{data_dir}' "
                                         "--zk-root /other-app/consumers")
    saved = json.loads((Path(data["report"]) / "scan.json").read_text())
    assert saved["zookeeper_data"]["elsewhere"] == found
    code, out, err = zk2kafka_text("scan", "--zookeeper-data", str(data_dir), "--state-dir",
                                   str(state), "--zk-root", "/kafka/consumers")
    assert code == 0, err
    assert "elsewhere in the copy: 2 other offsets tree(s), searched from /" in out
    printed = hints(out)
    # The terminal repeats the --state-dir given as a flag; the JSON carries the scan's own line.
    assert printed == [t["scan"].replace("zk2kafka scan", f"zk2kafka scan --state-dir {state}", 1)
                       for t in found["trees"]]

    pasted = paste(shell(state), printed[1])

    assert pasted.returncode == 0, pasted.stderr
    report = Path(pasted.stdout.strip().splitlines()[-1].split("report=", 1)[1])
    other = json.loads((report / "scan.json").read_text())
    assert snapshot_rows(other) == trees["/other-app/consumers"]
    assert [t["path"] for t in other["zookeeper_data"]["elsewhere"]["trees"]] == [
        "/consumers", "/kafka/consumers"]
    # Nothing at the default root's place: the error names the trees the copy holds instead.
    code, data, err = scan_data_dir(state, data_dir, "--zk-root", "/nowhere/consumers")
    assert code == 1 and data == {} and "\n" not in err.strip()
    assert f"/other-app/consumers (3 groups, 6 offsets): `{printed[1]}`" in err


def test_a_copy_reads_what_acls_refuse_and_says_so(tmp_path):
    # The sandbox seed's `secured` group: its offset znode behind a digest ACL of another user. A second group
    # whose topic directory may not be listed but by its owner. Live, both are UNREADABLE; the copy reads
    # them (ZooKeeper's files carry no ACL enforcement) and the scan says which the live ensemble refused.
    from kazoo.security import make_digest_acl

    from migrate.sandbox.seed import SECURED_ACL_USER

    source = SourceZooKeeper(tmp_path / "zk", "3.9.2")
    connect = source.start()
    zk = client(connect)
    offsets = write_offsets(zk, "/consumers", {("open", "orders", 0): 5})
    zk.ensure_path("/consumers/secured/offsets/orders")
    zk.create("/consumers/secured/offsets/orders/0", b"77",
              acl=[make_digest_acl(*SECURED_ACL_USER, all=True)])
    zk.ensure_path("/consumers/locked/offsets/orders")
    zk.create("/consumers/locked/offsets/orders/0", b"9")
    zk.set_acls("/consumers/locked/offsets/orders", [make_digest_acl("dba", "dba-password", all=True)])
    state = tmp_path / "state"
    code, live, err = zk2kafka_json("scan", "--zookeeper", connect, "--state-dir", str(state))
    assert code == 0 and live["counts"] == {"OK": 1, "UNREADABLE": 2}, err
    zk.stop()
    source.stop()

    code, data, err = scan_data_dir(state, source.data)

    assert code == 0, err
    assert snapshot_rows(data) == {**offsets, ("secured", "orders", 0): 77, ("locked", "orders", 0): 9}
    acls = data["zookeeper_data"]["acls"]
    refused = ["/consumers/locked/offsets/orders", "/consumers/secured/offsets/orders/0"]
    assert (acls["reader"], acls["znodes_refused"], sorted(acls["first_refused"])) == (
        "a reader with no credentials", 2, refused)
    # Read again as that reader: the open offset, and a row for each znode refused (ZooKeeper's own judgement)
    assert acls["rows_read_as_reader"] == 3
    (warning,) = data["zookeeper_data"]["warnings"]
    assert warning.startswith("2 znode(s) the copy read carry ACLs that would have refused a reader with no "
                              "credentials on the live ensemble (NoAuth there): ")
    assert "files carry no ACL enforcement" in warning
    saved = json.loads((Path(data["report"]) / "scan.json").read_text())
    assert saved["zookeeper_data"]["acls"] == acls and warning in saved["zookeeper_data"]["warnings"]

    # The secured group's owner reads it live: only the other directory is said, and no password.
    owner = ":".join(SECURED_ACL_USER)
    code, out, err = zk2kafka_text("scan", "--zookeeper-data", str(source.data), "--state-dir", str(state),
                                   "--zk-auth", f"digest:{owner}")
    assert code == 0, err
    (line,) = [line for line in out.splitlines() if "carry ACLs" in line]
    assert line.startswith(f"warning: 1 znode(s) the copy read carry ACLs that would have refused --zk-auth "
                           f"digest:{SECURED_ACL_USER[0]} on the live ensemble (NoAuth there): "
                           "/consumers/locked/offsets/orders;")
    assert SECURED_ACL_USER[1] not in out + err
