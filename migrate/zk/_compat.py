"""kazoo's private names: the only place zk2kafka reaches them, checked at import.

kazoo 2.11 has no multiRead (migrate/zk/multiread.py adds it on kazoo's own wire classes): that
needs `KazooClient._call`, which queues a request on the session, and `kazoo.client._prefix_root`,
which applies the chroot. A rename in another kazoo release fails here, at once, as one line
naming the release.
"""

from __future__ import annotations

from kazoo import client as _client
from kazoo.client import KazooClient

from migrate.errors import check_names

TESTED = "2.11"   # the minor release the suite ran; pyproject.toml caps kazoo below the next one

check_names("kazoo", TESTED, {
    "KazooClient._call": hasattr(KazooClient, "_call"),
    "kazoo.client._prefix_root": hasattr(_client, "_prefix_root"),
})


def prefix_root(client: KazooClient, path: str) -> str:
    """`path` under the client's chroot, as kazoo's own calls send it."""
    return _client._prefix_root(client.chroot, path)


def call(client: KazooClient, request, async_result) -> None:
    """Queue `request` on the session; `async_result` gets the answer."""
    client._call(request, async_result)
