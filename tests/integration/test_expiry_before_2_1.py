"""Before Kafka 2.1 every offset expires by its own commit, a consumer group's that went Empty too: on a real
Kafka 1.1.1 broker, ready-for-kraft names the groups it holds with no member with the expiry its v1 commit records
carry (commit time + the release's 1-day default), and says a re-commit renews them.

A slow variant (`make test-long`): it starts a cluster of its own release."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient

from migrate import cli
from migrate.kafka.retry import RetryPolicy
from migrate.sandbox.cluster import LocalCluster

from support.consumers import joined
from support.seeding import put
from support.servers import CACHE_DIR

pytestmark = pytest.mark.slow
RELEASE = "1.1.1"
DEFAULT_MINUTES = 1440   # offsets.retention.minutes before 2.0 (KIP-186)


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp(f"kafka-{RELEASE}"), CACHE_DIR, kafka_version=RELEASE,
                           attached=True)
    yield cluster.start()
    cluster.stop()


def _at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def test_before_2_1_an_empty_consumer_group_expires_by_commit_time(endpoints, tmp_path, capsys):
    p = f"t{uuid.uuid4().hex[:8]}-"
    topic, went_empty, standalone = f"{p}orders", f"{p}went-empty", f"{p}standalone"
    admin = KafkaAdminClient(bootstrap_servers=endpoints.bootstrap_server, client_id="zk2kafka-tests")
    zk = KazooClient(hosts=endpoints.zookeeper)
    zk.start(timeout=15)
    try:
        admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}}, wait_for_metadata=True)
        for group in (went_empty, standalone):
            put(zk, f"/consumers/{group}/offsets/{topic}/0", b"0")
        before = time.time()
        # The first group call of a new cluster creates __consumer_offsets: its coordinator is briefly unavailable.
        RetryPolicy(deadline=60).call("first commit", lambda: admin.alter_group_offsets(
            standalone, {TopicPartition(topic, 0): OffsetAndMetadata(0, "", -1)}))
        consumer = joined(endpoints.bootstrap_server, went_empty, topic)
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(0, "", -1)})
        after = time.time()
        consumer.close()
        deadline = time.monotonic() + 60
        while (admin.describe_groups([went_empty])[went_empty]["group_state"] != "Empty"
               and time.monotonic() < deadline):
            time.sleep(0.1)
        capsys.readouterr()

        code = cli.main(["ready-for-kraft", "--zookeeper", endpoints.zookeeper, "--bootstrap-server",
                         endpoints.bootstrap_server, "--state-dir", str(tmp_path), "--group", f"{p}.*",
                         "--quiet-for", "1s"])
        out = capsys.readouterr().out
        assert code == 0, out
        summary = json.loads((Path(out.strip().splitlines()[-1].split(" report=")[1]) / "summary.json").read_text())
        expiry = summary["expiry"]
        assert (expiry["broker_version"], expiry["effective_minutes"]) == ("1.1", DEFAULT_MINUTES), expiry
        named = {g["group"]: g for g in expiry["groups"]}
        assert set(named) == {went_empty, standalone}, expiry
        for group in (went_empty, standalone):   # by commit time, both: a renewal helps
            g = named[group]
            assert g["clock"] == "commit" and g["renewable"], g
            committed = _at(g["expires_at"]) - DEFAULT_MINUTES * 60
            assert int(before) <= committed <= after, (before, after, g)
        where = (f" --zookeeper {endpoints.zookeeper} --bootstrap-server {endpoints.bootstrap_server} "
                 f"--state-dir {tmp_path}")   # the location flags it was given, repeated
        assert f"sync{where} --execute --group {standalone} --group {went_empty} --renew-every 6h" in out \
            or f"sync{where} --execute --group {went_empty} --group {standalone} --renew-every 6h" in out, out
    finally:
        zk.stop()
        zk.close()
        admin.close()
