"""A Kafka release's own command-line tools, run from its pinned bundle (`java -cp <bundle jars> <class>`).

Where each tool lives and which flags it takes changed over the releases; this module is the one
place that knows, so the workload reads the same for every release.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from migrate.jvm.artifacts import ensure_bundle

# The tools log to stderr only, at WARN: stdout is the data the workload judges.
LOG4J1 = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
LOG4J2 = """status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
"""


def _line(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@dataclass
class ReleaseTools:
    """The console producer, consumers, topic and group commands of one release."""

    version: str
    bundle: str
    cache_dir: Path
    workdir: Path

    def __post_init__(self) -> None:
        self.jars = ensure_bundle(self.bundle, self.cache_dir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "tools-log4j.properties").write_text(LOG4J1)
        (self.workdir / "tools-log4j2.properties").write_text(LOG4J2)
        self.line = _line(self.version)

    # Where the classes live: core (Scala) up to 3.6, the kafka-tools module from 3.7/3.8 on.
    def _class(self, tool: str) -> str:
        moved = {
            "producer": ("kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer", (4, 0),
                         "org.apache.kafka.tools.ConsoleProducer"),
            "consumer": ("kafka.tools.ConsoleConsumer", None, (3, 7),
                         "org.apache.kafka.tools.consumer.ConsoleConsumer"),
            "groups": ("kafka.admin.ConsumerGroupCommand", None, (3, 8),
                       "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"),
            "topics": ("kafka.admin.TopicCommand", None, (3, 8), "org.apache.kafka.tools.TopicCommand"),
        }
        old, _, since, new = moved[tool]
        return new if self.line >= since else old

    def run(self, main: str, args: list[str], *, stdin: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        command = ["java", "-Xmx256m", "-XX:+UseSerialGC",
                   f"-Dlog4j.configuration=file:{self.workdir / 'tools-log4j.properties'}",
                   f"-Dlog4j2.configurationFile={self.workdir / 'tools-log4j2.properties'}",
                   "-cp", os.pathsep.join(map(str, self.jars)), main, *args]
        return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=timeout,
                              cwd=self.workdir)

    def checked(self, main: str, args: list[str], **kwargs) -> subprocess.CompletedProcess:
        done = self.run(main, args, **kwargs)
        assert done.returncode == 0, f"{main} {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}"
        return done

    def create_topic(self, zookeeper: str, bootstrap: str, topic: str, partitions: int) -> None:
        # --bootstrap-server came to kafka-topics in 2.2; --zookeeper left it in 3.0.
        where = ["--bootstrap-server", bootstrap] if self.line >= (2, 2) else ["--zookeeper", zookeeper]
        self.checked(self._class("topics"), [*where, "--create", "--topic", topic, "--partitions", str(partitions),
                                             "--replication-factor", "1"])

    def produce(self, bootstrap: str, topic: str, messages: list[str]) -> None:
        # --bootstrap-server came to the console producer in 2.5 (KIP-499); --broker-list left it in 4.0.
        where = ["--bootstrap-server", bootstrap] if self.line >= (2, 5) else ["--broker-list", bootstrap]
        self.checked(self._class("producer"), [*where, "--topic", topic, "--producer-property", "acks=all"],
                     stdin="".join(m + "\n" for m in messages))

    def old_consume(self, zookeeper: str, topic: str, group: str, count: int) -> list[str]:
        """The old high-level (ZooKeeper) consumer reads `count` messages from the start, commits to ZooKeeper
        when it exits cleanly (auto.commit.enable, its default, commits on shutdown) and returns them."""
        assert self.line < (2, 0), "the old consumer left Kafka in 2.0"
        # The console consumer overrides auto.offset.reset for the old consumer: --from-beginning is the way.
        done = self.checked(self._class("consumer"), [
            "--zookeeper", zookeeper, "--topic", topic, "--consumer-property", f"group.id={group}",
            "--from-beginning", "--max-messages", str(count)])
        return done.stdout.splitlines()

    def new_consume(self, bootstrap: str, topic: str, group: str, expected: int, idle_ms: int = 15000) -> list[str]:
        """The new consumer joins `group` and reads from its committed offsets: `expected` messages, or what
        comes before `idle_ms` pass without one. A wrong offset still shows: one too low reads an older
        message among the first `expected`, one too high leaves fewer to read. No auto-commit, so a second
        look at the group still sees the migrated offsets."""
        args = ["--bootstrap-server", bootstrap, "--topic", topic, "--timeout-ms", str(idle_ms),
                "--max-messages", str(expected), "--consumer-property", "enable.auto.commit=false"]
        if self.line < (0, 11):  # 0.10's console consumer has no --group, and takes the old consumer by default
            args += ["--new-consumer", "--consumer-property", f"group.id={group}"]
        else:
            args += ["--group", group]
        done = self.run(self._class("consumer"), args, timeout=idle_ms / 1000 + 120)
        # Old console consumers end their idle timeout with an exception and exit code 1 on some releases.
        assert done.returncode == 0 or "TimeoutException" in done.stderr, done.stderr[-2000:]
        return done.stdout.splitlines()

    def describe(self, bootstrap: str, group: str) -> dict[tuple[str, int], int | None]:
        """`kafka-consumer-groups --describe --group`: (topic, partition) -> CURRENT-OFFSET (None for '-')."""
        args = ["--bootstrap-server", bootstrap, "--describe", "--group", group]
        if self.line < (0, 11):
            args.append("--new-consumer")
        done = self.run(self._class("groups"), args)
        assert done.returncode == 0 or "does not exist" in done.stdout + done.stderr, done.stderr[-2000:]
        return parse_describe(done.stdout)


def parse_describe(text: str) -> dict[tuple[str, int], int | None]:
    """The rows of a `--describe` table, whatever columns the release prints (GROUP came in 1.1)."""
    rows: dict[tuple[str, int], int | None] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        cells = line.split()
        if "CURRENT-OFFSET" in cells:
            header = cells
            continue
        if header is None or len(cells) < len(header) - 3 or not cells:
            continue
        try:
            topic, partition = cells[header.index("TOPIC")], int(cells[header.index("PARTITION")])
        except (ValueError, IndexError):
            continue
        current = cells[header.index("CURRENT-OFFSET")]
        rows[(topic, partition)] = int(current) if re.fullmatch(r"\d+", current) else None
    return rows
