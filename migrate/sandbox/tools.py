"""Kafka's own command-line tools of the sandbox's release, run from its pinned jars: what an
operator of that release has as `kafka-consumer-groups.sh` and friends, without a Kafka
installation (`zk2kafka sandbox kafka-consumer-groups -- ARGS`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from migrate.jvm.artifacts import ensure_bundle
from migrate.jvm.releases import Release

JMX_URL = "service:jmx:rmi:///jndi/rmi://{}/jmxrmi"   # a broker's JMX at host:port
# tool -> (since which release line, its main class), newest first: classes moved from the core
# jar to kafka-tools over the 3.x releases.
TOOLS: dict[str, list[tuple[tuple[int, int], str]]] = {
    "kafka-consumer-groups": [
        ((3, 8), "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"),
        ((0, 0), "kafka.admin.ConsumerGroupCommand")],
    "kafka-get-offsets": [((3, 5), "org.apache.kafka.tools.GetOffsetShell"),
                          ((0, 0), "kafka.tools.GetOffsetShell")],
    "kafka-jmx": [((3, 5), "org.apache.kafka.tools.JmxTool"), ((0, 0), "kafka.tools.JmxTool")],
}
# Only the tool's own warnings and errors on stderr; stdout stays its answer.
LOG4J = ("log4j.rootLogger=WARN, stderr\n"
         "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
         "log4j.appender.stderr.Target=System.err\n"
         "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
         "log4j.appender.stderr.layout.ConversionPattern=%p %m%n\n")


def main_class(tool: str, release: Release) -> str:
    """The class that is `tool` in `release`."""
    return next(cls for since, cls in TOOLS[tool] if release.line >= since)


def run_tool(tool: str, release: Release, args: list[str], cache_dir: Path,
             timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `tool` of `release` with `args`; its stdout captured, its stderr passed through."""
    jars = ensure_bundle(release.bundle, cache_dir)
    log4j = Path(cache_dir) / "tools-log4j.properties"
    if not log4j.exists() or log4j.read_text() != LOG4J:
        log4j.write_text(LOG4J)
    command = ["java", "-Xmx256m", "-XX:+UseSerialGC", f"-Dlog4j.configuration=file:{log4j}",
               "-cp", os.pathsep.join(map(str, jars)), main_class(tool, release), *args]
    return subprocess.run(command, stdout=subprocess.PIPE, text=True, timeout=timeout)
