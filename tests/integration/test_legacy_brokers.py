"""The Kafka half against each supported ZooKeeper-mode release: what the snapshot and the
writer ask is chosen from the API versions the broker announces, so `diff` runs on every release, and the
snapshot is right where a release lacks an API (0.10.2: no DescribeConfigs; before 2.6: no state in ListGroups;
before 2.8: no DescribeCluster; 2.8-3.6: DescribeCluster v0 only, which kafka-python 3.0.12 cannot parse).

One cluster per release, module-scoped; the default run starts 2.8.2 only, the other releases run with
`-m slow` (`make test-long`). The end-to-end workload of each release with its own tools is tests/compat/.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.protocol.api_key import ApiKey
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient

from migrate import cli
from migrate.kafka import compat
from migrate.kafka.retry import RetryPolicy
from migrate.kafka.snapshot import KafkaSnapshot
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter
from migrate.sandbox.cluster import LocalCluster

from support.consumers import joined
from support.seeding import put
from support.servers import CACHE_DIR

RELEASES = {
    "0.10.2.2": ("0.10.2", None),    # no DescribeConfigs before 0.11
    "1.1.1": ("1.1", 1440),          # the 1-day default before 2.0
    "2.4.1": ("2.4", 10080),
    "2.8.2": ("2.8", 10080),         # DescribeCluster v0: `diff` died with KeyError 'endpoint_type'
    "3.6.2": ("3.6", 10080),         # the same
}
DEFAULT_RUN = {"2.8.2"}


@pytest.fixture(scope="module", params=[pytest.param(v, id=v, marks=() if v in DEFAULT_RUN else pytest.mark.slow)
                                        for v in RELEASES])


def legacy(request, tmp_path_factory):
    """(release, Endpoints) of a running ZooKeeper + broker of that release, with how long it took to start."""
    release = request.param
    cluster = LocalCluster(tmp_path_factory.mktemp(f"kafka-{release}"), CACHE_DIR, kafka_version=release,
                           attached=True)
    started = time.monotonic()
    endpoints = cluster.start()
    print(f"\nKafka {release}: cluster up in {time.monotonic() - started:.1f}s")
    yield release, endpoints
    cluster.stop()


@pytest.fixture
def seeded(legacy):
    """On the release's broker: a topic with messages; ZooKeeper offsets for four groups; in Kafka a live consumer
    group, an Empty consumer group and a group only committed to from outside (no protocol type)."""
    release, endpoints = legacy
    p = f"t{uuid.uuid4().hex[:8]}-"
    topic = f"{p}orders"
    admin = KafkaAdminClient(bootstrap_servers=endpoints.bootstrap_server, client_id="zk2kafka-tests")
    admin.create_topics({topic: {"num_partitions": 2, "replication_factor": 1}}, wait_for_metadata=True)
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=endpoints.bootstrap_server)
    for i in range(40):
        producer.send(topic, f"m{i}".encode(), partition=i % 2)
    producer.flush()
    producer.close()
    zk = KazooClient(hosts=endpoints.zookeeper)
    zk.start(timeout=15)
    groups = {name: f"{p}{name}" for name in ("fresh", "standalone", "empty", "live")}
    for group in groups.values():
        for partition in range(2):
            put(zk, f"/consumers/{group}/offsets/{topic}/{partition}", b"7")
    # The first group call of a new cluster creates __consumer_offsets: its coordinator is briefly unavailable.
    RetryPolicy(deadline=60).call("first commit", lambda: admin.alter_group_offsets(
        groups["standalone"], {TopicPartition(topic, 0): OffsetAndMetadata(3, "x", -1)}))
    consumers = {}
    for name in ("empty", "live"):
        consumer = joined(endpoints.bootstrap_server, groups[name], topic)   # fails the test if it never joins
        consumer.commit({TopicPartition(topic, 1): OffsetAndMetadata(9, "", -1)})
        consumers[name] = consumer
    consumers.pop("empty").close()   # leaves: the group is Empty with protocol type "consumer"
    yield {"release": release, "endpoints": endpoints, "admin": admin, "topic": topic, "groups": groups,
           "prefix": p, "zk": zk}
    consumers["live"].close()
    zk.stop()
    zk.close()
    admin.close()


def test_snapshot_is_right_on_each_release(seeded, tmp_path):
    release, admin, topic, g = seeded["release"], seeded["admin"], seeded["topic"], seeded["groups"]
    line, retention = RELEASES[release]
    info = KafkaSnapshot(admin).write(tmp_path / "kafka.parquet", sorted(g.values()), [topic])

    assert info.broker_version == line
    assert info.retention_minutes == retention
    if retention is None:
        assert info.retention_unknown == f"the broker (Kafka {line}) has no DescribeConfigs (Kafka 0.11+)"
        assert info.default_retention_minutes == 1440
    assert info.cluster_id   # from Metadata where DescribeCluster is missing or v0
    import pyarrow.parquet as pq
    rows = pq.read_table(info.path).to_pylist()
    groups = {r["group"]: (r["group_state"], r["protocol_type"], r["members"]) for r in rows if r["kind"] == "group"}
    # Group states from DescribeGroups where ListGroups carries none (before 2.6).
    assert groups == {g["fresh"]: (None, None, 0), g["standalone"]: ("Empty", "", 0),
                      g["empty"]: ("Empty", "consumer", 0), g["live"]: ("Stable", "consumer", 1)}
    offsets = {(r["group"], r["partition"]): (r["committed_offset"], r["metadata"]) for r in rows
               if r["kind"] == "offset"}
    assert offsets == {(g["standalone"], 0): (3, "x"), (g["empty"], 1): (9, ""), (g["live"], 1): (9, "")}
    bounds = {r["partition"]: (r["log_start"], r["log_end"]) for r in rows if r["kind"] == "partition"}
    assert bounds == {0: (0, 20), 1: (0, 20)}
    assert (info.groups_in_kafka, info.active_groups, info.committed_offsets) == (3, 1, 3)


def test_diff_runs_and_names_the_release(seeded, tmp_path, capsys):
    release, endpoints, g = seeded["release"], seeded["endpoints"], seeded["groups"]
    line, retention = RELEASES[release]
    code = cli.main(["diff", "--zookeeper", endpoints.zookeeper, "--bootstrap-server", endpoints.bootstrap_server,
                     "--state-dir", str(tmp_path), "--group", f"{seeded['prefix']}.*", "-q"])
    captured = capsys.readouterr()
    assert code == 3, captured.out + captured.err   # the live group and the conflicts block
    assert "KeyError" not in captured.err
    report = Path(captured.out.strip().splitlines()[-1].split(" report=")[1])
    summary = json.loads((report / "summary.json").read_text())
    assert summary["kafka"]["broker_version"] == line
    assert summary["retention"]["minutes"] == retention
    assert summary["retention"]["effective_minutes"] == (retention or 1440)
    empty = [e["group"] for e in summary["retention"]["empty_consumer_groups"]]
    by_commit_time = tuple(map(int, release.split("."))) < (2, 1)
    assert empty == ([] if by_commit_time else [g["empty"]])
    if not by_commit_time:   # 2.1+: when it became Empty is read from __consumer_offsets
        (entry,) = summary["retention"]["empty_consumer_groups"]
        assert entry["time_left_unknown"] is None and 10080 * 60 - 900 < entry["time_left_seconds"] <= 10080 * 60
    if by_commit_time:   # before 2.1 every offset expires by its commit, and the report says so
        assert any("before Kafka 2.1, deletes every offset that long after its own commit" in w
                   for w in summary["warnings"])
    md = (report / "report.md").read_text()
    assert f"- broker release: Kafka {line}, inferred from the API versions" in md
    per_group = {x["group"]: x for x in summary["per_group"]}
    assert per_group[g["live"]]["counts"] == {"GROUP_ACTIVE_KAFKA": 2}


def test_writer_commits_reads_back_and_deletes_where_the_release_can(seeded):
    admin, topic, g = seeded["admin"], seeded["topic"], seeded["groups"]
    writer = KafkaOffsetWriter(admin)
    fresh, standalone = g["fresh"], g["standalone"]
    failed = writer.commit_many({fresh: {(topic, 0): 11, (topic, 1): 12}, standalone: {(topic, 1): 13}}, "zk2kafka t")
    assert failed == {fresh: None, standalone: None}
    # OffsetFetch of many groups: one batched request from 3.0, one per group (pipelined) before.
    read = writer.committed_many([fresh, standalone, g["empty"]])
    assert read == {fresh: {(topic, 0): (11, "zk2kafka t"), (topic, 1): (12, "zk2kafka t")},
                    standalone: {(topic, 0): (3, "x"), (topic, 1): (13, "zk2kafka t")},
                    g["empty"]: {(topic, 1): (9, "")}}
    features = compat.BrokerFeatures.of(admin)
    assert compat.offset_fetch_batches(features) is (features.version >= (3, 0))   # OffsetFetch v8
    if features.has(ApiKey.OffsetDelete):   # 2.4+
        writer.delete(fresh, [(topic, 1)])
        assert writer.committed(fresh) == {(topic, 0): (11, "zk2kafka t")}
    else:
        with pytest.raises(GroupRejected, match=r"has no OffsetDelete \(Kafka 2\.4\+\)"):
            writer.delete(fresh, [(topic, 1)])
        assert writer.committed(fresh) == {(topic, 0): (11, "zk2kafka t"), (topic, 1): (12, "zk2kafka t")}


def test_an_answer_kafka_python_cannot_parse_is_one_error_naming_call_and_release(seeded):
    """kafka-python 3.0.12's own describe_cluster() on a DescribeCluster v0 broker (2.8-3.6): the KeyError it raises
    becomes UnreadableAnswer with the call and the release; zk2kafka itself asks Metadata there instead."""
    admin, release = seeded["admin"], seeded["release"]
    features = compat.BrokerFeatures.of(admin)
    if features.max_version(ApiKey.DescribeCluster) != 0:
        pytest.skip(f"Kafka {release} does not answer DescribeCluster v0 only")
    with pytest.raises(compat.UnreadableAnswer) as caught:
        features.call("DescribeCluster", admin.describe_cluster)
    assert str(caught.value) == (f"DescribeCluster: kafka-python could not read the answer of a Kafka "
                                 f"{RELEASES[release][0]} broker (release from its ApiVersions answer): "
                                 "KeyError: 'endpoint_type'")
    facts = compat.describe_cluster(admin, features)
    assert facts.via == "Metadata" and facts.brokers == [0] and facts.cluster_id
