"""A copy of a ZooKeeper server's data directory as the ZooKeeper side, read with ZooKeeper's code.

`scan --zookeeper-data DIR [--zookeeper-data-log DIR]` copies the snapshots and transaction logs
(`version-2/snapshot.*`, `version-2/log.*`) into a temporary folder, starts a private standalone
ZooKeeper 3.8 server on that copy (loopback, a config of its own: no `myid`, epochs or dynamic
config of the ensemble the files came from), which replays the logs onto the last snapshot as
ZooKeeper does at every start, and hands the ordinary reader (`scan.py`) a connect string to it.
The server is stopped and the copy removed when the block ends. The original files are only ever
opened for reading: the server writes to its dataDir when it starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
import shlex
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kazoo.exceptions import NoNodeError

from migrate.connection import Connection, Secret
from migrate.errors import JvmError, MigrateError
from migrate.log import set_secrets
from migrate.jvm.artifacts import ensure_artifacts, load_lock
from migrate.jvm.server import JavaServer, free_port, wait_for_server, zk_answers
from migrate.jvm.releases import DEFAULT_KAFKA_VERSION, release
from migrate.settings import Settings
from migrate.zk.acls import check_acls, super_user
from migrate.zk.client import close, connect
from migrate.zk.ensemble import Search, search

log = logging.getLogger(__name__)

# ZooKeeper 3.8 reads every on-disk format 3.4 and later write (the `version-2` snapshot and log
# formats, and 3.6+'s compressed snapshots), so one release reads them all (docs/scan.md).
SERVER_RELEASE = release(DEFAULT_KAFKA_VERSION)
# The jars of that release's bundle the ZooKeeper server loads; the broker's are not needed.
SERVER_JARS = ("org.apache.zookeeper", "org.apache.yetus", "io.netty", "io.dropwizard.metrics",
               "org.slf4j", "ch.qos.reload4j", "commons-io", "commons-cli", "org.xerial.snappy")
MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
FILE_NAME = re.compile(r"^(snapshot|log)\.([0-9a-fA-F]+)(\.(?:gz|snappy))?$")
# ZooKeeper's first transaction: standalone (epoch 0), or the first epoch of an ensemble.
FIRST_ZXIDS = (0x1, 0x100000001)
# Each setting of the private server, and why (docs/scan.md says the same).
SERVER_OPTS = [
    # No log4j MBeans: the server needs none (the sandbox's ZooKeeper starts so too).
    "-Dzookeeper.jmx.log4j.disable=true",
    # The copy is thrown away: no fsync of the session transactions this server writes.
    "-Dzookeeper.forceSync=no",
    # A log file of 64 KiB, not 64 MiB, preallocated for those transactions.
    "-Dzookeeper.preAllocSize=64",
]


class DataDirUnreadable(MigrateError):
    """A data directory that is not one, that misses transactions, or that ZooKeeper could not
    load: the reason, and (once known) the directory given."""

    def __init__(self, reason: str, path: Path | None = None):
        super().__init__(f"--zookeeper-data {path}: {reason}" if path else reason)
        self.path, self.reason = None if path is None else str(path), reason


@dataclass(frozen=True)
class LoadedCopy:
    """The private server on the copy: where it answers, and what identifies the data it holds."""

    connect: str               # 127.0.0.1:port, no chroot
    last_zxid: int             # the last transaction the copy holds, logs replayed
    snapshot_zxid: int | None  # the newest snapshot's, None for a log-only directory
    logs: int                  # transaction log files replayed onto it
    seconds: float             # copying and loading
    ephemerals: int            # ephemeral znodes (old consumers' registrations) as loaded
    warning: str | None = None  # why the tree may not be whole (check_history)
    # The server's throwaway super user: every znode reads whatever its ACL (acls.py).
    auth: Secret | None = dataclasses.field(default=None, repr=False)

    def to_json(self, data_dir: Path, log_dir: Path | None) -> dict:
        snapshot = None if self.snapshot_zxid is None else f"0x{self.snapshot_zxid:x}"
        return {"dir": str(data_dir), "log_dir": str(log_dir) if log_dir else None,
                "last_zxid": f"0x{self.last_zxid:x}", "snapshot_zxid": snapshot,
                "logs_replayed": self.logs, "load_seconds": round(self.seconds, 3),
                "ephemerals_loaded": self.ephemerals,
                "warnings": [self.warning] if self.warning else [],
                "read_with": f"ZooKeeper {SERVER_RELEASE.zookeeper}"}


def version2(path: Path, flag: str = "--zookeeper-data") -> Path:
    """The `version-2` folder of a dataDir (or the folder itself when named so).

    Raises DataDirUnreadable when there is none.
    """
    path = Path(path).expanduser()
    if not path.is_dir():
        raise DataDirUnreadable(f"{flag} {path}: no such directory")
    if path.name == "version-2":
        return path
    if (path / "version-2").is_dir():
        return path / "version-2"
    raise DataDirUnreadable(f"{flag} {path}: no version-2/ folder in it: not a ZooKeeper "
                            "dataDir (the folder dataDir= names in the server's zoo.cfg)")


def zxid_files(folder: Path, kind: str) -> dict[str, int]:
    """The `kind` (snapshot or log) files of a version-2 folder: name -> the zxid in it."""
    found = {}
    try:
        for entry in folder.iterdir():
            m = FILE_NAME.match(entry.name)
            if m and m.group(1) == kind and entry.is_file():
                found[entry.name] = int(m.group(2), 16)
    except OSError as e:
        raise DataDirUnreadable(f"{folder} cannot be listed: {e.strerror}") from None
    return found


def check_history(snapshots: dict[str, int], logs: dict[str, int]) -> str | None:
    """Whether ZooKeeper can rebuild the whole tree from these files: raises DataDirUnreadable
    when transactions are missing, returns a warning when the tree may be a snapshot's alone.

    ZooKeeper loads the newest snapshot S and replays the logs from S+1; a snapshot taken while the
    server served is fuzzy (it may hold part of the transactions after S), and only that replay
    makes it whole. With no snapshot, the logs are replayed from the first transaction.
    """
    if not snapshots and not logs:
        raise DataDirUnreadable("no snapshot.* or log.* files in version-2/")
    first = min(logs, key=logs.get) if logs else None
    if not snapshots and logs[first] not in FIRST_ZXIDS:
        raise DataDirUnreadable(
            f"no snapshot, and the first transaction log ({first}) does not start at ZooKeeper's "
            "first transaction: the tree cannot be rebuilt whole; copy the snapshot.* files of "
            "the dataDir too")
    newest = max(snapshots.values()) if snapshots else 0
    # The replay starts in the last log that begins at or before the snapshot's next zxid, or in
    # the first log of a later epoch (a new leader's first transaction, counter 1).
    if snapshots and logs and logs[first] > newest + 1 and not (
            logs[first] >> 32 > newest >> 32 and logs[first] & 0xFFFFFFFF == 1):
        raise DataDirUnreadable(
            f"the transaction logs start at {first}, after the newest snapshot "
            f"(0x{newest:x}): the transactions between are missing")
    if snapshots and not logs:
        return ("no transaction log beside the snapshots: the tree is the newest snapshot's "
                "alone, which misses any write after it (the server's dataLogDir? pass it with "
                "--zookeeper-data-log)")
    return None


def replayed(snapshot_zxid: int | None, logs: dict[str, int]) -> int:
    """How many of `logs` ZooKeeper replays onto the snapshot: the one its next zxid is in and
    every later one (all of them with no snapshot)."""
    if snapshot_zxid is None:
        return len(logs)
    starts = sorted(logs.values())
    before = [z for z in starts if z <= snapshot_zxid + 1]
    return len(starts) - max(len(before) - 1, 0)


def copy_files(data: Path, logs: Path, snapshots: dict[str, int], log_files: dict[str, int],
               work: Path) -> tuple[Path, Path]:
    """Copy the snapshots of `data` and the logs of `logs` into `work`, nothing else (no myid,
    epochs or dynamic config); returns the copy's dataDir and dataLogDir.

    Raises DataDirUnreadable naming a file that cannot be read.
    """
    copied_data, copied_logs = work / "data" / "version-2", work / "log" / "version-2"
    for source, names, dest in ((data, snapshots, copied_data), (logs, log_files, copied_logs)):
        dest.mkdir(parents=True, exist_ok=True)
        for name in names:
            try:
                # copyfile opens the original read-only; no metadata is carried over.
                shutil.copyfile(source / name, dest / name)
            except OSError as e:
                raise DataDirUnreadable(f"{source / name} cannot be copied: "
                                        f"{e.strerror}") from None
    return copied_data.parent, copied_logs.parent


def four_letter(connect: str, word: str) -> str:
    """The answer of a four-letter word."""
    host, port = connect.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(word.encode())
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def loaded_zxid(copied_data: Path) -> int:
    """The last zxid the server loaded: ZooKeeper snapshots its tree, named by that zxid, once the
    logs are replayed and before it takes clients."""
    zxids = zxid_files(copied_data / "version-2", "snapshot").values()
    if not zxids:
        raise JvmError("the private ZooKeeper server wrote no snapshot at start")
    return max(zxids)


JAVA_EXCEPTION = re.compile(r"^(?:Caused by: )?([\w$.]+(?:Exception|Error)(?::.*)?)$")


def load_failure(server: JavaServer) -> str:
    """Why ZooKeeper would not load the copy: the root cause of the exception it logged
    (`java.io.IOException: CRC check failed`), else its log's last error line."""
    try:
        lines = server.log_path.read_text(errors="replace").splitlines()
    except OSError:
        return server.cause()
    causes = [m.group(1) for line in lines if (m := JAVA_EXCEPTION.match(line.strip()))]
    return causes[-1] if causes else server.cause()


