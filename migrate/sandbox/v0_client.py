"""An old client that keeps its offsets in ZooKeeper *through the broker*: OffsetCommit v0, the
sandbox's stand-in for a legacy application (`zk2kafka sandbox v0-client start|stop`).

kafka-python 3 still carries the v0 request in its legacy protocol classes
(`kafka.protocol.old.commit.OffsetCommitRequest[0]`; its generated `kafka.protocol` classes start at
v2). A ZooKeeper-mode broker (3.9 included) stores a v0 commit in its own ZooKeeper,
`/consumers/<group>/offsets/<topic>/<partition>` under its chroot, and the client never registers
under `ids/`: kafka-python with api_version=(0, 8, 1), early Sarama and kafka_ex behave so. A KRaft
broker answers UNSUPPORTED_VERSION (35). It sends no ApiVersions first, so the broker's
DeprecatedRequestsPerSec names its software `unknown`.

`start` runs it as a process of its own, detached, committing `offset`, `offset + 1`, ... every
`every` seconds; its pid and log are kept under the sandbox's home (`v0-clients/<group>.json`,
`.log`), so that `stop` and `sandbox down` find it again.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from kafka.protocol.old.commit import OffsetCommitRequest, OffsetCommitResponse

from migrate.errors import SandboxError
from migrate.processes import pid_alive

UNSUPPORTED_VERSION = 35
FIRST_COMMIT_TIMEOUT = 30.0   # seconds `start` waits for the client's first stored commit


class OffsetCommitV0:
    """One connection to one broker, sending OffsetCommit v0 requests."""

    def __init__(self, bootstrap: str, client_id: str = "legacy-v0-client"):
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.client_id = client_id
        self.correlation = itertools.count(1)

    def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Commit `offsets` for `group`; the broker's error code per partition (0: stored)."""
        topics: dict[str, list] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append((partition, offset, ""))
        request = OffsetCommitRequest[0](group_id=group, topics=list(topics.items()))
        request.with_header(correlation_id=next(self.correlation), client_id=self.client_id)
        self.sock.sendall(request.encode(header=True, framed=True))
        size = struct.unpack(">i", self._read(4))[0]
        answer = OffsetCommitResponse[0].decode(self._read(size), header=True)
        # (name, [(partition_index, error_code)]) per topic
        return {(name, partition): error for name, partitions in answer.topics
                for partition, error in partitions}

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def commit_forever(bootstrap: str, group: str, topic: str, partition: int, offset: int,
                   every: float) -> None:
    """The client's loop: one line per commit on stdout; the next offset only once one is stored."""
    client = OffsetCommitV0(bootstrap)
    while True:
        # SIGTERM waits until the answer is logged: a commit the broker stored is never left out of
        # the log that `stop` reports the last commit from.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        error = client.commit(group, {(topic, partition): offset})[(topic, partition)]
        if error == 0:
            print(f"committed {topic}-{partition} -> {offset}", flush=True)
            offset += 1
        else:
            print(f"commit of {topic}-{partition} -> {offset} refused: error {error}", flush=True)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        time.sleep(every)


def start(home: Path, bootstrap: str, group: str, topic: str, partition: int, offset: int,
          every: float) -> dict:
    """Start a detached v0 client of `group` and return its record once its first commit is
    stored. Raises SandboxError when one of `group` runs already, or the client fails first."""
    record_path, log_path = _paths(home.resolve(), group)
    running = _record(record_path)
    if running is not None:
        raise SandboxError(f"a v0 client of {group} runs already (pid {running['pid']}): "
                           "`zk2kafka sandbox v0-client stop` it first")
    record_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "migrate.sandbox.v0_client", bootstrap, group, topic,
             str(partition), str(offset), str(every)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    record = {"group": group, "topic": topic, "partition": partition, "every": every,
              "pid": process.pid, "log": str(log_path), "bootstrap_server": bootstrap}
    record_path.write_text(json.dumps(record))
    deadline = time.monotonic() + FIRST_COMMIT_TIMEOUT
    while not _last_commit(log_path):
        if process.poll() is not None or time.monotonic() > deadline:
            stop(home, group)
            tail = log_path.read_text(errors="replace").strip().splitlines()[-5:]
            raise SandboxError(f"the v0 client of {group} stored no commit at {bootstrap}"
                               + (": " + " / ".join(tail) if tail else ""))
        time.sleep(0.1)
    return {**record, "last_commit": _last_commit(log_path)}


def stop(home: Path, group: str | None = None) -> list[dict]:
    """Stop the v0 clients under `home` (only `group`'s when given); the record of each, with
    its last stored commit. A client that is gone already is only forgotten."""
    stopped = []
    for record_path in sorted((home / "v0-clients").glob("*.json")):
        record = json.loads(record_path.read_text())
        if group is not None and record["group"] != group:
            continue
        if _ours(record["pid"]):
            os.killpg(record["pid"], signal.SIGTERM)
            deadline = time.monotonic() + 10
            while pid_alive(record["pid"]) and time.monotonic() < deadline:
                time.sleep(0.05)
        record_path.unlink()
        stopped.append({**record, "last_commit": _last_commit(Path(record["log"]))})
    return stopped


def _paths(home: Path, group: str) -> tuple[Path, Path]:
    folder = home / "v0-clients"
    return folder / f"{group}.json", folder / f"{group}.log"


def _record(path: Path) -> dict | None:
    """The record of a client that still runs; a stale one is removed."""
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    if _ours(record["pid"]):
        return record
    path.unlink()
    return None


def _ours(pid: int) -> bool:
    """True while `pid` runs and is a v0 client (a pid reused by another process is not)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return pid_alive(pid) and b"migrate.sandbox.v0_client" in cmdline


def _last_commit(log_path: Path) -> str | None:
    """`payments-0 -> 7` of the client's last stored commit, None before the first."""
    if not log_path.exists():
        return None
    lines = [line for line in log_path.read_text(errors="replace").splitlines()
             if line.startswith("committed ")]
    return lines[-1].removeprefix("committed ") if lines else None


if __name__ == "__main__":
    _bootstrap, _group, _topic, _partition, _offset, _every = sys.argv[1:]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    commit_forever(_bootstrap, _group, _topic, int(_partition), int(_offset), float(_every))
