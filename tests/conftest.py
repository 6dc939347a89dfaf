"""Shared fixtures: one real cluster per test session, every test isolated by a chroot or a name prefix.

Backend: ZK2KAFKA_TEST_BACKEND=local|testcontainers (default auto: testcontainers
when a Docker engine answers, else local JVMs from the pinned Maven jars); see support/servers.py.
"""

from __future__ import annotations

import os
import random
import uuid

import pytest

from migrate.sandbox.cluster import Endpoints, LocalCluster
from migrate.sandbox.security import SUPER_USER

from support.faults import FAULT_LOG, SEED_ENV, FaultLog
from support.servers import CACHE_DIR, backend


# Where the parallel workers (`make test`: pytest-xdist, --dist loadscope) split the suite: a module's
# tests stay together (they share its fixtures), the fault suite's too (they share the fault cluster,
# started once), and the runbook pages go one by one (each on a fresh sandbox of its own; together they
# are a fifth of the suite), as do the releases of the compatibility suite (each on its own sandbox).
APART = ("tests/integration/test_runbooks.py::test_runbook_runs_on_a_fresh_sandbox",
         "tests/compat/test_releases.py::test_release_workload")
TOGETHER = {"tests/faults/": "faults"}


def worker_scope(nodeid: str) -> str:
    """The unit of work a test goes to a worker in: its module, its suite, or itself."""
    module, _, rest = nodeid.partition("::")
    if f"{module}::{rest.split('[', 1)[0]}" in APART:
        return nodeid
    return next((scope for folder, scope in TOGETHER.items() if module.startswith(folder)), module)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadscope with the scopes above (xdist's loadgroup marks cannot rename pytest 9's node ids)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scoped(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_scope(nodeid)

    return Scoped(config, log)


# The longest units first, so that no worker is left with one at the end while the others idle.
FIRST = ("tests/integration/test_runbooks.py", "tests/compat/test_releases.py", "tests/faults/")


def pytest_collection_modifyitems(items):
    for item in items:
        if any(d in item.nodeid.replace(os.sep, "/") for d in ("tests/integration", "tests/compat/test_releases")):
            item.add_marker(pytest.mark.integration)
    items.sort(key=lambda item: not item.nodeid.replace(os.sep, "/").startswith(FIRST))   # stable: modules whole


def pytest_configure(config):
    # One seed for the run's fault injection: set here, before the workers start, they inherit it.
    if not os.environ.get(SEED_ENV):
        os.environ[SEED_ENV] = str(random.SystemRandom().randrange(1, 10**6))
    config.stash[FAULT_LOG] = FaultLog(int(os.environ[SEED_ENV]))


def pytest_sessionfinish(session):
    """A worker hands its fault log to the controller, which prints the run's summary line."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["fault_log"] = session.config.stash[FAULT_LOG].to_json()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    found = getattr(node, "workeroutput", {}).get("fault_log")
    if found:
        node.config.stash[FAULT_LOG].add(found)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    log = config.stash.get(FAULT_LOG, None)
    if log is not None and (log.runs or log.injected):
        terminalreporter.section("fault injection")
        terminalreporter.write_line(log.line())


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
