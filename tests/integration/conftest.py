"""Fixtures the integration tests share, beside the session's cluster (tests/conftest.py)."""

from __future__ import annotations

import pytest

from support.seeding import make_topic, put


@pytest.fixture
def broker_zk(cluster, prefix):
    """A kazoo client on the brokers' own chroot: the old consumers find the brokers there and keep their
    offsets under its /consumers, as on a real cluster, and a v0 commit through the broker lands there.
    This test's groups are removed afterwards."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=cluster.zookeeper)
    client.start(timeout=15)
    yield client
    for group in client.get_children("/consumers") if client.exists("/consumers") else []:
        if group.startswith(prefix):
            client.delete(f"/consumers/{group}", recursive=True)
    client.stop()
    client.close()


@pytest.fixture
def two_groups(cluster, zk, kafka_admin, prefix):
    """Two groups with offsets only in ZooKeeper, two partitions each."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    groups = [f"{prefix}g{i}" for i in range(2)]
    expected = {}
    for i, group in enumerate(groups):
        for p in range(2):
            expected[(group, p)] = 10 * (i + 1) + p
            put(zk, f"/consumers/{group}/offsets/{topic}/{p}", str(expected[(group, p)]).encode())
    return {"topic": topic, "groups": groups, "expected": expected}
