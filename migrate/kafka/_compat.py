"""kafka-python's private names: the only place zk2kafka reaches them, checked at import.

This is about the *library*: kafka-python 3.0.x keeps the IO loop, the broker's ApiVersions
answer, the coroutines behind its blocking admin calls and the coordinator cache on private
attributes, and zk2kafka needs each (pipelined commits and offset fetches, Metadata before
DescribeCluster v1, forgetting a coordinator that moved). A rename in another kafka-python release
fails here, at once, as one line naming the release, instead of a feature quietly falling back.
What a *broker* can answer is `migrate/kafka/compat.py`, a different matter.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import kafka.errors as Errors
from kafka.admin import KafkaAdminClient
from kafka.cluster import ClusterMetadata
from kafka.net.manager import KafkaConnectionManager
from kafka.protocol.metadata.find_coordinator import CoordinatorType

from migrate.errors import check_names

# The minor release the suite ran; pyproject.toml caps kafka-python below the next one.
TESTED = "3.0"


def _sets(cls: type, attr: str) -> bool:
    # An instance attribute cannot be looked up on the class: its constructor must assign it.
    return attr in cls.__init__.__code__.co_names


check_names("kafka-python", TESTED, {
    "KafkaAdminClient._manager": _sets(KafkaAdminClient, "_manager"),
    "KafkaAdminClient._get_cluster_metadata": hasattr(KafkaAdminClient, "_get_cluster_metadata"),
    "KafkaConnectionManager.run": hasattr(KafkaConnectionManager, "run"),
    "KafkaConnectionManager.call_soon": hasattr(KafkaConnectionManager, "call_soon"),
    "KafkaConnectionManager.cluster": _sets(KafkaConnectionManager, "cluster"),
    "KafkaConnectionManager.broker_version_data":
        _sets(KafkaConnectionManager, "broker_version_data"),
    "ClusterMetadata._coordinators": _sets(ClusterMetadata, "_coordinators"),
    "KafkaAdminClient._find_coordinator_ids": hasattr(KafkaAdminClient, "_find_coordinator_ids"),
    "KafkaAdminClient._find_coordinator_id": hasattr(KafkaAdminClient, "_find_coordinator_id"),
    "KafkaConnectionManager.send": hasattr(KafkaConnectionManager, "send"),
})


def broker_version_data(admin: KafkaAdminClient) -> Any:
    """The bootstrap broker's ApiVersions answer as kafka-python keeps it; None before it came."""
    return admin._manager.broker_version_data


def run(admin: KafkaAdminClient, coroutine_fn, *args) -> Any:
    """Run `coroutine_fn(*args)` on the admin client's IO loop and wait for its result."""
    return admin._manager.run(coroutine_fn, *args)


def call_soon(admin: KafkaAdminClient, coroutine_fn, *args) -> Any:
    """Schedule `coroutine_fn(*args)` on the IO loop (from a coroutine running there).

    Returns its future.
    """
    return admin._manager.call_soon(coroutine_fn, *args)


def pipelined(admin: KafkaAdminClient, coroutine_fn, calls: Mapping[Hashable, tuple],
              window: int) -> dict[Hashable, Any]:
    """`coroutine_fn(*args)` for each key's args, `window` of them on the wire at a time, on the
    admin client's IO loop: each key's answer, or the exception it raised (the caller sorts them).

    kafka-python's blocking admin calls send one request and wait; this keeps a window of them in
    flight without a thread hand-off per request.
    """
    async def send_all():
        answers, in_flight = {}, deque()

        async def settle():
            key, future = in_flight.popleft()
            try:
                answers[key] = await future
            except Exception as exc:  # noqa: BLE001 - each key's own outcome, for the caller
                answers[key] = exc

        for key, args in calls.items():
            if len(in_flight) >= window:
                await settle()
            in_flight.append((key, call_soon(admin, coroutine_fn, *args)))
        while in_flight:
            await settle()
        return answers

    return run(admin, send_all) if calls else {}


def cluster_metadata(admin: KafkaAdminClient) -> dict:
    """A Metadata request for no topics: brokers and cluster id, answered by every release."""
    return run(admin, admin._get_cluster_metadata, [])


def forget_coordinators(admin: KafkaAdminClient, groups: Iterable[str]) -> None:
    """Drop the cached coordinators of `groups`: kafka-python never drops one that moved or died."""
    # Keyed (CoordinatorType, name); popped by key: a walk of the whole cache (a key per group
    # ever asked) on every call showed in sync's profile (docs/performance.md).
    coordinators = admin._manager.cluster._coordinators
    for group in groups:
        coordinators.pop((CoordinatorType.GROUP, group), None)


def send_to_coordinator(admin: KafkaAdminClient):
    """The coroutine that sends `request` to the coordinator of `group` (cached as kafka-python's
    own calls cache it) on the admin client's connection, and gives its answer: for pipelined,
    with a request of zk2kafka's own codec (wire/)."""
    async def send(group: str, request):
        node = await admin._find_coordinator_id(group)
        return await admin._manager.send(request, node_id=node)
    return send


def send_to_coordinators(admin: KafkaAdminClient, groups: Iterable[str], request_of) -> list:
    """`request_of(groups)` sent to each coordinator of `groups` with its own groups, on the admin
    client's connections; the answers. For a request kafka-python has no call of its own
    (a request of zk2kafka's own codec, wire/)."""
    async def send_all():
        by_node: dict[int, list[str]] = {}
        for group, node in (await admin._find_coordinator_ids(list(groups))).items():
            by_node.setdefault(node, []).append(group)
        return [await admin._manager.send(request_of(names), node_id=node)
                for node, names in sorted(by_node.items())]
    return run(admin, send_all)


class Pending:
    """An answer on its way from kafka-python's IO thread, waited for on the caller's."""

    def __init__(self, future):
        self._done = threading.Event()
        self._future = future
        future.add_both(lambda _: self._done.set())

    def result(self, timeout: float) -> Any:
        """The answer; raises what the request failed with, or KafkaTimeoutError."""
        if not self._done.wait(timeout):
            raise Errors.KafkaTimeoutError(f"no answer within {timeout:g}s")
        if self._future.failed():
            raise self._future.exception
        return self._future.value


def send_soon(admin: KafkaAdminClient, node_id: int, request) -> Pending:
    """`request` sent to broker `node_id` on the admin client's connection, without waiting: the
    caller reads one answer while the next is on the wire (offsets_log/reader.py's fetches)."""
    return Pending(admin._manager.call_soon(admin._manager.send, request, node_id))
