"""A consumer of Kafka's new rebalance protocol (KIP-848): Kafka 4.1.2's own console consumer with
`group.protocol=consumer`, from the kafka-4 jars the sandbox's KRaft broker runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from migrate.jvm.artifacts import ensure_bundle
from support.servers import CACHE_DIR

MAIN = "org.apache.kafka.tools.consumer.ConsoleConsumer"


def new_protocol_consumer(bootstrap: str, topic: str, group: str, out: Path, work: Path) -> subprocess.Popen:
    """The console consumer in group `group` with the KIP-848 protocol, reading `topic` from the beginning
    and printing `partition:value` per message into `out` (flushed per line: a line is the event a test
    waits for)."""
    classpath = os.pathsep.join(map(str, ensure_bundle("kafka-4", CACHE_DIR)))
    return subprocess.Popen(
        ["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", classpath, MAIN, "--bootstrap-server", bootstrap,
         "--topic", topic, "--group", group, "--from-beginning",
         "--consumer-property", "group.protocol=consumer",
         "--consumer-property", "enable.auto.commit=false",   # it commits nothing: what Kafka holds is ours
         "--property", "print.partition=true"],
        stdout=out.open("w"), stderr=(work / f"{group}.err").open("w"))


def has_read(consumer: subprocess.Popen, out: Path, work: Path, group: str, partitions: set[int]) -> bool:
    """Whether the consumer printed a message of each of `partitions` (so was assigned them); a consumer
    that exited fails the test with its stderr."""
    if consumer.poll() is not None:
        raise AssertionError(f"the KIP-848 console consumer exited {consumer.returncode}: "
                             f"{(work / f'{group}.err').read_text()[-2000:]}")
    seen = {line.split("\t")[0] for line in out.read_text().splitlines()}
    return {f"Partition:{p}" for p in partitions} <= seen
