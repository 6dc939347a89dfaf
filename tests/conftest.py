"""Shared fixtures: one real cluster per test session, every test isolated by a chroot or a name prefix.

Backend: ZK2KAFKA_TEST_BACKEND=local|testcontainers (default auto: testcontainers
when a Docker engine answers, else local JVMs from the pinned Maven jars); see support/servers.py.
"""

from __future__ import annotations

import os
import uuid

import pytest

from migrate.sandbox.cluster import Endpoints, LocalCluster
from migrate.sandbox.security import SUPER_USER

from support.servers import CACHE_DIR, backend


def pytest_collection_modifyitems(items):
    for item in items:
        if any(d in item.nodeid.replace(os.sep, "/") for d in ("tests/integration", "tests/compat/test_releases")):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Endpoints:
    """A running ZooKeeper + ZooKeeper-mode Kafka 3.9 + KRaft Kafka 4, for the whole session."""
    if backend() == "testcontainers":
        from migrate.testing.containers import ContainerCluster

        running = ContainerCluster(kraft=True)
    else:
        running = LocalCluster(tmp_path_factory.mktemp("sandbox"), CACHE_DIR, kraft=True, attached=True)
    endpoints = running.start()
    yield endpoints
    running.stop()


@pytest.fixture
def prefix() -> str:
    """A unique prefix for this test's group and topic names."""
    return f"t{uuid.uuid4().hex[:10]}-"


@pytest.fixture
def zk_chroot(cluster: Endpoints):
    """A connect string with a fresh chroot of its own, removed after the test."""
    from kazoo.client import KazooClient

    path = f"/zk2kafka-tests/{uuid.uuid4().hex[:12]}"
    # As the sandbox's super user, so that nodes a test put behind ACLs are removed too.
    root = KazooClient(hosts=cluster.zk_server, auth_data=[("digest", ":".join(SUPER_USER))])
    root.start(timeout=15)
    root.ensure_path(path)
    yield cluster.zk_server + path
    root.delete(path, recursive=True)
    root.stop()
    root.close()


@pytest.fixture
def zk(zk_chroot: str):
    """A kazoo client rooted at this test's chroot."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zk_chroot)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def kafka_admin(cluster: Endpoints):
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_server, client_id="zk2kafka-tests")
    yield admin
    admin.close()
