"""ZkOffsetWriter: the ZooKeeper half of the dual commit. Writes a group's offsets in one transaction.

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
from kazoo.exceptions import BadVersionError, NoNodeError, RolledBackError, ZookeeperError

from migrate.errors import MigrateError
from migrate.zk.walk import RETRIABLE, AsyncBatch, Request, await_connection

log = logging.getLogger(__name__)
TRANSACTION_OPS = 1000  # keeps a request well under ZooKeeper's 1 MiB jute.maxbuffer


class ZkChanged(MigrateError):
    """A znode's version is not the one the plan was made from: something else wrote it since."""

    def __init__(self, group: str, paths: list[str]):
        shown = ", ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
        super().__init__(f"group {group}: ZooKeeper offsets changed since the scan (a live old consumer?): {shown}")
        self.group = group
        self.paths = paths


@dataclass(frozen=True)
class Znode:
    value: bytes | None   # None: the node does not exist
    version: int | None


def encode(current: bytes | None, offset: int, layout: str, semantics: str) -> bytes:
    """`offset` (the next offset to read) in the znode's own form."""
    stored = offset - 1 if semantics == "last" else offset
    if layout == "storm" and current:
        doc = json.loads(current)
        doc["offset"] = stored
        return json.dumps(doc, separators=(",", ":")).encode()
    return str(stored).encode()


class ZkOffsetWriter:
    """Reads and conditionally writes offset znodes for one group at a time; safe to share across threads."""

    def __init__(self, client: KazooClient, retry_deadline: float = 120.0):
        self.client = client
        self.retry_deadline = retry_deadline

    def read(self, paths: list[str]) -> dict[str, Znode]:
        """Current value and version of each path (pipelined; multiRead where the server has it)."""
        answers = AsyncBatch(self.client, deadline=self.retry_deadline).run(
            Request(path, "get", path) for path in paths)
        out = {}
        for path, answer in answers.items():
            if isinstance(answer, NoNodeError):
                out[path] = Znode(None, None)
            elif isinstance(answer, Exception):
                raise answer
            else:
                data, stat = answer
                out[path] = Znode(data, stat.version)
        return out

    def write(self, group: str, writes: Mapping[str, tuple[bytes, int]]) -> dict[str, int]:
        """Set each path to its value if its version is still the given one; the new versions by path.

        All of a group's writes go in one transaction (chunks of TRANSACTION_OPS for huge
        groups), so a group is written whole or not at all. Raises ZkChanged.
        """
        items = sorted(writes.items())
        for i in range(0, len(items), TRANSACTION_OPS):
            self._transaction(group, items[i:i + TRANSACTION_OPS])
        return {path: version + 1 for path, (_, version) in items}

    def _transaction(self, group: str, items: list[tuple[str, tuple[bytes, int]]]) -> None:
        tx = self.client.transaction()
        for path, (value, version) in items:
            tx.set_data(path, value, version=version)
        try:
            results = tx.commit()
        except RETRIABLE:
            # The answer was lost with the connection: the transaction may or may not have applied.
            # Look: if every node holds our value at version+1, it did.
            await_connection(self.client, 30.0)
            now = self.read([path for path, _ in items])
            if all(now[p].value == v and now[p].version == ver + 1 for p, (v, ver) in items):
                return
            if all(now[p].version == ver for p, (_, ver) in items):
                return self._transaction(group, items)
            raise ZkChanged(group, [p for p, (_, ver) in items if now[p].version not in (ver, ver + 1)]) from None
        failed = [path for (path, _), result in zip(items, results)
                  if isinstance(result, Exception) and not isinstance(result, RolledBackError)]
        if failed:
            kinds = {type(r) for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)}
            if kinds <= {BadVersionError, NoNodeError}:
                raise ZkChanged(group, failed)
            raise next(r for r in results if isinstance(r, ZookeeperError) and not isinstance(r, RolledBackError))
