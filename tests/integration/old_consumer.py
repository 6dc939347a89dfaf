"""An old-style ZooKeeper consumer, as the 0.8-era high-level consumer kept its state, for the sync tests.

    python old_consumer.py --zookeeper HOST:PORT/chroot --bootstrap-server HOST:PORT --group G --topic T \
        --log FILE [--commit-interval 1.0]

It registers itself under /consumers/<g>/ids/<id> (ephemeral, JSON subscription), claims every
partition under /consumers/<g>/owners/<topic>/<p> (ephemeral), starts each partition at the offset
in /consumers/<g>/offsets/<topic>/<p> (the earliest offset when there is none), consumes real
messages, and every --commit-interval seconds writes the next offset to read as a decimal string to
that znode, as the old consumer's auto-commit did. SIGTERM stops it the way the old consumer shut
down: a last commit, then its ephemeral nodes go with its session.

The log gets one line per message processed (`msg <partition> <offset>`) and one per commit
(`commit <partition> <next offset>`), flushed as written, for the test to compare.

Why not the real one: Kafka 1.1's ZookeeperConsumerConnector needs the Scala 2.11 jars, zkclient and
its log4j wiring on Java 17; this emulation writes ZooKeeper exactly as it did, which is all sync reads.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import time
import uuid

from kafka import KafkaConsumer, TopicPartition
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("--zookeeper", "--bootstrap-server", "--group", "--topic", "--log"):
        ap.add_argument(name, required=True)
    ap.add_argument("--commit-interval", type=float, default=1.0)
    args = ap.parse_args()

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    base = f"/consumers/{args.group}"
    me = f"{args.group}_{socket.gethostname()}-{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=args.zookeeper, timeout=15)
    zk.start(timeout=15)
    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap_server, group_id=None, enable_auto_commit=False)
    partitions = sorted(consumer.partitions_for_topic(args.topic))
    tps = [TopicPartition(args.topic, p) for p in partitions]
    zk.ensure_path(f"{base}/ids")
    zk.create(f"{base}/ids/{me}", json.dumps({"version": 1, "subscription": {args.topic: 1}, "pattern": "static",
                                              "timestamp": str(int(time.time() * 1000))}).encode(), ephemeral=True)
    zk.ensure_path(f"{base}/owners/{args.topic}")
    for p in partitions:
        zk.create(f"{base}/owners/{args.topic}/{p}", f"{me}-0".encode(), ephemeral=True)

    consumer.assign(tps)
    earliest = consumer.beginning_offsets(tps)
    position = {}
    for tp in tps:
        try:
            position[tp.partition] = int(zk.get(_offset_path(base, tp))[0].decode().strip())
        except NoNodeError:
            position[tp.partition] = earliest[tp]
        consumer.seek(tp, position[tp.partition])

    with open(args.log, "a", buffering=1) as log:
        def commit() -> None:
            for tp in tps:
                path, value = _offset_path(base, tp), str(position[tp.partition]).encode()
                if zk.exists(path):
                    zk.set(path, value)
                else:
                    zk.create(path, value, makepath=True)
                log.write(f"commit {tp.partition} {position[tp.partition]}\n")

        last_commit = time.monotonic()
        while not stopping:
            for tp, records in consumer.poll(timeout_ms=200).items():
                for record in records:
                    log.write(f"msg {tp.partition} {record.offset}\n")
                    position[tp.partition] = record.offset + 1
            if time.monotonic() - last_commit >= args.commit_interval:
                commit()
                last_commit = time.monotonic()
        commit()   # shutdown: a last commit, then the session (and ids/, owners/) goes
    consumer.close()
    zk.stop()
    zk.close()


def _offset_path(base: str, tp: TopicPartition) -> str:
    return f"{base}/offsets/{tp.topic}/{tp.partition}"


if __name__ == "__main__":
    main()
