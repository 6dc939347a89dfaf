"""The log bounds of partitions (ListOffsets earliest and latest), as the snapshot records them and
a reviewed plan checks them again before it writes."""

from __future__ import annotations

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, OffsetSpec
from kafka.errors import KafkaError

from migrate.errors import KafkaUnavailable
from migrate.kafka.compat import BrokerFeatures
from migrate.kafka.retry import RetryPolicy, is_retriable

Bounds = tuple[int, int]   # (log start, log end)


def log_bounds(admin: KafkaAdminClient, features: BrokerFeatures, policy: RetryPolicy,
               partitions: list[TopicPartition]) -> dict[TopicPartition, Bounds | str]:
    """Each partition's (log start, log end), or why Kafka would not tell it (a partition refused
    for a reason retrying does not fix: unknown, no leader, not authorized).

    Raises KafkaUnavailable when Kafka stays away past the retry deadline.
    """
    out: dict[TopicPartition, Bounds | str] = {}
    if partitions:
        _fill(admin, features, policy, list(partitions), out)
    return out


def _fill(admin: KafkaAdminClient, features: BrokerFeatures, policy: RetryPolicy,
          tps: list[TopicPartition], out: dict) -> None:
    def list_offsets(spec: OffsetSpec):
        return features.call("ListOffsets",
                             lambda: admin.list_partition_offsets(dict.fromkeys(tps, spec)))

    try:
        start = policy.call("list log-start offsets", lambda: list_offsets(OffsetSpec.EARLIEST))
        end = policy.call("list log-end offsets", lambda: list_offsets(OffsetSpec.LATEST))
    except KafkaError as exc:
        if is_retriable(exc):
            raise KafkaUnavailable(f"list offsets: {exc}") from exc
        if len(tps) == 1:   # this partition's own refusal
            out[tps[0]] = f"{type(exc).__name__}: {exc}"
            return
        half = len(tps) // 2   # one refused partition fails the request: find which, by halves
        _fill(admin, features, policy, tps[:half], out)
        _fill(admin, features, policy, tps[half:], out)
        return
    for tp in tps:
        out[tp] = (start[tp].offset, end[tp].offset)
