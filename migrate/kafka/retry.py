"""Retry policy for Kafka calls: only errors Kafka itself marks retriable, with backoff, jitter and
a deadline.

Non-retriable errors (authorization, UNKNOWN_MEMBER_ID, ...) pass straight through
to the caller, which turns them into a reported status or a clear error. UNKNOWN_MEMBER_ID and its
KIP-848 kin (STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH) on a generation -1 commit mean the group has
live members (writer.LIVE_GROUP_ERRORS): never retried, whatever a client library flags.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import tenacity
from kafka.errors import KafkaError

log = logging.getLogger(__name__)
T = TypeVar("T")
# UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, FENCED/STALE_MEMBER_EPOCH
_LIVE_GROUP_CODES = frozenset({25, 22, 27, 110, 113})


def is_retriable(exc: BaseException) -> bool:
    """True for kafka-python errors flagged `.retriable`.

    Those are a coordinator that moved or is loading, timeouts and network errors.
    """
    return (isinstance(exc, KafkaError) and bool(getattr(exc, "retriable", False))
            and getattr(exc, "errno", None) not in _LIVE_GROUP_CODES)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, capped per wait and by an overall deadline.

    `sleep` is replaceable in tests.
    """

    deadline: float = 120.0
    initial: float = 0.2
    max_wait: float = 5.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def call(self, what: str, fn: Callable[[], T],
             on_retry: Callable[[BaseException], None] | None = None) -> T:
        """fn() retried on retriable Kafka errors until the deadline; the last error re-raised."""
        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception()
            log.warning("%s: %s; retrying (attempt %d)", what, exc, state.attempt_number)
            if on_retry is not None:
                on_retry(exc)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(is_retriable),
            stop=tenacity.stop_after_delay(self.deadline),
            wait=tenacity.wait_random_exponential(multiplier=self.initial, max=self.max_wait),
            sleep=self.sleep, before_sleep=before_sleep, reraise=True)
        return retrying(fn)
