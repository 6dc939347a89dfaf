"""MirrorMaker 2 in dedicated mode (org.apache.kafka.connect.mirror.MirrorMaker), from the pinned
Kafka 3.9 jars (bundle mm2-3.9), copying topics of one sandbox cluster to another: the copy
runbooks/new-cluster-mirrormaker2.md starts from, where the target assigns offsets of its own.

Only the source -> target flow runs, with MirrorSourceConnector alone: no heartbeats, no
checkpoints (a ZooKeeper group has nothing MM2 could checkpoint), so what zk2kafka translates
through is MM2's offset syncs and nothing else. Internal topics have one replica, as the sandbox's
brokers are one each.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow.parquet as pq
from kafka import KafkaConsumer, TopicPartition

from migrate.errors import OffsetSyncsUnavailable
from migrate.kafka.offset_syncs import OffsetSyncsReader, syncs_topic
from migrate.jvm.artifacts import ensure_bundle
from migrate.jvm.server import JavaServer, wait_for_server

log = logging.getLogger(__name__)

BUNDLE = "mm2-3.9"
MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"


class MirrorMaker:
    """One dedicated MirrorMaker 2 process copying `topics` (a regex) from `source` to `target`.

    `offset_lag_max` is MM2's offset.lag.max (default 100): a sync is written at the latest when a
    partition's copy drifts that far past the last one. The sandbox takes a small value, so that a
    few hundred records give many syncs and offsets between them; the translation rule is the same
    at any value, only the redelivery windows grow with it.
    """

    def __init__(self, home: Path, cache_dir: Path, source: str, target: str, topics: str, *,
                 source_alias: str = "old", target_alias: str = "new", offset_lag_max: int = 10,
                 attached: bool = True):
        self.home, self.cache_dir = home, cache_dir
        self.source, self.target, self.topics = source, target, topics
        self.source_alias, self.target_alias = source_alias, target_alias
        self.offset_lag_max = offset_lag_max
        self.attached = attached
        self.server: JavaServer | None = None

    def properties(self) -> dict:
        s, t = self.source_alias, self.target_alias
        return {
            "clusters": f"{s}, {t}",
            f"{s}.bootstrap.servers": self.source, f"{t}.bootstrap.servers": self.target,
            f"{s}->{t}.enabled": "true", f"{s}->{t}.topics": self.topics,
            f"{t}->{s}.enabled": "false",
            "emit.heartbeats.enabled": "false", "emit.checkpoints.enabled": "false",
            "sync.group.offsets.enabled": "false", "sync.topic.acls.enabled": "false",
            "offset.lag.max": self.offset_lag_max,
            # Commits every second (a worker setting: dedicated mode takes it under the target's
            # alias): MM2 writes the sync of a partition's latest copied record, and the syncs
            # its producer had no room for, at a commit.
            f"{t}.offset.flush.interval.ms": 1000,
            "refresh.topics.interval.seconds": 5,
            "replication.factor": 1,    # of the copies
            **{f"{name}.replication.factor": 1 for name in (
                "offset-syncs.topic", "checkpoints.topic", "heartbeats.topic",
                "offset.storage", "status.storage", "config.storage")},
        }

    def start(self) -> None:
        """Start the JVM; `wait_copied` tells when the copy caught up."""
        jars = ensure_bundle(BUNDLE, self.cache_dir)
        self.home.mkdir(parents=True, exist_ok=True)
        config = self.home / "mm2.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        # --clusters: only the herder of the target runs (the flow into it).
        self.server = JavaServer("mirrormaker2", self.home, jars, MAIN,
                                 [str(config), "--clusters", self.target_alias])
        self.server.start(self.attached)
        log.info("MirrorMaker 2 %s -> %s (pid %d), log %s", self.source_alias, self.target_alias,
                 self.server.pid, self.server.log_path)

    def wait_copied(self, remote_topic: str, log_ends: dict[int, int],
                    timeout: float = 180.0) -> None:
        """Wait until each partition of `remote_topic` on the target has reached `log_ends`.

        Raises SandboxError (naming MM2's log) when MM2 dies or the copy does not get there.
        """
        assert self.server is not None, "start() first"
        consumer = KafkaConsumer(bootstrap_servers=self.target, group_id=None)
        try:
            partitions = [TopicPartition(remote_topic, p) for p in log_ends]

            def copied() -> bool:
                ends = consumer.end_offsets(partitions) if consumer.partitions_for_topic(
                    remote_topic) else {}
                return all(ends.get(tp, -1) >= log_ends[tp.partition] for tp in partitions)

            wait_for_server(f"MirrorMaker 2's copy of {remote_topic}", self.server, copied,
                            timeout)
        finally:
            consumer.close()

    def wait_synced(self, topic: str, log_ends: dict[int, int], timeout: float = 120.0) -> None:
        """Wait until MM2's offset syncs reach the last record of each partition of the source
        `topic` (log end - 1): syncs lag the copy by up to a commit, and a diff before them
        translates through older ones (larger windows, or UNTRANSLATABLE).

        Raises SandboxError (naming MM2's log) when MM2 dies or the syncs do not get there.
        """
        assert self.server is not None, "start() first"
        reader = OffsetSyncsReader({"bootstrap_servers": self.source},
                                   syncs_topic(self.target_alias))
        path = self.home / "syncs-check.parquet"

        def synced() -> bool:
            try:
                reader.write(path, {topic})
            except OffsetSyncsUnavailable:   # not created yet
                return False
            latest: dict[int, int] = {}
            for row in pq.read_table(path).to_pylist():
                latest[row["partition"]] = max(latest.get(row["partition"], -1),
                                               row["upstream_offset"])
            return all(latest.get(p, -1) >= end - 1 for p, end in log_ends.items())

        wait_for_server(f"MirrorMaker 2's offset syncs of {topic}", self.server, synced, timeout)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def caught_up(source: str, target: str, topics: str, source_alias: str, policy: str) -> bool:
    """True when every partition of the source topics matching `topics` (a regex) has as many
    records in its copy on the target as in its own log (log end minus log start): the copy of
    a source nobody writes to has caught up. (Transaction markers are not copied: a transactional
    source never matches; the sandbox writes none.)"""
    import re

    from migrate.kafka.offset_syncs import remote_name

    sizes = {}
    for side, server, rename in (("source", source, False), ("target", target, True)):
        consumer = KafkaConsumer(bootstrap_servers=server, group_id=None)
        try:
            names = [t for t in consumer.topics() if re.fullmatch(topics, t)] if not rename else [
                remote_name(t, source_alias, policy) for t in sizes["source"]]
            parts = [TopicPartition(t, p) for t in names
                     for p in sorted(consumer.partitions_for_topic(t) or ())]
            if not parts:
                return False
            starts, ends = consumer.beginning_offsets(parts), consumer.end_offsets(parts)
            sizes[side] = {t: sum(ends[tp] - starts[tp] for tp in parts if tp.topic == t)
                           for t in names}
        finally:
            consumer.close()
    return list(sizes["source"].values()) == list(sizes["target"].values())


def main(argv: list[str] | None = None) -> int:
    """Run MirrorMaker 2 until SIGTERM or SIGINT; print `copied` once the copy has caught up.

    For the runbook test (runbooks/new-cluster-mirrormaker2.md), which starts it in the
    background as the operator's own MirrorMaker 2 would be running.
    """
    import argparse
    import signal
    import threading

    from migrate.jvm.server import wait_until

    parser = argparse.ArgumentParser(prog="python -m migrate.sandbox.mirrormaker")
    parser.add_argument("--source", required=True, help="the source cluster's bootstrap servers")
    parser.add_argument("--target", required=True, help="the target cluster's bootstrap servers")
    parser.add_argument("--topics", required=True, help="the topics to copy, a regex")
    parser.add_argument("--home", required=True, type=Path, help="MM2's directory (log, config)")
    parser.add_argument("--source-alias", default="old")
    parser.add_argument("--target-alias", default="new")
    parser.add_argument("--offset-lag-max", type=int, default=100)
    parser.add_argument("--cache-dir", type=Path,
                        default=Path("~/.cache/zk2kafka").expanduser())
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    mm2 = MirrorMaker(args.home, args.cache_dir, args.source, args.target, args.topics,
                      source_alias=args.source_alias, target_alias=args.target_alias,
                      offset_lag_max=args.offset_lag_max)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    mm2.start()
    try:
        wait_until("MirrorMaker 2's copy", lambda: caught_up(
            args.source, args.target, args.topics, args.source_alias, "default"), 300,
            mm2.server.alive, lambda: f"{mm2.server.cause()} (log: {mm2.server.log_path})")
        print("copied", flush=True)
        while not stop.wait(1.0):
            if not mm2.server.alive():
                print(f"MirrorMaker 2 stopped: {mm2.server.cause()}", flush=True)
                return 1
        return 0
    finally:
        mm2.stop()


if __name__ == "__main__":
    raise SystemExit(main())
