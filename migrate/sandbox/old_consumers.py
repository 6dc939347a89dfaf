"""Stopping the sandbox's old consumers: what it does in ZooKeeper, their registrations under a
group's ids/ and owners/ going away.

The seed registers a stand-in old consumer (persistent znodes, as no process keeps a session for
it); a real old high-level consumer registers with ephemeral znodes, which end with its session.
Only stand-ins are removed: a group with a live consumer's registration is refused, and nothing
is removed at all, so this never pulls the floor from under a running consumer.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from migrate.errors import ConfigError, SandboxError
from migrate.zk.reader import Selection


def stop_old_consumers(zookeeper: str, root: str, groups: tuple[str, ...],
                       exclude: tuple[str, ...] = ()) -> dict[str, tuple[int, int]]:
    """Remove the stand-in registrations of the selected groups under `root`; per group, the
    (ids/, owners/) znodes removed. Raises ConfigError when no group matches, SandboxError when a
    live consumer is registered (nothing is removed then)."""
    selection = Selection(groups, exclude)
    client = KazooClient(hosts=zookeeper, timeout=10)
    client.start(timeout=15)
    try:
        names = [g for g in sorted(client.get_children(root)) if selection.group(g)] \
            if client.exists(root) else []
        if not names:
            raise ConfigError(f"no group under {zookeeper}{root} matches "
                              f"{' '.join('--group ' + g for g in groups)}")
        found = {g: _registrations(client, f"{root}/{g}") for g in names}
        live = [path for nodes in found.values() for path, ephemeral in nodes if ephemeral]
        if live:
            raise SandboxError(f"a live old consumer holds {live[0]}"
                               f"{f' (+{len(live) - 1} more)' if len(live) > 1 else ''}: stop "
                               "that consumer itself; nothing was removed")
        stopped = {}
        for group, nodes in found.items():
            for path, _ in nodes:
                client.delete(path)
            ids = sum(1 for path, _ in nodes if "/ids/" in path)
            stopped[group] = (ids, len(nodes) - ids)
        return stopped
    finally:
        client.stop()
        client.close()


def _registrations(client: KazooClient, group: str) -> list[tuple[str, bool]]:
    """The group's znodes under ids/ and owners/<topic>/ as (path, ephemeral)."""
    leaves = [f"{group}/ids/{c}" for c in _children(client, f"{group}/ids")]
    for topic in _children(client, f"{group}/owners"):
        leaves += [f"{group}/owners/{topic}/{p}"
                   for p in _children(client, f"{group}/owners/{topic}")]
    out = []
    for path in leaves:
        stat = client.exists(path)
        if stat is not None:
            out.append((path, stat.ephemeralOwner != 0))
    return out


def _children(client: KazooClient, path: str) -> list[str]:
    try:
        return sorted(client.get_children(path))
    except NoNodeError:
        return []


def commit_offset(zookeeper: str, root: str, group: str, topic: str, partition: int,
                  offset: int) -> str:
    """What an old consumer's auto-commit does: the next offset to read, as a decimal string, in
    its znode (made when missing); returns the znode's path."""
    path = f"{root.rstrip('/')}/{group}/offsets/{topic}/{partition}"
    client = KazooClient(hosts=zookeeper, timeout=10)
    client.start(timeout=15)
    try:
        if client.exists(path):
            client.set(path, str(offset).encode())
        else:
            client.create(path, str(offset).encode(), makepath=True)
        return path
    finally:
        client.stop()
        client.close()