def server_heap(data: Path, snapshots: dict[str, int]) -> str:
    """The private server's -Xmx: ten times its newest snapshot (a tree in memory is several times
    its serialized size, more for a compressed one), 1 GiB at least, 16 GiB at most."""
    newest = (data / max(snapshots, key=snapshots.get)).stat().st_size if snapshots else 0
    return f"{min(max(1024, 10 * newest >> 20), 16384)}m"


def ephemerals(connect: str) -> int:
    """ZooKeeper's count of ephemeral znodes (`mntr`)."""
    m = re.search(r"^zk_ephemerals_count\s+(\d+)", four_letter(connect, "mntr"), re.MULTILINE)
    return int(m.group(1)) if m else 0


@contextlib.contextmanager
def loaded_copy(data_dir: Path, log_dir: Path | None, cache_dir: Path,
                timeout: float = 900.0) -> Iterator[LoadedCopy]:
    """A private ZooKeeper server on a copy of `data_dir` (and `log_dir`), for the block's length.

    Raises DataDirUnreadable when the copy is no data dir or ZooKeeper cannot load it; ArtifactError
    when the server's jars cannot be fetched.
    """
    started = time.monotonic()
    data = version2(data_dir)
    logs = version2(log_dir, "--zookeeper-data-log") if log_dir is not None else data
    jars = ensure_artifacts([a for a in load_lock()[SERVER_RELEASE.bundle]
                             if a.group in SERVER_JARS], cache_dir)
    snapshots, log_files = zxid_files(data, "snapshot"), zxid_files(logs, "log")
    try:
        warning = check_history(snapshots, log_files)
    except DataDirUnreadable as e:
        raise DataDirUnreadable(e.reason, data_dir) from None
    snapshot_zxid = max(snapshots.values()) if snapshots else None
    with tempfile.TemporaryDirectory(prefix="zk2kafka-zookeeper-data-") as work:
        work = Path(work)
        copied_data, copied_logs = copy_files(data, logs, snapshots, log_files, work)
        port = free_port()
        (work / "zoo.cfg").write_text("\n".join(f"{k}={v}" for k, v in {
            "dataDir": copied_data, "dataLogDir": copied_logs,
            "clientPort": port, "clientPortAddress": "127.0.0.1",
            "tickTime": 2000, "maxClientCnxns": 0,
            # No Jetty admin server (it would listen on 8080, on every interface); the two words
            # this module asks.
            "admin.enableServer": "false", "4lw.commands.whitelist": "srvr,mntr",
        }.items()) + "\n")
        # A log-only directory checked above to start at the first transaction: replayed whole
        # (3.5+ refuse to replay logs with no snapshot unless told to trust that).
        trust = ["-Dzookeeper.snapshot.trust.empty=true"] if snapshot_zxid is None else []
        superuser, auth = super_user()
        server = JavaServer("zookeeper", work, jars, MAIN, [str(work / "zoo.cfg")],
                            heap=server_heap(data, snapshots),
                            jvm_opts=[*SERVER_OPTS, *trust, superuser])
        connect = f"127.0.0.1:{port}"
        try:
            server.start(attached=True)
        except OSError as e:
            raise DataDirUnreadable(f"cannot start ZooKeeper {SERVER_RELEASE.zookeeper} to read "
                                    f"it: {e.strerror}: {e.filename} (java must be on PATH)",
                                    data_dir) from None
        try:
            try:
                wait_for_server(f"ZooKeeper {SERVER_RELEASE.zookeeper} on the copy of "
                                f"{data_dir}", server, lambda: zk_answers(connect), timeout)
            except JvmError:
                raise DataDirUnreadable(f"ZooKeeper {SERVER_RELEASE.zookeeper} could not load "
                                        f"it: {load_failure(server)}", data_dir) from None
            copy = LoadedCopy(connect, loaded_zxid(copied_data), snapshot_zxid,
                              replayed(snapshot_zxid, log_files), time.monotonic() - started,
                              ephemerals(connect), warning, auth)
            log.info("ZooKeeper %s loaded the copy of %s in %.1fs: last zxid 0x%x (%d logs "
                     "replayed onto snapshot %s)", SERVER_RELEASE.zookeeper, data_dir,
                     copy.seconds, copy.last_zxid, copy.logs,
                     "none" if snapshot_zxid is None else f"0x{snapshot_zxid:x}")
            yield copy
        finally:
            server.stop()


