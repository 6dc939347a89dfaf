"""What `sandbox kraft-migrate` refuses before it touches a server, and the export lines of a cluster that left
ZooKeeper (pure: no JVM is started)."""

from __future__ import annotations

import pytest

from migrate.errors import SandboxError
from migrate.sandbox.cluster import Endpoints, LocalCluster
from migrate.sandbox.jvm import JavaServer
from migrate.sandbox.kraft_migration import migrate_to_kraft


def _cluster(tmp_path, version="3.9.2", names=("zookeeper", "kafka"), mode="zookeeper") -> LocalCluster:
    cluster = LocalCluster(tmp_path, tmp_path, attached=False, kafka_version=version)
    cluster.servers = [JavaServer(name, tmp_path / name, [], "", []) for name in names]
    cluster.mode = mode
    return cluster


def test_only_the_3_9_2_sandbox_is_migrated(tmp_path):
    with pytest.raises(SandboxError, match=r"needs the Kafka 3\.9\.2 sandbox .* this one is Kafka 2\.8\.2"):
        migrate_to_kraft(_cluster(tmp_path, "2.8.2"), [], keep_zookeeper=False)


def test_a_sandbox_of_several_brokers_or_half_migrated_is_refused(tmp_path):
    with pytest.raises(SandboxError, match="ZooKeeper and one broker.* runs zookeeper, kafka, kafka-1"):
        migrate_to_kraft(_cluster(tmp_path, names=("zookeeper", "kafka", "kafka-1")), [], keep_zookeeper=False)
    with pytest.raises(SandboxError, match="half-way through a migration that failed"):
        migrate_to_kraft(_cluster(tmp_path, mode="migration"), [], keep_zookeeper=False)


def test_a_dead_server_is_named_before_any_step(tmp_path):
    with pytest.raises(SandboxError, match="zookeeper, kafka of the sandbox is not running"):
        migrate_to_kraft(_cluster(tmp_path), [], keep_zookeeper=False)


def test_the_export_lines_of_a_cluster_that_left_zookeeper_unset_it():
    endpoints = Endpoints("127.0.0.1:2181/kafka", "127.0.0.1:2181", "127.0.0.1:9092").without_zookeeper()
    assert endpoints.exports().splitlines() == [
        "unset ZK2KAFKA_ZOOKEEPER   # ZooKeeper was stopped: the cluster left it",
        "export ZK2KAFKA_BOOTSTRAP_SERVER=127.0.0.1:9092"]
