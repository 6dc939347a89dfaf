"""An old client that keeps its offsets in ZooKeeper *through the broker*: OffsetCommit v0.

kafka-python 3 still carries the v0 request in its legacy protocol classes
(`kafka.protocol.old.commit.OffsetCommitRequest[0]`; its generated `kafka.protocol` classes start at
v2). A ZooKeeper-mode broker (3.9 included) stores a v0 commit in its own ZooKeeper,
`/consumers/<group>/offsets/<topic>/<partition>` under its chroot, and the client never registers
under `ids/`: kafka-python with api_version=(0, 8, 1), early Sarama and kafka_ex behave so. A KRaft
broker answers UNSUPPORTED_VERSION (35).

As a script it commits `offset`, `offset + 1`, ... every `every` seconds until killed:

    python offset_commit_v0.py BOOTSTRAP GROUP TOPIC PARTITION OFFSET EVERY
"""

from __future__ import annotations

import itertools
import socket
import struct
import sys
import threading
import time

from kafka.protocol.old.commit import OffsetCommitRequest, OffsetCommitResponse

UNSUPPORTED_VERSION = 35


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
        return {(name, partition): error for name, partitions in answer.topics for partition, error in partitions}

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


class Committer(threading.Thread):
    """Commits `starts` (topic, partition) -> offset, then each one further, every `every` seconds
    until `halt` is set: an app that processes a message a partition per tick."""

    def __init__(self, bootstrap: str, group: str, starts: dict[tuple[str, int], int], every: float):
        super().__init__(daemon=True)
        self.client = OffsetCommitV0(bootstrap)
        self.group, self.every = group, every
        self.offsets = dict(starts)
        self.halt = threading.Event()
        self.committed: list[tuple[float, dict]] = []   # (time.time(), offsets) of each stored commit

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                errors = self.client.commit(self.group, self.offsets)
                assert set(errors.values()) == {0}, errors
                self.committed.append((time.time(), dict(self.offsets)))
                self.offsets = {key: offset + 1 for key, offset in self.offsets.items()}
                self.halt.wait(self.every)
        finally:
            self.client.close()

    def stop(self) -> float:
        """Stop committing; returns when the last commit was stored."""
        self.halt.set()
        self.join(timeout=30)
        return self.committed[-1][0]


if __name__ == "__main__":
    bootstrap, group, topic, partition, offset, every = sys.argv[1:]
    client = OffsetCommitV0(bootstrap)
    for n in itertools.count(int(offset)):
        print(f"committed {topic}-{partition} -> {n}: error {client.commit(group, {(topic, int(partition)): n})}",
              flush=True)
        time.sleep(float(every))
