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
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, ConnectionLoss, NoNodeError, RolledBackError,
                              ZookeeperError)
from tenacity import (RetryError, Retrying, retry_if_exception_type, stop_after_delay,
                      wait_random_exponential)

from migrate.errors import MigrateError, ZkUnavailable
from migrate.zk.walk import RETRIABLE, AsyncBatch, Request, await_connection

log = logging.getLogger(__name__)
TRANSACTION_OPS = 1000  # keeps a request well under ZooKeeper's 1 MiB jute.maxbuffer
SHARED_OPS = 500   # writes of several groups in one transaction (write_many)
READS_PER_REQUEST = 500   # reads per multiRead: answers of about 40 KiB
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
    ctime: int | None = None   # when it was created (ms since the epoch)


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
        # One batch probes for multiRead once, not per call. A batch of groups' znodes goes in a
        # few large multiReads: kazoo's cost is per request more than per read.
        self._reads = AsyncBatch(client, deadline=retry_deadline, per_request=READS_PER_REQUEST,
                                 window=4 * READS_PER_REQUEST)

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
                out[path] = Znode(data, stat.version, stat.mzxid, stat.ctime)
        return out

    def read_latest(self, paths: list[str]) -> dict[str, Znode]:
        """read() of what the ensemble holds now: a server answers reads from its own copy, which
        may lag the leader's, so the reads follow a sync (they are answered after it, in order).
        A fence reads this way: a write the ensemble applied before the read is never missed.
        """
        if paths:
            self._sync(paths[0])
        return self.read(paths)

    def _sync(self, path: str) -> None:
        retrying = Retrying(retry=retry_if_exception_type(RETRIABLE),
                            stop=stop_after_delay(self.retry_deadline),
                            wait=wait_random_exponential(multiplier=0.2, max=5),
                            before_sleep=lambda _: await_connection(self.client, 10.0))
        try:
            for attempt in retrying:
                with attempt:
                    self.client.sync(path)
        except RetryError:
            raise ZkUnavailable(f"ZooKeeper unreachable for more than {self.retry_deadline:.0f}s;"
                                " its offsets could not be read") from None

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
        """write() of many groups, pipelined `in_flight` requests at a time.

        Returns, per group, None or its error.

        Groups travel together, whole, in one transaction of up to SHARED_OPS writes: kazoo's
        cost is per request more than per write. A transaction is all or nothing, so when one
        group's write is refused none of them was applied, and each group of it is sent again
        in a transaction of its own: its answer is then exactly what it would have been alone.
        """
        out: dict[str, Exception | None] = {}
        in_flight: deque = deque()
        shared: list[tuple[str, list]] = []   # the groups of the next shared transaction

        def settle(group: str, items: list, answer: Callable[[], list | None]) -> None:
            try:
                self._check(group, items, answer())
                out[group] = None
            except (ZkChanged, ZookeeperError, *RETRIABLE) as exc:
                out[group] = exc

        def collect() -> None:
            members, pending = in_flight.popleft()
            try:
                if pending is None:
                    raise ConnectionLoss()
                results = pending.get(timeout=30)
            except RETRIABLE:
                # The answer was lost: the transaction was applied whole or not at all, which
                # each group finds out by reading its znodes.
                for group, items in members:
                    settle(group, items, lambda g=group, i=items: self._recover(g, i))
                return
            except ZookeeperError as exc:   # the request refused whole: each group for itself
                if len(members) == 1:
                    out[members[0][0]] = exc
                    return
                results = [exc]
            if len(members) == 1 or not any(_refused(r) for r in results):
                at = 0
                for group, items in members:
                    answer = results[at:at + len(items)]
                    at += len(items)
                    settle(group, items, lambda a=answer: a)
                return
            for group, items in members:   # nothing of it was applied: each group alone
                settle(group, items, lambda g=group, i=items: self._send_alone(g, i))

        def send() -> None:
            items = [item for _, group_items in shared for item in group_items]
            try:
                pending = self._begin(items).commit_async()
            except RETRIABLE:
                pending = None   # sent again below, once reconnected
            in_flight.append((list(shared), pending))
            shared.clear()
            if len(in_flight) >= self.in_flight:
                collect()

        for group, group_writes in writes.items():
            items = sorted(group_writes.items())
            if len(items) > TRANSACTION_OPS:   # a huge group keeps its chunked, one-at-a-time path
                try:
                    self.write(group, group_writes)
                    out[group] = None
                except (ZkChanged, ZookeeperError, *RETRIABLE) as exc:
                    out[group] = exc
                continue
            if shared and sum(len(i) for _, i in shared) + len(items) > SHARED_OPS:
                send()
            shared.append((group, items))
        if shared:
            send()
        while in_flight:
            collect()
        return out

    def _send_alone(self, group: str, items: list) -> list | None:
        """A group's own transaction, sent and answered (None: lost, and found applied)."""
        try:
            return self._begin(items).commit()
        except RETRIABLE:
            return self._recover(group, items)

    def _begin(self, items: list[tuple[str, tuple[bytes, int]]]):
        tx = self.client.transaction()
        for path, (value, version) in items:
            tx.set_data(path, value, version=version)
        return tx

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
        failed = [path for (path, _), result in zip(items, results) if _refused(result)]
        if failed:
            kinds = {type(r) for r in results if _refused(r)}
            if kinds <= {BadVersionError, NoNodeError}:
                raise ZkChanged(group, failed)
            raise next(r for r in results if isinstance(r, ZookeeperError) and _refused(r))


def _refused(result) -> bool:
    """A write's own refusal; a RolledBackError only says another write of the transaction
    failed."""
    return isinstance(result, Exception) and not isinstance(result, RolledBackError)
