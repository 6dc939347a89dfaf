"""Stand-ins for an operator's own actions that the sandbox has no `zk2kafka sandbox` action for, run by
the runbook pages' `instead:` comments as a script (tests/integration/test_runbooks.py):

    python operator_actions.py old-consumer-commits GROUP TOPIC PARTITION OFFSET
    python operator_actions.py start-new-consumer GROUP TOPIC
"""

from __future__ import annotations

import os
import sys


def old_consumer_commits(group: str, topic: str, partition: str, offset: str) -> None:
    """What an old consumer's auto-commit does: the next offset to read, as a decimal string, in its znode."""
    from kazoo.client import KazooClient

    root = os.environ.get("ZK2KAFKA_ZK_ROOT", "/consumers").rstrip("/")
    zk = KazooClient(hosts=os.environ["ZK2KAFKA_ZOOKEEPER"])
    zk.start(timeout=15)
    try:
        zk.set(f"{root}/{group}/offsets/{topic}/{partition}", offset.encode())
        print(f"old consumer of {group} committed {topic}-{partition} -> {offset} to ZooKeeper")
    finally:
        zk.stop()
        zk.close()


def start_new_consumer(group: str, topic: str) -> None:
    """A new kafka-python consumer joins `group`, reads `topic` to its end, commits and leaves."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=os.environ["ZK2KAFKA_BOOTSTRAP_SERVER"],
                             enable_auto_commit=False, auto_offset_reset="earliest")
    started: dict = {}
    while not consumer.assignment() or any(consumer.position(tp) < end for tp, end in
                                           consumer.end_offsets(list(consumer.assignment())).items()):
        for tp, records in consumer.poll(timeout_ms=500).items():
            started.setdefault(tp.partition, records[0].offset)
    consumer.commit()
    consumer.close()
    print(f"new consumer of {group} started at " + ", ".join(f"{topic}-{p} {o}" for p, o in sorted(started.items())))


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "old-consumer-commits":
        old_consumer_commits(*rest)
    elif command == "start-new-consumer":
        start_new_consumer(*rest)
    else:
        sys.exit(f"unknown helper {command!r}")
