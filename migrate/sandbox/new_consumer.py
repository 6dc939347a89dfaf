"""The sandbox's stand-in for a group's new consumers starting on Kafka-kept offsets (`zk2kafka
sandbox new-consumer`): a kafka-python consumer joins the group, reads the topic to its end from
the offsets Kafka holds for the group, commits and leaves, as a new application's first run does.
"""

from __future__ import annotations

import time

from kafka import KafkaConsumer


def run_new_consumer(group: str, topic: str, client_options: dict,
                     timeout: float = 60.0) -> dict[int, int]:
    """Join `group`, read `topic` to its end, commit, leave; the offset each partition it read
    started at (the group's committed offset there). Raises TimeoutError when the topic's end is
    not reached within `timeout` seconds."""
    consumer = KafkaConsumer(topic, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", **client_options)
    started: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    try:
        while not consumer.assignment() or any(
                consumer.position(tp) < end
                for tp, end in consumer.end_offsets(list(consumer.assignment())).items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the new consumer of {group} did not reach the end of "
                                   f"{topic} within {timeout:.0f}s")
            for tp, records in consumer.poll(timeout_ms=500).items():
                started.setdefault(tp.partition, records[0].offset)
        consumer.commit()
    finally:
        consumer.close()
    return started
