"""The Kafka releases zk2kafka runs from pinned jars: each one's bundle in `artifacts.lock.json`
and the ZooKeeper it ships. The sandbox runs any of them; a copy of a data directory is replayed
by the default one's ZooKeeper."""

from __future__ import annotations

from dataclasses import dataclass

from migrate.errors import ConfigError


@dataclass(frozen=True)
class Release:
    """A ZooKeeper-mode Kafka release: its jars' bundle, the ZooKeeper it ships."""

    version: str
    bundle: str
    zookeeper: str

    @property
    def line(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)


RELEASES = {r.version: r for r in (
    Release("0.10.2.2", "kafka-0.10", "3.4.9"),
    Release("1.1.1", "kafka-1.1", "3.4.10"),
    Release("2.4.1", "kafka-2.4", "3.5.7"),
    Release("2.8.2", "kafka-2.8", "3.5.9"),
    Release("3.6.2", "kafka-3.6", "3.8.4"),
    Release("3.9.2", "kafka-3.9", "3.8.4"),
)}
DEFAULT_KAFKA_VERSION = "3.9.2"
KRAFT_VERSION = "4.1.2"  # the kafka-4 bundle


def release(version: str) -> Release:
    """The Release of `version`; raises ConfigError (a usage error) naming the supported ones."""
    try:
        return RELEASES[version]
    except KeyError:
        raise ConfigError(f"unsupported Kafka version {version!r} for the sandbox; "
                          f"supported: {', '.join(RELEASES)}") from None
