"""A consumer that has joined its group (so the group has protocol type "consumer"), as the tests of retention
and expiry need one; a group member polling in a thread of its own, as the tests of sync's series need one."""

from __future__ import annotations

import threading
import time

from kafka import KafkaConsumer


def joined(bootstrap: str, group: str, topic: str, timeout: float = 60) -> KafkaConsumer:
    """A consumer of `group` subscribed to `topic` and assigned partitions of it; it commits nothing itself."""
    consumer = KafkaConsumer(group_id=group, bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    deadline = time.monotonic() + timeout
    # Subscribe once the consumer's metadata has the topic: else the assignor hands out nothing until the next
    # metadata refresh.
    while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
        time.sleep(0.2)
    consumer.subscribe([topic])
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=300)
    assert consumer.assignment(), f"{group}: the consumer never joined its group"
    return consumer


def settled_commit(consumer: KafkaConsumer, offsets: dict) -> None:
    """`consumer.commit(offsets)` once its group has settled: a commit during a rebalance (a static member's first
    join may bring a second) is refused, and polling lets the consumer rejoin."""
    from kafka.errors import CommitFailedError, RebalanceInProgressError

    deadline = time.monotonic() + 60
    while True:
        try:
            consumer.commit(offsets)
            return
        except (RebalanceInProgressError, CommitFailedError):
            if time.monotonic() > deadline:
                raise
            consumer.poll(timeout_ms=200)


class Member(threading.Thread):
    """A new consumer: a kafka-python group member polling until halted."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=bootstrap,
                                      enable_auto_commit=False)
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.consumer.poll(timeout_ms=200)
        self.consumer.close()
