"""A started kazoo session from the connection options: chroot, digest auth, SASL and TLS as
configured."""

from __future__ import annotations

import selectors
import types
import warnings

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.handlers.utils import selector_select
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
    event read. Under sync's stream of changes that was a fifth of the process's time (py-spy).
    kazoo's own function still does the waiting, with a poll selector (no descriptor to create
    or close).
    """

    def select(self, *args, **kwargs):
        return selector_select(*args, **kwargs, selectors_module=_POLL)


_POLL = types.SimpleNamespace(DefaultSelector=selectors.PollSelector,
                              EVENT_READ=selectors.EVENT_READ, EVENT_WRITE=selectors.EVENT_WRITE)


def close(client: KazooClient) -> None:
    client.stop()
    client.close()


def _str(path) -> str | None:
    return str(path) if path is not None else None
