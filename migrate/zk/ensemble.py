"""The search of the whole ensemble for offsets trees outside the checked root. Reads only.

KIP-866 decommissions the ensemble, not one chroot. An old consumer takes its own
`zookeeper.connect`: one configured without the brokers' chroot keeps its offsets at the
ensemble's `/consumers`, one of another application under that application's chroot. So the
search lists the ensemble from `/` on a session of its own (the connection's chroot bypassed),
finds every `consumers` znode at any depth and reads it with the standard layout (`offsets/` and
Kafka 1.1.0's `offset/`), the reader every command uses (migrate/zk/reader.py).

It does not walk what a broker keeps (`brokers`, `config`, `admin`, ...) at any depth, nor the
checked root (the check reads it). It stops at `max_znodes` listed or `max_seconds`, saying so;
what the credentials may not list is named as unreadable. Whatever it cannot see is said, never
taken for empty.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, ZookeeperError

from migrate.connection import Connection
from migrate.errors import ZkUnavailable
from migrate.zk.client import close, connect
from migrate.zk.reader import STANDARD, ZkOffsetReader

OFFSETS_TREE = "consumers"
# The subtrees a ZooKeeper-mode broker keeps under its chroot, and ZooKeeper's own: never offsets.
BROKER_SUBTREES = frozenset({
    "admin", "brokers", "cluster", "config", "controller", "controller_epoch", "delegation_token",
    "feature", "isr_change_notification", "kafka-acl", "kafka-acl-changes", "kafka-acl-extended",
    "kafka-acl-extended-changes", "latest_producer_id_block", "log_dir_event_notification",
    "migration", "zookeeper"})
WAVE = 256   # listings in flight at once


@dataclass
class Tree:
    """An offsets tree found outside the checked root: its path on the bare ensemble, the chroot
    above it, the cluster id of the Kafka cluster whose brokers are registered in that chroot
    (None: no broker there; "" when its id could not be read), and its offset rows."""

    path: str
    chroot: str
    brokers_of: str | None
    rows: list[dict] = field(default_factory=list)


@dataclass
class Search:
    """What the search of the ensemble found and how far it went."""

    hosts: str
    skipped_root: str                  # the checked root, read by the check itself
    trees: list[Tree] = field(default_factory=list)
    listed: int = 0                    # znodes listed
    read: int = 0                      # offset znodes read
    seconds: float = 0.0
    unreadable: list[str] = field(default_factory=list)   # "path: NoAuthError"
    cut_short: str | None = None       # why it stopped before listing everything

    @property
    def complete(self) -> bool:
        return self.cut_short is None


def bare(connection: Connection) -> tuple[Connection, str]:
    """The connection without its chroot, and the chroot ('' for none)."""
    hosts, slash, chroot = connection.require("zookeeper").partition("/")
    chroot = f"/{chroot}".rstrip("/") if slash else ""
    return _with_hosts(connection, hosts), chroot


def search(connection: Connection, checked_root: str, max_znodes: int,
           max_seconds: float) -> Search:
    """Every offsets tree of the ensemble outside `checked_root` (a path on the bare ensemble)."""
    plain, _ = bare(connection)
    client = connect(plain)
    try:
        return _search(client, plain.zookeeper, checked_root.rstrip("/") or "/", max_znodes,
                       max_seconds)
    finally:
        close(client)


def _search(client: KazooClient, hosts: str, checked_root: str, max_znodes: int,
            max_seconds: float) -> Search:
    started = time.monotonic()
    found = Search(hosts, checked_root)
    frontier, trees = ["/"], []
    while frontier:
        if time.monotonic() - started > max_seconds:
            found.cut_short = f"stopped after {max_seconds:g}s (--ensemble-max-time)"
            break
        if found.listed + len(frontier[:WAVE]) > max_znodes:
            found.cut_short = f"stopped after {found.listed:,} znodes (--ensemble-max-znodes)"
            break
        wave, frontier = frontier[:WAVE], frontier[WAVE:]
        asked = [(path, client.get_children_async(path)) for path in wave]
        for path, request in asked:
            found.listed += 1
            try:
                children = request.get(timeout=30)
            except NoNodeError:   # deleted since its parent was listed
                continue
            except ZookeeperError as e:
                found.unreadable.append(f"{path}: {type(e).__name__}")
                continue
            for child in sorted(children):
                below = f"{path.rstrip('/')}/{child}"
                if below == checked_root or child in BROKER_SUBTREES:
                    continue
                (trees if child == OFFSETS_TREE else frontier).append(below)
    for path in trees:
        if found.cut_short is None and time.monotonic() - started > max_seconds:
            found.cut_short = f"stopped after {max_seconds:g}s (--ensemble-max-time)"
        if found.cut_short is not None:
            break
        tree = _read_tree(client, path, found)
        if tree.rows:
            found.trees.append(tree)
    found.seconds = time.monotonic() - started
    return found


def _read_tree(client: KazooClient, path: str, found: Search) -> Tree:
    chroot = path[:-len(OFFSETS_TREE) - 1]
    tree = Tree(path, chroot, _brokers_of(client, chroot))
    reader = ZkOffsetReader(client, path, STANDARD)
    try:
        groups = reader.groups()
    except ZkUnavailable as e:   # it names the path and why: said, not raised
        found.unreadable.append(str(e).removeprefix("cannot list "))
        return tree
    tree.rows = [row for batch in reader.batches(groups) for row in batch.to_pylist()]
    found.read += len(tree.rows)
    return tree


def _brokers_of(client: KazooClient, chroot: str) -> str | None:
    """The cluster id of the brokers registered in `chroot` (`brokers/ids`), "" when they are
    there but `cluster/id` cannot be read; None when no broker is."""
    try:
        if not client.get_children(f"{chroot}/brokers/ids"):
            return None
    except ZookeeperError:
        return None
    try:
        return str(json.loads(client.get(f"{chroot}/cluster/id")[0])["id"])
    except (ZookeeperError, ValueError, KeyError, TypeError):
        return ""


def _with_hosts(connection: Connection, hosts: str) -> Connection:
    return replace(connection, zookeeper=hosts)
