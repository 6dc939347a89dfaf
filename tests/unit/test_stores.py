"""Stores are told apart by identity, not spelling: migrate/stores.py's comparison, on recorded identities."""

from __future__ import annotations

from migrate.settings import Settings
from migrate.stores import Stores, differences, zk_servers

THEN = {"bootstrap_server": "127.0.0.1:9092", "zookeeper": "127.0.0.1:2181/kafka"}
RECORDED = Stores("kafka-A", "kafka-A", ("127.0.0.1:2181",), "/kafka")


def settings(kafka: str = "localhost:9092", zookeeper: str = "localhost:2181/kafka") -> Settings:
    return Settings(bootstrap_server=kafka, zookeeper=zookeeper)


def test_another_address_of_the_same_clusters_is_the_same_stores():
    assert differences(RECORDED, RECORDED, THEN, settings()) == []


def test_another_cluster_is_named_by_both_ids():
    (kafka,) = differences(RECORDED, Stores("kafka-B", "kafka-A", ("127.0.0.1:2181",), "/kafka"), THEN, settings())
    assert kafka == ("Kafka cluster kafka-A then (--bootstrap-server '127.0.0.1:9092'), "
                     "kafka-B now (--bootstrap-server 'localhost:9092')")
    (zk,) = differences(RECORDED, Stores("kafka-A", "kafka-C", ("10.0.0.1:2181",), "/kafka"), THEN, settings())
    assert zk.startswith("ZooKeeper's /cluster/id kafka-A then (--zookeeper '127.0.0.1:2181/kafka'), kafka-C now")


def test_zookeeper_without_a_broker_cluster_id_is_its_servers_and_chroot():
    recorded = Stores("k", None, ("127.0.0.1:2181", "127.0.0.2:2181"), "/apps")
    assert differences(recorded, Stores("k", None, ("127.0.0.2:2181",), "/apps"), THEN, settings()) == []
    assert differences(recorded, Stores("k", None, ("127.0.0.9:2181",), "/apps"), THEN, settings())
    assert differences(recorded, Stores("k", None, ("127.0.0.1:2181",), "/other"), THEN, settings())
    # Only Kafka compared, for a run that left ZooKeeper as it was.
    assert differences(recorded, Stores("k", None, ("127.0.0.9:2181",), "/x"), THEN, settings(), zookeeper=False) == []


def test_a_plan_or_run_without_ids_compares_the_addresses_as_written():
    assert differences(None, RECORDED, THEN, settings(*THEN.values())) == []
    found = differences(None, RECORDED, THEN, settings())
    assert len(found) == 2 and "no Kafka cluster id recorded" in found[0] and "no ZooKeeper identity" in found[1]


def test_connect_strings_resolve_to_their_servers_and_chroot():
    servers, chroot = zk_servers("localhost:2181,127.0.0.1:2181/kafka/")
    assert "127.0.0.1:2181" in servers and chroot == "/kafka"
    assert zk_servers("127.0.0.1:2181") == (("127.0.0.1:2181",), "")


def test_a_kafka_gone_between_connecting_and_answering_is_one_clear_error(monkeypatch):
    """Reached, then killed before it told its cluster id (a broker restarting): KafkaUnavailable, one line, never
    kafka-python's own error."""
    import pytest
    from kafka.errors import KafkaConnectionError

    from migrate import stores
    from migrate.errors import KafkaUnavailable

    closed = []
    admin = type("Admin", (), {"close": lambda self: closed.append(True)})()
    monkeypatch.setattr(stores, "open_admin", lambda connection: admin)
    monkeypatch.setattr(stores.BrokerFeatures, "of", staticmethod(lambda admin: None))

    def gone(admin, features):
        raise KafkaConnectionError("socket disconnected")
    monkeypatch.setattr(stores, "describe_cluster", gone)
    with pytest.raises(KafkaUnavailable, match=r"^Kafka at 127\.0\.0\.1:9092 went away before it told its cluster "
                                               r"id: .*socket disconnected"):
        stores.reach(Settings(bootstrap_server="127.0.0.1:9092").connection, zookeeper=False)
    assert closed == [True]
