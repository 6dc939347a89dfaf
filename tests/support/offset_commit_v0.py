"""An old client that keeps its offsets in ZooKeeper *through the broker* (OffsetCommit v0), as a
thread of the test: the client itself is the sandbox's (migrate/sandbox/v0_client.py, `zk2kafka
sandbox v0-client`)."""

from __future__ import annotations

import threading
import time

from migrate.sandbox.v0_client import UNSUPPORTED_VERSION, OffsetCommitV0

__all__ = ["UNSUPPORTED_VERSION", "Committer", "OffsetCommitV0"]


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

