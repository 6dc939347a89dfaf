"""The two stores by identity, not by spelling: Kafka by its cluster id, ZooKeeper by the cluster id
the brokers keep under their chroot (`<chroot>/cluster/id`), or, where there is none, by its
servers and the chroot.

A diff records the identity of the stores it read, a writing run that of the stores it writes;
where a plan or a run meets the stores again (a reviewed plan, resume, rollback, verify --run), the
stores must be the same clusters, whatever address reaches them. Reaching both before any other
work also makes an unreachable store a short, early failure.
"""

from __future__ import annotations

import json
import logging
import socket
from dataclasses import dataclass, field
from typing import Any

from kafka.errors import KafkaError
from kazoo.exceptions import KazooException, NoNodeError

from migrate.connection import Connection
from migrate.errors import KafkaUnavailable, ZkUnavailable
from migrate.kafka.client import open_admin
from migrate.kafka.compat import BrokerFeatures, describe_cluster
from migrate.zk.brokers import Registration, registered
from migrate.zk.client import close, connect

log = logging.getLogger(__name__)

# What a store away past the retry deadline raises: the writer leaves its groups for resume,
# sync tries again at its next re-scan.
OUTAGES = (KafkaError, KazooException, OSError, ZkUnavailable)


@dataclass(frozen=True)
class Stores:
    """What identifies the stores one command reached; None for a store it did not reach."""

    kafka: str | None = None            # Kafka's cluster id
    zookeeper: str | None = None        # the brokers' cluster id under the chroot, if any
    zk_servers: tuple[str, ...] = ()    # the ZooKeeper servers, resolved: ip:port
    zk_chroot: str = ""
    # Not identity: the brokers' registrations, read where ZooKeeper is this Kafka cluster's
    registered: tuple[Registration, ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"kafka_cluster_id": self.kafka, "zookeeper_cluster_id": self.zookeeper,
                "zookeeper_servers": list(self.zk_servers), "zookeeper_chroot": self.zk_chroot}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Stores | None:
        """The identity a plan or a journal recorded; None when it recorded none (an older
        zk2kafka's)."""
        if not data:
            return None
        return cls(data.get("kafka_cluster_id"), data.get("zookeeper_cluster_id"),
                   tuple(data.get("zookeeper_servers") or ()), data.get("zookeeper_chroot") or "")


def reach(connection: Connection, *, kafka: bool = True, zookeeper: bool = True) -> Stores:
    """Connect to the stores asked for and read what identifies them.

    Raises KafkaUnavailable, ZkUnavailable or ConfigError, each one line, within the client's
    connect timeout.
    """
    kafka_id = zk_id = None
    servers: tuple[str, ...] = ()
    chroot = ""
    brokers: list[Registration] = []
    if zookeeper:
        client = connect(connection)
        try:
            zk_id = _zk_cluster_id(client)
            brokers = registered(client)
        finally:
            close(client)
        servers, chroot = zk_servers(connection.require("zookeeper"))
    if kafka:
        admin = open_admin(connection)
        try:
            kafka_id = describe_cluster(admin, BrokerFeatures.of(admin)).cluster_id
        except KafkaError as exc:   # reached, then gone before it answered (a broker restarting)
            raise KafkaUnavailable(f"Kafka at {connection.bootstrap_server} went away before it"
                                   f" told its cluster id: {exc}",
                                   bootstrap_server=connection.bootstrap_server) from exc
        finally:
            admin.close()
    # The brokers' registrations measure their clocks against ZooKeeper's (migrate/kafka/clocks.py)
    # where ZooKeeper is this Kafka cluster's.
    same = kafka_id is not None and zk_id == kafka_id
    return Stores(kafka_id, zk_id, servers, chroot, tuple(brokers) if same else ())


def _zk_cluster_id(client) -> str | None:
    """The cluster id the brokers wrote under the chroot (`/cluster/id`), or None."""
    try:
        data, _ = client.get("/cluster/id")
        return str(json.loads(data)["id"])
    except NoNodeError:
        return None
    except (KazooException, ValueError, KeyError, TypeError) as exc:
        log.debug("no readable /cluster/id: %s", exc)
        return None


def zk_servers(connect_string: str) -> tuple[tuple[str, ...], str]:
    """The servers of a connect string resolved to ip:port (sorted), and its chroot."""
    hosts, slash, chroot = connect_string.partition("/")
    resolved = set()
    for host in hosts.split(","):
        name, _, port = host.strip().rpartition(":")
        name = name.strip("[]")
        try:
            infos = socket.getaddrinfo(name, int(port), proto=socket.IPPROTO_TCP)
            resolved |= {f"{info[4][0]}:{port}" for info in infos}
        except (OSError, ValueError):
            resolved.add(host.strip())
    return tuple(sorted(resolved)), ("/" + chroot.strip("/")) if slash and chroot.strip("/") else ""


def differences(recorded: Stores | None, now: Stores, addresses_then: dict[str, Any],
                connection: Connection, *, zookeeper: bool = True) -> list[str]:
    """Why the stores reached now are not the ones recorded, in words; [] when they are.

    Without a recorded identity (a plan or run of an older zk2kafka), the addresses must be
    spelled as they were.
    """
    found = []
    kafka_then = addresses_then.get("bootstrap_server")
    if recorded is None or recorded.kafka is None or now.kafka is None:
        if kafka_then != connection.bootstrap_server:
            found.append(f"--bootstrap-server {kafka_then!r} then, {connection.bootstrap_server!r} "
                         "now, and no Kafka cluster id recorded to tell if they are one cluster")
    elif recorded.kafka != now.kafka:
        found.append(f"Kafka cluster {recorded.kafka} then (--bootstrap-server {kafka_then!r}), "
                     f"{now.kafka} now (--bootstrap-server {connection.bootstrap_server!r})")
    if not zookeeper:
        return found
    zk_then = addresses_then.get("zookeeper")
    if recorded is None or not recorded.zk_servers:
        if zk_then != connection.zookeeper:
            found.append(f"--zookeeper {zk_then!r} then, {connection.zookeeper!r} now, and no "
                         "ZooKeeper identity recorded to tell if they are one cluster")
    elif recorded.zookeeper or now.zookeeper:
        if recorded.zookeeper != now.zookeeper:
            found.append(f"ZooKeeper's /cluster/id {recorded.zookeeper or 'none'} then "
                         f"(--zookeeper {zk_then!r}), {now.zookeeper or 'none'} now "
                         f"(--zookeeper {connection.zookeeper!r})")
    elif not set(recorded.zk_servers) & set(now.zk_servers) or recorded.zk_chroot != now.zk_chroot:
        # No broker cluster id under either chroot: one ensemble shares a server, one place in it
        # is one chroot.
        found.append(f"--zookeeper {zk_then!r} then, {connection.zookeeper!r} now: other servers "
                     "or another chroot")
    return found


def same_clusters(recorded: Stores | None, now: Stores, addresses_then: dict[str, Any],
                  connection: Connection, what: str, *,
                  zookeeper: bool = True) -> list[str]:
    """differences(), and a log line for each store reached at another address than `what`
    recorded, which is accepted: the same cluster."""
    found = differences(recorded, now, addresses_then, connection, zookeeper=zookeeper)
    if not found:
        for flag, then, current in (
                ("--bootstrap-server", addresses_then.get("bootstrap_server"),
                 connection.bootstrap_server),
                ("--zookeeper", addresses_then.get("zookeeper"),
                 connection.zookeeper if zookeeper else None)):
            if current is not None and then is not None and then != current:
                log.info("%s %s reaches the cluster %s reached for %s", flag, current, then, what)
    return found
