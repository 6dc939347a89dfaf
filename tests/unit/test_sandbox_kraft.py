"""What `sandbox kraft-migrate` refuses before it touches a server, and the export lines of a cluster that left
ZooKeeper (pure: no JVM is started)."""

from __future__ import annotations

import pytest

from migrate.errors import SandboxError
from migrate.sandbox.cluster import Endpoints, LocalCluster
from migrate.jvm.server import JavaServer
from migrate.sandbox.kraft_migration import Migration, migrate_to_kraft
from migrate.sandbox.modes import KRAFT, KRAFT_BROKERS, MIGRATING, MIGRATION, ZOOKEEPER, phase_of


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
    with pytest.raises(SandboxError, match="half-way through a migration step that failed"):
        migrate_to_kraft(_cluster(tmp_path, mode=MIGRATING), [], keep_zookeeper=False)


def test_a_dead_server_is_named_before_any_step(tmp_path):
    with pytest.raises(SandboxError, match="zookeeper, kafka of the sandbox is not running"):
        migrate_to_kraft(_cluster(tmp_path), [], keep_zookeeper=False)


def test_the_export_lines_of_a_cluster_that_left_zookeeper_unset_it():
    endpoints = Endpoints("127.0.0.1:2181/kafka", "127.0.0.1:2181", "127.0.0.1:9092").without_zookeeper()
    assert endpoints.exports().splitlines() == [
        "unset ZK2KAFKA_ZOOKEEPER   # ZooKeeper was stopped: the cluster left it",
        "export ZK2KAFKA_BOOTSTRAP_SERVER=127.0.0.1:9092"]


class Phases(Migration):
    """The migration's order of phases, each phase recording itself instead of restarting a JVM."""

    def __init__(self, cluster):
        super().__init__(cluster, [])
        self.done: list[tuple[str, int, str]] = []   # (phase, its first step, the mode while it ran)

    def _to_migration(self):
        self.done.append(("migration", self.step + 1, self.cluster.mode))

    def _to_kraft_brokers(self):
        self.done.append(("kraft", self.step + 1, self.cluster.mode))

    def _finalize(self):
        self.done.append(("finalized", self.step + 1, self.cluster.mode))


def test_each_call_goes_on_from_the_phase_the_last_one_stopped_at(tmp_path):
    cluster = _cluster(tmp_path)
    cluster.endpoints = Endpoints("127.0.0.1:2181/kafka", "127.0.0.1:2181", "127.0.0.1:9092")
    steps = []
    for to, mode in (("migration", MIGRATION), ("migration", MIGRATION), ("kraft", KRAFT_BROKERS),
                     ("finalized", KRAFT)):
        phases = Phases(cluster)
        phases.run(to, keep_zookeeper=True)
        assert cluster.mode == mode and LocalCluster.from_state(tmp_path).mode == mode
        steps.append((phases.done, phases.steps))
    # Steps are numbered across the whole migration; a phase runs marked as under way.
    assert steps == [([("migration", 1, MIGRATING)], 5), ([], 5), ([("kraft", 6, MIGRATING)], 6),
                     ([("finalized", 7, MIGRATING)], 7)]
    assert [phase_of(m) for m in (ZOOKEEPER, MIGRATING, MIGRATION, KRAFT_BROKERS, KRAFT)] == [
        None, None, "migration", "kraft", "finalized"]


def test_all_phases_in_one_call_then_zookeeper_stopped_unless_kept(tmp_path):
    cluster = _cluster(tmp_path)
    cluster.endpoints = Endpoints("127.0.0.1:2181/kafka", "127.0.0.1:2181", "127.0.0.1:9092")
    phases = Phases(cluster)
    phases.run("finalized", keep_zookeeper=False)
    assert [p for p, _, _ in phases.done] == ["migration", "kraft", "finalized"]
    assert phases.steps == 8 and cluster.mode == KRAFT
    assert [s.name for s in cluster.servers] == ["kafka"] and cluster.endpoints.zookeeper is None


def test_a_phase_already_passed_or_a_failed_step_is_refused(tmp_path):
    with pytest.raises(SandboxError, match="past phase migration already \\(kraft\\)"):
        migrate_to_kraft(_cluster(tmp_path, mode=KRAFT_BROKERS), [], keep_zookeeper=True, to="migration")
    with pytest.raises(SandboxError, match="half-way through a migration step that failed"):
        migrate_to_kraft(_cluster(tmp_path, mode=MIGRATING), [], keep_zookeeper=True, to="kraft")


def test_the_cli_takes_the_phase_to_stop_at():
    from migrate.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["sandbox", "kraft-migrate", "--to", "kraft"]).kraft_phase == "kraft"
    assert parser.parse_args(["sandbox", "kraft-migrate"]).kraft_phase == "finalized"
    with pytest.raises(SystemExit):
        parser.parse_args(["sandbox", "kraft-migrate", "--to", "zookeeper"])


def test_a_cluster_id_that_starts_with_a_dash_is_no_option_to_kafka_storage(tmp_path):
    from migrate.sandbox.kraft_migration import format_args

    # ZooKeeper's /cluster/id is Kafka's random draw: 1 in 64 starts with "-".
    assert format_args("-AbCdEfGhIjKlMnOpQrStUw", tmp_path / "c.properties") == [
        "format", "--cluster-id=-AbCdEfGhIjKlMnOpQrStUw", "-c", str(tmp_path / "c.properties")]