# What a scan of a data directory that found nothing says, in place of the chroot hint.
NOTHING_IN_DATA_DIR = ("offsets under the brokers' chroot? --zk-root names the whole path from "
                       "the ensemble's root, e.g. --zk-root /kafka/consumers; "
                       "a selection that matches no group?")


def nothing_found_hint(copy: dict) -> str:
    """What a scan of a data directory that found nothing says: the trees the copy holds
    elsewhere, each with its scan, else how --zk-root names a chroot."""
    trees = (copy.get("elsewhere") or {}).get("trees") or []
    if not trees:
        return NOTHING_IN_DATA_DIR
    return "offsets elsewhere in the copy: " + "; ".join(
        f"{t['path']} ({t['groups']} groups, {t['offsets']} offsets): `{t['scan']}`" for t in trees)


def read_data_dir(settings: Settings, scan: Callable[[Settings, dict], dict]) -> dict:
    """`scan(private, found)` run against a private server on a copy of --zookeeper-data:
    `private` are the settings that reach it, `found` what identifies the data (`source`, the
    directory, its last zxid, the brokers' cluster id). Returns what `scan` returns.

    The standard layout's --zk-root names the whole path from the ensemble's root; its parent is
    read as the chroot, so topics' creation times come from the brokers' /brokers/topics beside it
    (what a live scan reads under its connect string's chroot).
    """
    given_root = settings.path_template or settings.zk_root
    chroot, root = "", settings.zk_root
    if settings.layout == "standard" and settings.zk_root.count("/") > 1:
        chroot, _, last = settings.zk_root.rpartition("/")
        root = "/" + last
    with loaded_copy(settings.zookeeper_data, settings.zookeeper_data_log,
                     settings.cache_dir) as copy:
        # As its super user, with no SASL or TLS: every znode reads; it listens on loopback.
        private = dataclasses.replace(
            settings, zookeeper=copy.connect + chroot, zk_root=root, zk_auth=copy.auth,
            zk_sasl_mechanism=None, zk_sasl_username=None, zk_sasl_password=None, zk_tls=False,
            zk_tls_cafile=None, zk_tls_certfile=None, zk_tls_keyfile=None)
        set_secrets([*settings.secrets(), *private.secrets()])   # its password, never logged
        found = {"source": f"{given_root} in the ZooKeeper data directory "
                           f"{settings.zookeeper_data}",
                 **copy.to_json(settings.zookeeper_data, settings.zookeeper_data_log),
                 # The brokers' cluster id under the chroot: the identity migrate/stores.py
                 # gives a live ensemble.
                 "zookeeper_cluster_id": cluster_id(private.connection),
                 "zookeeper_chroot": chroot}
        data = scan(private, found)
        # ACLs bind no reader of the files: what the live ensemble would have refused is said.
        acls = check_acls(settings, private, private.path_template or root)
        found["acls"] = acls.to_json()
        found["warnings"] += [acls.warning()] if acls.refused else []
        # The copy holds the whole ensemble: other applications' and chroot-less consumers'
        # offsets are there too, and once ZooKeeper is gone this copy is the only place left.
        found["elsewhere"] = elsewhere(settings, search(
            private.connection, given_root, settings.ensemble_max_znodes,
            settings.ensemble_max_time))
        # ZooKeeper expires the sessions it restores after their own timeouts: a registration
        # that went during the read may be missing from the liveness columns.
        found["ephemerals_expired"] = max(copy.ephemerals - ephemerals(copy.connect), 0)
    return data


