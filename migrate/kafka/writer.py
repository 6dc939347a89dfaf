"""KafkaOffsetWriter: the Kafka half of a group's migration, OffsetCommit with generation -1, and
its read-back.

A commit from outside the group (generation -1, empty member id) is accepted only
while the group has no members. Retriable errors (coordinator moved or loading,
timeouts, a broker restart) are retried with a fresh coordinator lookup; anything
else fails the group with Kafka's own reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
import kafka.errors as Errors
from kafka.errors import KafkaError, NoError

from migrate.errors import MigrateError
from migrate.kafka import _compat as lib
from migrate.kafka import compat
from migrate.kafka.client import fetch_committed
from migrate.kafka.retry import RetryPolicy, is_retriable
from migrate.kafka.values import Committed, Key, label
from migrate.kafka.wire.offset_commit import OffsetCommitRequest

log = logging.getLogger(__name__)
# What Kafka answers a commit from outside a group (generation -1, no member id) while the group
# has members: the classic protocol's UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION /
# REBALANCE_IN_PROGRESS, a KIP-848 group's STALE_MEMBER_EPOCH / FENCED_MEMBER_EPOCH. Each says
# "the group is live", not a passing fault: no retry is sent.
LIVE_GROUP_ERRORS = (Errors.UnknownMemberIdError, Errors.IllegalGenerationError,
                     Errors.RebalanceInProgressError, Errors.StaleMemberEpochError,
                     Errors.FencedMemberEpochError)


class GroupRejected(MigrateError):
    """Kafka refused a group's commit for a reason retrying will not fix; `live` when the reason
    is that the group has members in Kafka."""

    def __init__(self, group: str, reason: str, live: bool = False):
        super().__init__(f"group {group}: {reason}")
        self.group = group
        self.reason = reason
        self.live = live


class KafkaOffsetWriter:
    """Commits, reads back and deletes groups' offsets; thread-safe, as kafka-python's admin is.

    `in_flight` bounds the commits sent at once by commit_many; the admin client must allow
    that many requests in flight per connection (see open_admin).
    """

    def __init__(self, admin: KafkaAdminClient, policy: RetryPolicy | None = None,
                 in_flight: int = 4):
        self.admin = admin
        self.policy = policy or RetryPolicy()
        self.in_flight = max(1, in_flight)
        self.features = compat.BrokerFeatures.of(admin)
        # Each group's latest accepted commit: when it was sent and when its answer came (this
        # host's clock). Its record, read back after that, bounds the broker's clock (clocks.py).
        self.accepted: dict[str, tuple[float, float]] = {}

    def committed(self, group: str) -> dict[Key, Committed]:
        """What Kafka holds for `group`, by (topic, partition).

        Raises GroupRejected or KafkaError.
        """
        def fetch():
            got = compat.fetch_group_offsets(self.admin, self.features, [group])
            if group in got.refused:
                raise got.refused[group]
            return got.found.get(group, {})
        return self._call(group, "read committed offsets", fetch)

    def committed_many(self,
                       groups: Sequence[str]) -> dict[str, dict[Key, Committed] | GroupRejected]:
        """committed() of many groups in one OffsetFetch per coordinator.

        A group Kafka refuses gets its GroupRejected instead.
        """
        found, refused = fetch_committed(self.admin, self.policy, groups,
                                         on_retry=lambda exc: self._forget(groups),
                                         features=self.features)
        out: dict = {g: GroupRejected(g, f"read committed offsets: {type(exc).__name__}: {exc}")
                     for g, exc in refused.items()}
        for g in groups:
            if g not in out:
                out[g] = found.get(g, {})
        return out

    def commit_many(self, commits: Mapping[str, Mapping[Key, int]],
                    metadata: str) -> dict[str, Exception | None]:
        """commit() of many groups, pipelined `in_flight` at a time.

        Returns, per group, None or the error that stopped it.

        Each commit is first sent once from kafka-python's own IO loop (several times the
        commits/s of blocking calls from a thread pool, docs/performance.md); a group whose first
        try fails for any reason goes through commit(), with its retries and reasons.
        """
        sent = time.time()
        first = self._pipelined(commits, metadata)
        out: dict[str, Exception | None] = {
            g: None for g, answer in first.items()
            if not isinstance(answer, BaseException) and _all_accepted(commits[g], answer.value)}
        answered = time.time()
        self.accepted.update(dict.fromkeys(out, (sent, answered)))
        # Most often the first try failed because the coordinator moved or died: look it up afresh
        # for each, rather than have every group's own retry back off against it first.
        self._forget([g for g in first if g not in out])
        for group, answer in first.items():
            if group in out:
                continue
            try:
                self.commit(group, commits[group], metadata)
                out[group] = None
            except (GroupRejected, KafkaError) as exc:
                out[group] = exc
        return out

    def _pipelined(self, commits: Mapping[str, Mapping[Key, int]],
                   metadata: str) -> dict[str, object]:
        # `in_flight` commits on the wire at once, each on zk2kafka's own codec (wire/); a
        # first-try failure is the group's answer, and commit() retries it.
        calls = {group: (group, OffsetCommitRequest(group, offsets, metadata))
                 for group, offsets in commits.items()}
        return lib.pipelined(self.admin, lib.send_to_coordinator(self.admin), calls,
                             self.in_flight)

    def commit(self, group: str, offsets: Mapping[Key, int], metadata: str) -> None:
        """Commit `offsets` for `group` in one OffsetCommit; every partition must be accepted."""
        send_one = lib.send_to_coordinator(self.admin)

        def send():
            sent = time.time()
            answer = self.features.call("OffsetCommit", lambda: lib.run(
                self.admin, send_one, group, OffsetCommitRequest(group, offsets, metadata)))
            errors = {key: Errors.for_code(code) for key, code in answer.value.items()}
            # A partition asked and not answered was not written either.
            errors.update({key: Errors.UnknownServerError for key in offsets if key not in errors})
            failed = {key: err for key, err in errors.items() if err is not NoError}
            if failed:
                key, err = min(failed.items())
                # The rest is written: a retry cannot undo that, the caller must.
                if len(failed) < len(errors):
                    raise GroupRejected(group, f"commit offsets: {len(failed)} of {len(errors)} "
                                               f"partition(s) refused ({err.__name__}, "
                                               f"e.g. {label(key)}); the others were written")
                raise err(f"{len(failed)} partition(s) refused, e.g. {label(key)}")
            self.accepted[group] = (sent, time.time())
        self._call(group, "commit offsets", send)

    def delete(self, group: str, partitions: list[Key]) -> None:
        """OffsetDelete: remove `group`'s committed offsets for `partitions` (used by rollback)."""
        tps = [TopicPartition(t, p) for t, p in partitions]
        missing = compat.can_delete_offsets(self.features)
        if tps and missing:
            raise GroupRejected(group, f"delete offsets: {missing}")

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
                                    on_retry=lambda exc: self._forget([group]))
        except KafkaError as exc:
            if is_retriable(exc):
                raise  # deadline passed: the caller leaves the group pending, a resume finishes it
            if isinstance(exc, LIVE_GROUP_ERRORS):
                raise GroupRejected(group, f"{what}: the group is live in Kafka (it has members, "
                                           f"who commit their own offsets): "
                                           f"{type(exc).__name__}", live=True) from exc
            raise GroupRejected(group, f"{what}: {type(exc).__name__}: {exc}") from exc

    def _forget(self, groups: Sequence[str]) -> None:
        # kafka-python caches coordinators and never drops one that moved or died, so every
        # retry would go to the same broker. The cache is private (kafka/_compat.py).
        lib.forget_coordinators(self.admin, groups)


def _all_accepted(offsets: Mapping[Key, int], errors: Mapping[Key, int]) -> bool:
    """Whether Kafka answered every partition of the commit with no error."""
    return all(errors.get(key) == 0 for key in offsets)
