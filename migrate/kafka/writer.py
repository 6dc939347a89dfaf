"""KafkaOffsetWriter: the Kafka half of a group's migration, OffsetCommit with generation -1, and its read-back.

A commit from outside the group (generation -1, empty member id) is accepted only
while the group has no members. Retriable errors (coordinator moved or loading,
timeouts, a broker restart) are retried with a fresh coordinator lookup; anything
else fails the group with Kafka's own reason.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError, NoError
from kafka.structs import OffsetAndMetadata

from migrate.errors import MigrateError
from migrate.kafka.retry import RetryPolicy, is_retriable

log = logging.getLogger(__name__)
Key = tuple[str, int]  # (topic, partition)


class GroupRejected(MigrateError):
    """Kafka refused a group's commit for a reason retrying will not fix (e.g. the group became active)."""

    def __init__(self, group: str, reason: str):
        super().__init__(f"group {group}: {reason}")
        self.group = group
        self.reason = reason


class KafkaOffsetWriter:
    """Commits, reads back and deletes one group's offsets; thread-safe (kafka-python's admin client is)."""

    def __init__(self, admin: KafkaAdminClient, policy: RetryPolicy | None = None):
        self.admin = admin
        self.policy = policy or RetryPolicy()

    def committed(self, group: str) -> dict[Key, tuple[int, str]]:
        """{(topic, partition): (offset, metadata)} Kafka holds for `group`; raises GroupRejected or KafkaError."""
        def fetch():
            return self.admin.list_group_offsets({group: None}).get(group, {})
        offsets = self._call(group, "read committed offsets", fetch)
        return {(tp.topic, tp.partition): (om.offset, om.metadata) for tp, om in offsets.items()}

    def commit(self, group: str, offsets: Mapping[Key, int], metadata: str) -> None:
        """Commit `offsets` for `group` in one OffsetCommit; every partition must be accepted."""
        request = {TopicPartition(t, p): OffsetAndMetadata(o, metadata, -1) for (t, p), o in offsets.items()}

        def send():
            errors = self.admin.alter_group_offsets(group, request)
            failed = {tp: err for tp, err in errors.items() if err is not NoError}
            if failed:
                tp, err = next(iter(sorted(failed.items())))
                raise err(f"{len(failed)} partition(s) refused, e.g. {tp.topic}-{tp.partition}")
        self._call(group, "commit offsets", send)

    def delete(self, group: str, partitions: list[Key]) -> None:
        """OffsetDelete: remove `group`'s committed offsets for `partitions` (used by rollback)."""
        tps = [TopicPartition(t, p) for t, p in partitions]

        def send():
            errors = self.admin.delete_group_offsets(group, tps)
            failed = {tp: err for tp, err in errors.items() if err is not NoError}
            if failed:
                tp, err = next(iter(sorted(failed.items())))
                raise err(f"{len(failed)} partition(s) not deleted, e.g. {tp.topic}-{tp.partition}")
        if tps:
            self._call(group, "delete offsets", send)

    def _call(self, group: str, what: str, fn):
        try:
            return self.policy.call(f"{what} of group {group}", fn,
                                    on_retry=lambda exc: self._forget_coordinator(group, exc))
        except KafkaError as exc:
            if is_retriable(exc):
                raise  # deadline passed: the caller leaves the group pending, a resume finishes it
            raise GroupRejected(group, f"{what}: {type(exc).__name__}: {exc}") from exc

    def _forget_coordinator(self, group: str, exc: BaseException) -> None:
        # kafka-python caches coordinators and never drops one that moved or died, so every
        # retry would go to the same broker. The cache is private: this is the one place touching it.
        cluster = getattr(getattr(self.admin, "_manager", None), "cluster", None)
        coordinators = getattr(cluster, "_coordinators", None)
        if isinstance(coordinators, dict):
            for key in [k for k in coordinators if k[1] == group]:
                del coordinators[key]
