"""How to reach the two stores: the part of the settings that every Kafka and ZooKeeper client is
opened with (migrate/kafka/client.py, migrate/zk/client.py), and nothing else, so that a worker
process or a store's identity check is given this rather than the whole Settings. Secrets stay
wrapped (`Secret`) here as everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.errors import ConfigError
from migrate.kafka_config import ClientConfig
from migrate.options import OPTIONS_BY_NAME


class Secret:
    """A string that never shows itself in repr, str, logs or reports."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def required(name: str, value: Any) -> Any:
    """`value` of option `name`; raises ConfigError naming its flag and variable if unset."""
    if value in (None, ""):
        opt = OPTIONS_BY_NAME[name]
        hint = f" or set {opt.env_var}" if opt.env_var else ""
        raise ConfigError(f"{opt.cli_flag} is required for this command{hint}")
    return value


@dataclass(frozen=True)
class Connection:
    """The stores' addresses and how to log in to them (Settings' fields of the same names)."""

    zookeeper: str | None = None
    zk_auth: Secret | None = None
    zk_sasl_mechanism: str | None = None
    zk_sasl_username: str | None = None
    zk_sasl_password: Secret | None = None
    zk_tls: bool = False
    zk_tls_cafile: Path | None = None
    zk_tls_certfile: Path | None = None
    zk_tls_keyfile: Path | None = None
    bootstrap_server: str | None = None
    command_config: Path | None = None
    # Parsed from --command-config; secrets inside stay out of repr.
    kafka_client: ClientConfig | None = field(default=None, compare=False)

    def require(self, name: str) -> Any:
        """The value of option `name`; raises ConfigError naming its flag and variable if unset."""
        return required(name, getattr(self, name))

    def kafka_options(self) -> dict[str, Any]:
        """kafka-python client keyword options: --command-config merged under --bootstrap-server."""
        options = dict(self.kafka_client.options) if self.kafka_client else {}
        options["bootstrap_servers"] = self.require("bootstrap_server").split(",")
        return options

    def zk_auth_data(self) -> list[tuple[str, str]]:
        """kazoo `auth_data`: [(scheme, credential)] or []."""
        if self.zk_auth is None:
            return []
        scheme, _, credential = self.zk_auth.reveal().partition(":")
        return [(scheme, credential)] if scheme and credential else []
