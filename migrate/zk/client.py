"""A started kazoo session from the connection options: chroot, digest auth, SASL and TLS as
configured."""

from __future__ import annotations

import select
import warnings

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd
from kazoo.retry import KazooRetry

from migrate.connection import Connection
from migrate.errors import ConfigError, ZkUnavailable

# kazoo warns on stderr when the connect string's chroot does not exist; a scan of it finds
# nothing, which zk2kafka says in its own words (NothingFound).
warnings.filterwarnings("ignore", message="No chroot path exists", category=UserWarning)


def connect(connection: Connection, timeout: float = 15.0) -> KazooClient:
    """A connected client (the connect string's chroot applies).

    Raises ZkUnavailable or ConfigError.
    """
    hosts = connection.require("zookeeper")
    options: dict = {"hosts": hosts, "timeout": timeout, "auth_data": connection.zk_auth_data(),
                     "handler": PollingHandler(),
                     # Reconnect forever: the reader's own retry deadline decides when to give up.
                     "connection_retry": KazooRetry(max_tries=-1, max_delay=5)}
    if connection.zk_sasl_mechanism:
        options["sasl_options"] = {"mechanism": connection.zk_sasl_mechanism}
        if connection.zk_sasl_username:
            options["sasl_options"]["username"] = connection.zk_sasl_username
        if connection.zk_sasl_password:
            options["sasl_options"]["password"] = connection.zk_sasl_password.reveal()
    if connection.zk_tls:
        options.update(use_ssl=True, ca=_str(connection.zk_tls_cafile),
                       certfile=_str(connection.zk_tls_certfile),
                       keyfile=_str(connection.zk_tls_keyfile))
    client = KazooClient(**options)
    try:
        client.start(timeout=timeout)
    except KazooTimeoutError:
        client.close()
        raise ZkUnavailable(f"cannot connect to ZooKeeper at {hosts} "
                            f"within {timeout:.0f}s") from None
    except AuthFailedError:
        client.close()
        raise ConfigError(f"ZooKeeper at {hosts} rejected the credentials "
                          f"(--zk-auth / SASL)") from None
    return client


class PollingHandler(SequentialThreadingHandler):
    """kazoo's threading handler, its connection loop waiting in a single poll(2).

    kazoo 2.11 creates, fills and closes an epoll selector for each wait of that loop: five system
    calls, each giving up the interpreter lock, for every request sent and every answer or watch
    event read, a large share of sync's time under its stream of changes; kazoo's function over a
    poll selector still spent much in the selectors module's bookkeeping (docs/performance.md), so
    this one asks poll(2) itself, answering as kazoo's does.
    """

    def select(self, rlist, wlist, xlist, timeout=None):
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be non-negative")
        asked: dict[int, int] = {}
        for fileobj in rlist:
            fd = fileobj_to_fd(fileobj)
            asked[fd] = asked.get(fd, 0) | select.POLLIN
        for fileobj in wlist:
            fd = fileobj_to_fd(fileobj)
            asked[fd] = asked.get(fd, 0) | select.POLLOUT
        poller = select.poll()
        for fd, events in asked.items():
            poller.register(fd, events)
        # As selectors.PollSelector and kazoo read it: anything but POLLOUT (a hang-up, an error)
        # makes a descriptor asked for reading readable, else anything but POLLIN makes one asked
        # for writing writable; one list each.
        readable, writable = set(), set()
        for fd, events in poller.poll(None if timeout is None else timeout * 1000):
            if events & ~select.POLLOUT and asked[fd] & select.POLLIN:
                readable.add(fd)
            elif events & ~select.POLLIN and asked[fd] & select.POLLOUT:
                writable.add(fd)
        return ([f for f in rlist if fileobj_to_fd(f) in readable],
                [f for f in wlist if fileobj_to_fd(f) in writable], [])


def close(client: KazooClient) -> None:
    client.stop()
    client.close()


def _str(path) -> str | None:
    return str(path) if path is not None else None
