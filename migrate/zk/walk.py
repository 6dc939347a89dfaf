"""Pipelined ZooKeeper reads over one session, with retries that resume instead of restarting.

`AsyncBatch.run` sends many `get`/`get_children` reads with a bounded number in
flight (a sliding window: ZooKeeper answers one session's requests in order, so
the oldest answer is the next one due). On ZooKeeper >= 3.6 reads travel
`per_request` at a time in one multiRead; older servers get one kazoo
`*_async` call per read. A read lost to a connection loss or session expiry is
sent again once kazoo has reconnected; answers already received are kept.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (ConnectionClosedError, ConnectionLoss, KazooException,
                              MarshallingError, OperationTimeoutError, SessionExpiredError,
                              UnimplementedError)
from kazoo.handlers.threading import KazooTimeoutError
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_random_exponential

from migrate.errors import MigrateError, ZkUnavailable
from migrate.zk.multiread import multi_read_async

log = logging.getLogger(__name__)

# Lost with the connection, not an answer about the node: send again after reconnecting.
RETRIABLE = (ConnectionLoss, SessionExpiredError, ConnectionClosedError, OperationTimeoutError,
             KazooTimeoutError)


@dataclass(frozen=True)
class Request:
    key: Hashable
    op: str  # "get" | "children"
    path: str


class _Interrupted(MigrateError):
    """Some requests of a batch were lost with the connection."""


class AsyncBatch:
    """Runs batches of reads, `window` requests in flight; re-sends lost ones until `deadline`."""

    def __init__(self, client: KazooClient, window: int = 512, deadline: float = 120.0,
                 sleep: Callable[[float], None] | None = None, request_timeout: float = 30.0,
                 multi: bool | None = None, per_request: int = 128):
        self.client = client
        self.window = window
        self.multi = multi  # None: find out on first use
        self.per_request = per_request
        self.deadline = deadline
        self.sleep = sleep
        self.request_timeout = request_timeout
        self.retries = 0  # requests sent again after a connection loss, for the progress line

    def run(self, requests: Iterable[Request]) -> dict[Hashable, object]:
        """key -> the answer (bytes+stat for get, list of names for children), or the ZooKeeper
        error for that node.

        Raises ZkUnavailable when ZooKeeper stays unreachable past the deadline.
        """
        answers: dict[Hashable, object] = {}
        todo = list(requests)
        retrying = Retrying(retry=retry_if_exception_type(_Interrupted),
                            stop=stop_after_delay(self.deadline),
                            wait=wait_random_exponential(multiplier=0.2, max=5), reraise=True,
                            **({"sleep": self.sleep} if self.sleep else {}))
        try:
            for attempt in retrying:
                with attempt:
                    lost = self._send(todo, answers)
                    if lost:
                        self.retries += len(lost)
                        log.warning("ZooKeeper connection lost; "
                                    "re-sending %d request(s) once reconnected", len(lost))
                        todo = lost
                        self._await_connection()
                        raise _Interrupted()
        except _Interrupted:
            raise ZkUnavailable(f"ZooKeeper unreachable for more than {self.deadline:.0f}s; "
                                f"{len(todo)} read(s) could not be completed") from None
        return answers

    def _send(self, todo: list[Request], answers: dict) -> list[Request]:
        if self.multi is None:
            self.multi = self._server_has_multiread()
        size = self.per_request if self.multi else 1
        chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
        lost: list[Request] = []
        in_flight: deque = deque()

        def collect() -> None:
            chunk, pending = in_flight.popleft()
            try:
                result = pending.get(timeout=self.request_timeout)
                for request, answer in zip(chunk, result if self.multi else [result]):
                    # an exception instance is that node's answer (NoNode, NoAuth)
                    answers[request.key] = answer
            except RETRIABLE:
                lost.extend(chunk)
            except KazooException as e:
                # single reads: NoNode, NoAuth, ...: an answer about that node
                answers[chunk[0].key] = e

        for chunk in chunks:
            try:
                in_flight.append((chunk, self._submit(chunk)))
            except RETRIABLE:
                lost.extend(chunk)
            if len(in_flight) * size >= self.window:
                collect()
        while in_flight:
            collect()
        return lost

    def _submit(self, chunk: list[Request]):
        if self.multi:
            return multi_read_async(self.client, [(r.op, r.path) for r in chunk])
        request = chunk[0]
        call = self.client.get_async if request.op == "get" else self.client.get_children_async
        return call(request.path)

    def _server_has_multiread(self) -> bool:
        """Probe once: ZooKeeper < 3.6 rejects opcode 22.

        Some versions drop the connection; kazoo reconnects.
        """
        try:
            multi_read_async(self.client, [("children", "/")]).get(timeout=self.request_timeout)
            return True
        except (UnimplementedError, MarshallingError, *RETRIABLE) as e:
            log.info("ZooKeeper has no multiRead (%s); sending reads one by one", type(e).__name__)
            self._await_connection()
            return False

    def _await_connection(self, timeout: float = 10.0) -> None:
        await_connection(self.client, timeout)


def await_connection(client: KazooClient, timeout: float = 10.0) -> bool:
    """Block until kazoo has reconnected or `timeout` passes; True when connected.

    On False a retry loop tries anyway.
    """
    if client.state == KazooState.CONNECTED:
        return True
    event = threading.Event()

    def listener(state):
        if state == KazooState.CONNECTED:
            event.set()
        return event.is_set()  # True removes the listener

    client.add_listener(listener)
    if client.state == KazooState.CONNECTED:
        event.set()
    connected = event.wait(timeout)
    client.remove_listener(listener)
    return connected
