"""One place that opens kafka-python clients, and the batched committed-offsets read both snapshot and writer use."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from migrate.errors import KafkaUnavailable
from migrate.kafka.retry import RetryPolicy, is_retriable
from migrate.settings import Settings


def open_admin(settings: Settings, client_id: str = "zk2kafka", in_flight: int | None = None) -> KafkaAdminClient:
    """A connected admin client for --bootstrap-server and --command-config; raises KafkaUnavailable.

    `in_flight` raises the requests kafka-python lets wait on one connection (5 by default):
    past it, it fails a send with NodeNotReadyError instead of queueing it.
    """
    options = settings.kafka_options()
    if in_flight is not None:
        options["max_in_flight_requests_per_connection"] = max(5, in_flight)
    try:
        return KafkaAdminClient(client_id=client_id, **options)
    except KafkaError as exc:
        # e.g. "Unable to bootstrap from ...", or an authentication failure: no traceback, just where and why.
        raise KafkaUnavailable(f"cannot reach Kafka at {settings.bootstrap_server}: {exc}",
                               bootstrap_server=settings.bootstrap_server) from exc


def fetch_committed(admin: KafkaAdminClient, policy: RetryPolicy, groups: Sequence[str],
                    on_retry: Callable[[BaseException], None] | None = None) -> tuple[dict, dict[str, KafkaError]]:
    """Committed offsets of many groups: one OffsetFetch per coordinator (v8+), retried on retriable errors.

    Returns ({group: {TopicPartition: OffsetAndMetadata}}, {group: the error Kafka gave for it}).
    kafka-python fails the whole request on one group's error, so a refused batch is halved
    until the refusing group stands alone. A retriable error past the deadline is raised.
    """
    committed: dict = {}
    refused: dict[str, KafkaError] = {}

    def fetch(chunk: Sequence[str]) -> None:
        try:
            committed.update(policy.call(f"read committed offsets of {len(chunk)} group(s)",
                                         lambda: admin.list_group_offsets({g: None for g in chunk}), on_retry))
        except KafkaError as exc:
            if is_retriable(exc):
                raise
            if len(chunk) == 1:
                refused[chunk[0]] = exc
                return
            half = len(chunk) // 2
            fetch(chunk[:half])
            fetch(chunk[half:])

    if groups:
        fetch(list(groups))
    return committed, refused
