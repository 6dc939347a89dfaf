"""ZkOffsetWriter: the ZooKeeper half of the dual commit. Writes a group's offsets in one
transaction.

Every write is conditioned on the znode version read at scan time, so an old consumer
that moved the offset since is detected and reported, never overwritten. Values are
written in the form the znode already has: a decimal (minus one under
`--offset-semantics last`), or storm-kafka's JSON with only `offset` changed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, ConnectionLoss, NoNodeError, RolledBackError,
                              ZookeeperError)

from migrate.errors import MigrateError
from migrate.zk.walk import RETRIABLE, AsyncBatch, Request, await_connection

log = logging.getLogger(__name__)
TRANSACTION_OPS = 1000  # keeps a request well under ZooKeeper's 1 MiB jute.maxbuffer
# A group's writes: path -> (new value, the znode version the write is conditioned on).
Writes = Mapping[str, tuple[bytes, int]]


class ZkChanged(MigrateError):
    """A znode's version is not the one the plan was made from: something else wrote it since."""

    def __init__(self, group: str, paths: list[str]):
        shown = ", ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
        super().__init__(f"group {group}: ZooKeeper offsets changed since the scan "
                         f"(a live old consumer?): {shown}")
        self.group = group
        self.paths = paths


@dataclass(frozen=True)
class Znode:
    value: bytes | None   # None: the node does not exist
    version: int | None
    # the zxid of its last change: tells a recreated znode from the one planned
    mzxid: int | None = None


def encode(current: bytes | None, offset: int, layout: str, semantics: str) -> bytes:
    """`offset` (the next offset to read) in the znode's own form."""
    stored = offset - 1 if semantics == "last" else offset
    if layout == "storm" and current:
        doc = json.loads(current)
        doc["offset"] = stored
        return json.dumps(doc, separators=(",", ":")).encode()
    return str(stored).encode()


class ZkOffsetWriter:
    """Reads and conditionally writes offset znodes, a group at a time; safe to share by threads."""

    def __init__(self, client: KazooClient, retry_deadline: float = 120.0, in_flight: int = 64):
        self.client = client
        self.retry_deadline = retry_deadline
        self.in_flight = max(1, in_flight)
        # one batch probes for multiRead once, not per call
        self._reads = AsyncBatch(client, deadline=retry_deadline)

    def read(self, paths: list[str]) -> dict[str, Znode]:
        """Current value and version of each path (pipelined; multiRead where the server has it)."""
        answers = self._reads.run(Request(path, "get", path) for path in paths)
        out = {}
        for path, answer in answers.items():
            if isinstance(answer, NoNodeError):
                out[path] = Znode(None, None)
            elif isinstance(answer, Exception):
                raise answer
            else:
                data, stat = answer
                out[path] = Znode(data, stat.version, stat.mzxid)
        return out

    def write(self, group: str, writes: Writes) -> dict[str, int]:
        """Set each path to its value if its version is still the given one.

        Returns the new versions by path.

        All of a group's writes go in one transaction (chunks of TRANSACTION_OPS for huge
        groups), so a group is written whole or not at all. Raises ZkChanged.
        """
        items = sorted(writes.items())
        for i in range(0, len(items), TRANSACTION_OPS):
            self._transaction(group, items[i:i + TRANSACTION_OPS])
        return {path: version + 1 for path, (_, version) in items}

    def write_many(self, writes: Mapping[str, Writes]) -> dict[str, Exception | None]:
        """write() of many groups, their transactions pipelined `in_flight` at a time.

        Returns, per group, None or its error.
        """
        out: dict[str, Exception | None] = {}
        in_flight: list = []

        def collect(group: str, items: list, pending) -> None:
            try:
                self._check(group, items, self._answer(group, items, pending))
                out[group] = None
            except (ZkChanged, ZookeeperError, *RETRIABLE) as exc:
                out[group] = exc

        for group, group_writes in writes.items():
            items = sorted(group_writes.items())
            if len(items) > TRANSACTION_OPS:   # a huge group keeps its chunked, one-at-a-time path
                try:
                    self.write(group, group_writes)
                    out[group] = None
                except (ZkChanged, ZookeeperError, *RETRIABLE) as exc:
                    out[group] = exc
                continue
            try:
                in_flight.append((group, items, self._begin(items).commit_async()))
            except RETRIABLE:
                in_flight.append((group, items, None))   # sent again below, once reconnected
            if len(in_flight) >= self.in_flight:
                collect(*in_flight.pop(0))
        for entry in in_flight:
            collect(*entry)
        return out

    def _begin(self, items: list[tuple[str, tuple[bytes, int]]]):
        tx = self.client.transaction()
        for path, (value, version) in items:
            tx.set_data(path, value, version=version)
        return tx

    def _answer(self, group: str, items: list, pending) -> list | None:
        """The transaction's results; None when the answer was lost and a re-check found it done."""
        try:
            if pending is None:
                raise ConnectionLoss()
            return pending.get(timeout=30)
        except RETRIABLE:
            return self._recover(group, items)

    def _transaction(self, group: str, items: list[tuple[str, tuple[bytes, int]]]) -> None:
        try:
            results = self._begin(items).commit()
        except RETRIABLE:
            results = self._recover(group, items)
        self._check(group, items, results)

    def _recover(self, group: str, items: list) -> list | None:
        """The answer was lost with the connection: look whether the transaction applied."""
        await_connection(self.client, 30.0)
        now = self.read([path for path, _ in items])
        if all(now[p].value == v and now[p].version == ver + 1 for p, (v, ver) in items):
            return None   # it did
        if all(now[p].version == ver for p, (_, ver) in items):
            return self._begin(items).commit()   # it did not: send it again
        raise ZkChanged(group, [p for p, (_, ver) in items if now[p].version not in (ver, ver + 1)])

    def _check(self, group: str, items: list, results: list | None) -> None:
        if results is None:
            return
        def refused(result) -> bool:
            # A RolledBackError only says another operation of the transaction failed.
            return isinstance(result, Exception) and not isinstance(result, RolledBackError)

        failed = [path for (path, _), result in zip(items, results) if refused(result)]
        if failed:
            kinds = {type(r) for r in results if refused(r)}
            if kinds <= {BadVersionError, NoNodeError}:
                raise ZkChanged(group, failed)
            raise next(r for r in results if isinstance(r, ZookeeperError) and refused(r))
