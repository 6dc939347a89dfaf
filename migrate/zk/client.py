"""A started kazoo session from Settings: chroot, digest auth, SASL and TLS as configured."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from migrate.errors import ConfigError, ZkUnavailable
from migrate.settings import Settings


def connect(settings: Settings, timeout: float = 15.0) -> KazooClient:
    """A connected client (the connect string's chroot applies).

    Raises ZkUnavailable or ConfigError.
    """
    hosts = settings.require("zookeeper")
    options: dict = {"hosts": hosts, "timeout": timeout, "auth_data": settings.zk_auth_data(),
                     # Reconnect forever: the reader's own retry deadline decides when to give up.
                     "connection_retry": KazooRetry(max_tries=-1, max_delay=5)}
    if settings.zk_sasl_mechanism:
        options["sasl_options"] = {"mechanism": settings.zk_sasl_mechanism}
        if settings.zk_sasl_username:
            options["sasl_options"]["username"] = settings.zk_sasl_username
        if settings.zk_sasl_password:
            options["sasl_options"]["password"] = settings.zk_sasl_password.reveal()
    if settings.zk_tls:
        options.update(use_ssl=True, ca=_str(settings.zk_tls_cafile),
                       certfile=_str(settings.zk_tls_certfile),
                       keyfile=_str(settings.zk_tls_keyfile))
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


def close(client: KazooClient) -> None:
    client.stop()
    client.close()


def _str(path) -> str | None:
    return str(path) if path is not None else None