def elsewhere(settings: Settings, found: Search) -> dict:
    """The search of the copy for other offsets trees, as scan's JSON holds it: each tree with
    its counts and the scan that reads it, and how far the search went."""
    trees = [{"path": t.path, "groups": len({r["group"] for r in t.rows}), "offsets": len(t.rows),
              "brokers_of": t.brokers_of, "scan": scan_command(settings, t.path)}
             for t in found.trees]
    return {"from": "/", "checked_root": found.skipped_root, "trees": trees,
            "listed": found.listed, "seconds": round(found.seconds, 3),
            "complete": found.complete, "cut_short": found.cut_short,
            "unreadable": found.unreadable}


def scan_command(settings: Settings, root: str) -> str:
    """The scan of another offsets tree of the same copy, as an operator pastes it."""
    log_dir = settings.zookeeper_data_log
    return (f"zk2kafka scan --zookeeper-data {shlex.quote(str(settings.zookeeper_data))}"
            + (f" --zookeeper-data-log {shlex.quote(str(log_dir))}" if log_dir else "")
            + f" --zk-root {shlex.quote(root)}")


def cluster_id(connection: Connection) -> str | None:
    """The brokers' cluster id in the copy (`<chroot>/cluster/id`), or None."""
    client = connect(connection)
    try:
        data, _ = client.get("/cluster/id")
        return str(json.loads(data)["id"])
    except (NoNodeError, ValueError, KeyError, TypeError):
        return None
    finally:
        close(client)


def snapshot_metadata(found: dict) -> dict[str, str]:
    """The data directory's identity as the zk snapshot's Parquet metadata (`zk2kafka.<key>`)."""
    keys = ("dir", "log_dir", "last_zxid", "snapshot_zxid", "read_with", "zookeeper_cluster_id",
            "zookeeper_chroot")
    return {f"zookeeper_data.{k}": str(found[k]) for k in keys if found.get(k) is not None}
