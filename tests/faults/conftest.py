"""The fault-injection suite's own cluster and its fault log (the summary line it makes is printed by
tests/conftest.py, which gathers the parallel workers' logs).

The cluster is a private one (ZooKeeper and two ZooKeeper-mode brokers, `__consumer_offsets`
replicated to both): these tests kill, pause and restart its servers, which the users of the
shared `cluster` fixture must never see.
"""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient

from migrate.sandbox.cluster import LocalCluster

from support.faults import FAULT_LOG, FaultLog, Stores, brokers, ensure_up, kill9
from support.seeding import make_topic
from support.servers import CACHE_DIR

TOPIC = "orders"
PARTITIONS = 2
MESSAGES = 1000   # per partition: every seeded offset lies inside the log


@pytest.fixture(scope="session")
def fault_log(request) -> FaultLog:
    """The suite's record of faults injected and runs checked; tests assert their own outcome too."""
    return request.config.stash[FAULT_LOG]


@pytest.fixture(scope="session")
def fault_cluster(tmp_path_factory):
    """ZooKeeper + two ZooKeeper-mode brokers of the suite's own, and a topic replicated to both."""
    # A broker killed with SIGKILL holds its registration until its ZooKeeper session expires (18 s by
    # default): it cannot start again, nor its partitions move, before. 6 s keeps the suite short.
    own = LocalCluster(tmp_path_factory.mktemp("faults"), CACHE_DIR, attached=True, brokers=2,
                       broker_properties={"zookeeper.session.timeout.ms": 6000})
    own.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=own.endpoints.bootstrap_server, client_id="zk2kafka-faults")
        try:
            make_topic(admin, own.endpoints.bootstrap_server, TOPIC, PARTITIONS, MESSAGES, replicas=2)
        finally:
            admin.close()
        yield own
    finally:
        for broker in brokers(own).values():   # a throwaway cluster: no controlled shutdown to wait for
            if broker.alive():
                kill9(broker)
        own.stop()


@pytest.fixture
def stores(fault_cluster, tmp_path, fault_log):
    """Clients on the fault cluster, every server up at the start; `stores.case()` makes a chroot, prefix, state dir."""
    ensure_up(fault_cluster)
    with Stores.open(fault_cluster, TOPIC, PARTITIONS, MESSAGES, tmp_path, fault_log) as opened:
        yield opened
