"""Old consumers as clusters still carry them: Kafka 0.10.2's own console consumer in its ZooKeeper mode.

`ZookeeperConsumerConnector` registers under ids/ and owners/ and auto-commits its offsets to ZooKeeper; it
runs on Java 17 against any broker the suite starts.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from migrate.jvm.artifacts import ensure_bundle
from support.servers import CACHE_DIR

COMMIT_INTERVAL = 1.0   # the old consumers' auto-commit interval, seconds
LOG4J = "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n" \
        "log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.SimpleLayout\n"


def old_consumer(zookeeper: str, topic: str, group: str, out: Path, work: Path) -> subprocess.Popen:
    """Kafka 0.10.2's console consumer with the old ZooKeeper-based consumer; one printed value per message."""
    (work / "log4j.properties").write_text(LOG4J)
    classpath = os.pathsep.join(map(str, ensure_bundle("kafka-0.10", CACHE_DIR)))
    props = {"group.id": group, "auto.commit.interval.ms": int(COMMIT_INTERVAL * 1000)}
    return subprocess.Popen(
        ["java", f"-Dlog4j.configuration=file:{work / 'log4j.properties'}", "-cp", classpath,
         "kafka.tools.ConsoleConsumer", "--zookeeper", zookeeper, "--topic", topic,
         *[a for k, v in props.items() for a in ("--consumer-property", f"{k}={v}")]],
        stdout=out.open("w"), stderr=(work / f"{group}.err").open("w"))
