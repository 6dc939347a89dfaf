"""One place that opens kafka-python clients and turns failing to reach Kafka into a clear error."""

from __future__ import annotations

from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from migrate.errors import KafkaUnavailable
from migrate.settings import Settings


def open_admin(settings: Settings, client_id: str = "zk2kafka") -> KafkaAdminClient:
    """A connected admin client for --bootstrap-server and --command-config; raises KafkaUnavailable."""
    options = settings.kafka_options()
    try:
        return KafkaAdminClient(client_id=client_id, **options)
    except KafkaError as exc:
        # e.g. "Unable to bootstrap from ...", or an authentication failure: no traceback, just where and why.
        raise KafkaUnavailable(f"cannot reach Kafka at {settings.bootstrap_server}: {exc}",
                               bootstrap_server=settings.bootstrap_server) from exc
