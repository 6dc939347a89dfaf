"""The brokers' registrations in ZooKeeper, as a measure of their clocks against ZooKeeper's.

A ZooKeeper-mode broker registers at `/brokers/ids/<id>` (under the cluster's chroot) with a
`timestamp` it reads from its own clock just before it asks ZooKeeper to create the znode, and
ZooKeeper stamps the znode's ctime with its own: the broker's clock is ahead of ZooKeeper's by at
least `timestamp - ctime` (migrate/kafka/clocks.py). Read only where ZooKeeper's `/cluster/id`
is the cluster being judged: another cluster's brokers say nothing of this one's clocks.
"""

from __future__ import annotations

import json
import logging
from typing import NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

log = logging.getLogger(__name__)


class Registration(NamedTuple):
    broker: int
    timestamp_ms: int   # the broker's clock when it registered
    ctime_ms: int       # ZooKeeper's, when it created the znode


def registrations(client: KazooClient, cluster_id: str | None) -> list[Registration]:
    """The registrations of the brokers of `cluster_id` under the session's chroot; none where
    ZooKeeper's `/cluster/id` is another cluster's (or unreadable), or nothing is registered."""
    try:
        data, _ = client.get("/cluster/id")
        if cluster_id is None or json.loads(data)["id"] != cluster_id:
            return []
    except (KazooException, ValueError, KeyError, TypeError) as exc:
        log.debug("no cluster id read: %s", exc)
        return []
    return registered(client)


def registered(client: KazooClient) -> list[Registration]:
    """Every broker registration under the session's chroot (none where there is none)."""
    try:
        found = []
        for child in client.get_children("/brokers/ids"):
            data, stat = client.get(f"/brokers/ids/{child}")
            stamp = json.loads(data).get("timestamp")
            if child.isdigit() and stamp is not None and str(stamp).lstrip("-").isdigit():
                found.append(Registration(int(child), int(stamp), stat.ctime))
        return found
    except (KazooException, ValueError, KeyError, TypeError) as exc:
        log.debug("no broker registration read: %s", exc)
        return []
