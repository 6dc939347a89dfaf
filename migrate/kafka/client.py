"""One place that opens kafka-python clients, and the batched read of committed offsets that the
snapshot, the writers and the gate use."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaConnectionError, KafkaError, SaslAuthenticationFailedError

from migrate.connection import Connection
from migrate.errors import ConfigError, KafkaUnavailable
from migrate.kafka.compat import BrokerFeatures, GroupOffsets, fetch_group_offsets
from migrate.kafka.retry import RetryPolicy, is_retriable


def open_admin(connection: Connection, client_id: str = "zk2kafka",
               in_flight: int | None = None) -> KafkaAdminClient:
    """A connected admin client for --bootstrap-server and --command-config.

    Raises KafkaUnavailable, or ConfigError when Kafka refuses the SASL login.

    `in_flight` raises the requests kafka-python lets wait on one connection (5 by default):
    past it, it fails a send with NodeNotReadyError instead of queueing it.
    """
    options = connection.kafka_options()
    source = str(connection.command_config) if connection.command_config else None
    if in_flight is not None:
        options["max_in_flight_requests_per_connection"] = max(5, in_flight)
    refusals = _Refusals()
    logging.getLogger("kafka").addHandler(refusals)
    try:
        return KafkaAdminClient(client_id=client_id, **options)
    except KafkaError as exc:
        mechanism, user = options.get("sasl_mechanism"), options.get("sasl_plain_username")
        if mechanism and refusals.sasl is not None:
            why = str(refusals.sasl.args[0] if refusals.sasl.args else refusals.sasl.description)
            raise ConfigError(f"Kafka at {connection.bootstrap_server} refused the {mechanism} "
                              f"login of user {user!r}: {why.rpartition('Error: ')[2]} "
                              f"(check sasl.jaas.config)", source=source) from None
        if mechanism and refusals.dropped:
            raise ConfigError(f"Kafka at {connection.bootstrap_server} closed the connection while "
                              f"user {user!r} logged in with {mechanism}: "
                              f"a wrong password in sasl.jaas.config, or a listener that is not "
                              f"{options.get('security_protocol')}?", source=source) from None
        # e.g. "Unable to bootstrap from ...": no traceback, just where and why (and what
        # kafka-python last met, such as a TLS alert: "bad certificate", "certificate verify
        # failed").
        last = f"; last error: {refusals.last}" if refusals.last is not None else ""
        raise KafkaUnavailable(f"cannot reach Kafka at {connection.bootstrap_server}: {exc}{last}",
                               bootstrap_server=connection.bootstrap_server) from exc
    finally:
        logging.getLogger("kafka").removeHandler(refusals)


class _Refusals(logging.Handler):
    """Remembers why kafka-python's connections failed while it bootstrapped, from its logged
    errors.

    kafka-python retries a refused SASL login like a lost connection until its bootstrap timeout,
    then says only "Unable to bootstrap". And it drops a response that arrives together with the
    connection's close (kafka-python 3.0.12, `KafkaTCPTransport._sock_recv`), so the broker's
    "invalid credentials" answer is seen only now and then; otherwise the login ends in a
    disconnect.
    """

    def __init__(self):
        super().__init__(logging.WARNING)
        self.sasl: SaslAuthenticationFailedError | None = None
        self.last: Exception | None = None  # the last connection error
        self.dropped = False  # a connection closed by the broker

    def emit(self, record: logging.LogRecord) -> None:
        for arg in record.args if isinstance(record.args, tuple) else ():
            if isinstance(arg, SaslAuthenticationFailedError):
                self.sasl = arg
            elif isinstance(arg, (KafkaConnectionError, OSError)):  # ssl.SSLError is an OSError
                self.last = arg
                self.dropped |= "socket disconnected" in str(arg)


def fetch_committed(admin: KafkaAdminClient, policy: RetryPolicy, groups: Sequence[str],
                    on_retry: Callable[[BaseException], None] | None = None,
                    features: BrokerFeatures | None = None) -> GroupOffsets:
    """Committed offsets of many groups ({group: {(topic, partition): Committed}}), retried on
    retriable errors, on zk2kafka's own codec (compat.fetch_group_offsets).

    One OffsetFetch per coordinator where the broker batches groups (v8, Kafka 3.0+), else one per
    group, pipelined. A refused batch is halved until the refusing group stands alone. A retriable
    error past the deadline is raised.
    """
    features = features or BrokerFeatures.of(admin)
    committed: dict = {}
    refused: dict[str, KafkaError] = {}

    def fetch(chunk: Sequence[str]) -> None:
        try:
            got = policy.call(f"read committed offsets of {len(chunk)} group(s)",
                              lambda: fetch_group_offsets(admin, features, chunk),
                              on_retry)
            committed.update(got.found)
            refused.update(got.refused)
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
    return GroupOffsets(committed, refused)
