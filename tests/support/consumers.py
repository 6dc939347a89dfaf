"""A consumer that has joined its group (so the group has protocol type "consumer"), as the tests of retention
and expiry need one; a group member polling in a thread of its own, as the tests of sync's series need one."""

from __future__ import annotations

import threading
import time

from kafka import KafkaConsumer


# A short rebalance timeout (max.poll.interval.ms) for a consumer that commits and leaves at once: a JoinGroup a
# loaded host sent twice leaves a member the group waits for this long before it settles without it (300 s by
# default). Not for one that stays a member without polling: past it, the client leaves its group.
REBALANCE_MS = 15_000


def joined(bootstrap: str, group: str, topic: str, timeout: float = 60,
           rebalance_ms: int | None = None) -> KafkaConsumer:
    """A consumer of `group` subscribed to `topic` and assigned partitions of it; it commits nothing itself."""
    short = {"max_poll_interval_ms": rebalance_ms} if rebalance_ms is not None else {}
    consumer = KafkaConsumer(group_id=group, bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", **short)
    deadline = time.monotonic() + timeout
    # Subscribe once the consumer's metadata has the topic: else the assignor hands out nothing until the next
    # metadata refresh.
    while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
        time.sleep(0.2)
    consumer.subscribe([topic])
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=1000)   # a whole join on a loaded host: a poll ending mid-join starts it over
    assert consumer.assignment(), f"{group}: the consumer never joined its group"
    return consumer


def settled_commit(consumer: KafkaConsumer, offsets: dict) -> None:
    """`consumer.commit(offsets)` once its group has settled: the client refuses a commit while it rebalances (a
    first join may bring a second), and polling lets it finish."""
    from kafka.errors import CommitFailedError, RebalanceInProgressError

    deadline = time.monotonic() + 4 * REBALANCE_MS / 1000
    while True:
        try:
            consumer.commit(offsets)
            return
        except (RebalanceInProgressError, CommitFailedError):
            if time.monotonic() > deadline:
                raise
            # Long enough for a whole JoinGroup and SyncGroup on a loaded host: a poll that ends in the middle
            # leaves the client rebalancing still.
            consumer.poll(timeout_ms=3000)


class Member(threading.Thread):
    """A new consumer: a kafka-python group member polling until halted."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=bootstrap,
                                      enable_auto_commit=False)
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.consumer.poll(timeout_ms=1000)   # a whole join on a loaded host
        self.consumer.close()
