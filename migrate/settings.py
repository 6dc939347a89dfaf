"""One frozen `Settings` per invocation, from flags > environment > TOML (`--config`) > defaults.

Every option is declared once in `migrate.options.OPTIONS`; this module resolves its sources and
checks the values. Secrets are wrapped in `Secret` and never shown by `repr`, logs or reports.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate import side_options
from migrate.connection import Connection, Secret, required
from migrate.errors import ConfigError, UnknownOption
from migrate.group_map import parse_rule
from migrate.kafka_config import ClientConfig, check_tls, load_client_config
from migrate.durations import parse_duration
from migrate.options import OPTIONS, OPTIONS_BY_NAME, Option


# The options a writing run records (the journal keeps them; resume and rollback compare them).
RECORDED = tuple(o.name for o in OPTIONS if o.recorded)


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to know, resolved and checked once. Immutable."""

    zookeeper: str | None = None
    zk_root: str = "/consumers"
    zk_auth: Secret | None = None
    bootstrap_server: str | None = None
    command_config: Path | None = None
    config: Path | None = None
    groups: tuple[str, ...] = ()
    exclude_groups: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    map_group: tuple[str, ...] = ()   # OLD=NEW rules (migrate/group_map.py)
    map_group_file: Path | None = None
    state_dir: Path = Path("zk2kafka-state")
    cache_dir: Path = Path("~/.cache/zk2kafka").expanduser()
    spark_master: str = "local[*]"
    spark_shared_dir: Path | None = None
    log_format: str = "text"
    json: bool = False
    debug: bool = False
    verbosity: int = 0
    offset_semantics: str = "next"
    execute: bool = False
    resume: str | None = None
    plan: str | None = None
    max_plan_age: float = 86400.0
    run: str | None = None
    on_conflict: str = "skip"
    out_of_range: str = "skip"
    metadata: str | None = None
    no_zk_write: bool = False
    rewrite_zk_offsets: bool = False
    zk_write_via: str = "zk"
    parallelism: int = 32
    writers: int = 1
    allow_live_zk_consumers: bool = False
    zk_sasl_mechanism: str | None = None
    zk_sasl_username: str | None = None
    zk_sasl_password: Secret | None = None
    zk_tls: bool = False
    zk_tls_cafile: Path | None = None
    zk_tls_certfile: Path | None = None
    zk_tls_keyfile: Path | None = None
    layout: str = "standard"
    path_template: str | None = None
    zk_readers: int = 1
    zookeeper_data: Path | None = None
    zookeeper_data_log: Path | None = None
    zk_snapshot: str | None = None   # the ZooKeeper side from a snapshot (migrate/zk/side.py)
    dual_commit: bool = False   # with zk_snapshot: ZooKeeper written too (migrate/zk/side.py)
    rescan_every: float = 30.0
    renew_every: float | None = None
    stop_after: float | None = None
    quiet_for: float = 120.0   # sync's ready and ready-for-kraft's watch (migrate/zk/quiet.py)
    clock_margin: float = 60.0   # the takeover rule's margin between two servers' clocks
    no_clock_probe: bool = False   # the gate's and sync's one write outside a run: forbidden
    translate_via_mm2: str | None = None
    mm2_target_alias: str | None = None
    offset_syncs_bootstrap_server: str | None = None
    replication_policy: str = "default"
    # sync as a service
    metrics_address: str | None = None
    no_group_metrics: bool = False
    # Parsed from --command-config; secrets inside stay out of repr.
    kafka_client: ClientConfig | None = field(default=None, compare=False)
    leave_behind: tuple[str, ...] = ()   # ready-for-kraft: groups or paths left on purpose
    ensemble_max_znodes: int = 100_000
    ensemble_max_time: float = 60.0
    # The options the operator set (by flag, environment or --config file), not defaulted: a
    # resume takes the others from its run's journal.
    given: frozenset[str] = field(default=frozenset(), compare=False)
    # Where each given option came from: "flag", "environment ZK2KAFKA_X", "config file PATH".
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    def require(self, name: str) -> Any:
        """The value of option `name`; raises ConfigError naming its flag and variable if unset."""
        return required(name, getattr(self, name))

    @property
    def connection(self) -> Connection:
        """How to reach the stores: what their clients are opened with, and nothing else."""
        return Connection(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Connection)})

    def recorded(self) -> dict[str, Any]:
        """The options a writing run records in the journal (those marked recorded), as JSON
        values: what resume, rollback and verify --run compare and take up again."""
        return {name: list(v) if isinstance(v := getattr(self, name), tuple) else v
                for name in RECORDED}

    def kafka_options(self) -> dict[str, Any]:
        """kafka-python client keyword options: --command-config merged under --bootstrap-server."""
        return self.connection.kafka_options()

    def secrets(self) -> list[str]:
        """Every secret value of these settings (passwords, credentials), for `log.redact`."""
        found = list(self.kafka_client.secrets()) if self.kafka_client else []
        if self.zk_sasl_password is not None:
            found.append(self.zk_sasl_password.reveal())
        for scheme, credential in self.zk_auth_data():
            # digest:user:password: the password, and the credential kazoo logs as one string.
            found.append(credential)
            if scheme == "digest":
                found.append(credential.partition(":")[2])
        return [s for s in found if s]

    def zk_auth_data(self) -> list[tuple[str, str]]:
        """kazoo `auth_data`: [(scheme, credential)] or []."""
        return self.connection.zk_auth_data()


def load_settings(flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Settings:
    """Resolve flags > environment > TOML file > defaults into Settings; raises ConfigError."""
    environ = os.environ if environ is None else environ
    from_env = {o.name: environ[o.env_var] for o in OPTIONS
                if o.env_var and environ.get(o.env_var, "") != ""}
    config_path = flags.get("config") or from_env.get("config")
    from_file = _read_toml(Path(config_path)) if config_path else {}

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for opt in OPTIONS:
        layers = (("flag", flags), ("environment", from_env), (str(config_path), from_file))
        for source, layer in layers:
            if opt.name in layer and layer[opt.name] is not None:
                values[opt.name] = _coerce(opt, layer[opt.name], source)
                sources[opt.name] = {"flag": "flag", "environment": f"environment {opt.env_var}"
                                     }.get(source, f"config file {source}")
                break
    if "verbosity" in flags:  # -v/-q: flags only
        values["verbosity"] = int(flags["verbosity"])
    if values.get("path_template") and "layout" not in values:
        values["layout"] = "template"
    if values.get("translate_via_mm2"):
        # Translated offsets are the target's: written into the source's ZooKeeper they would move
        # its old consumers to offsets of another cluster.
        values["no_zk_write"] = True
    if (values.get("zk_snapshot") and not values.get("rewrite_zk_offsets")
            and not values.get("dual_commit")):
        # A snapshot has no ZooKeeper to write: the plan is that of a Kafka-only run, unless the
        # operator names the dual commit (its snapshot then checked against the live ensemble).
        values["no_zk_write"] = True
    settings = Settings(**values, given=frozenset(values) - {"verbosity"}, sources=sources)
    _check(settings)
    if settings.command_config is not None:
        client = load_client_config(settings.command_config)
        check_tls(client.options, client.source)  # a wrong key password fails here, before any work
        settings = dataclasses.replace(settings, kafka_client=client)
    return settings


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read config file: {e.strerror}", source=str(path)) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"not valid TOML: not UTF-8 text (byte {e.start})",
                          source=str(path)) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"not valid TOML: {e}", source=str(path)) from None
    except ValueError:  # tomllib's int() refuses integers of more than 4,300 digits
        raise ConfigError("not valid TOML: a number too long to read", source=str(path)) from None
    # Keys as the flags (`bootstrap-server`, `group`), also with underscores (`bootstrap_server`)
    # and as the option names (`groups`).
    aliases = {o.cli_flag.lstrip("-").replace("-", "_"): o.name for o in OPTIONS}
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        name = name if name in OPTIONS_BY_NAME else aliases.get(name, name)
        opt = OPTIONS_BY_NAME.get(name)
        if opt is not None and opt.flag_only:
            raise ConfigError(f"{key!r} is not taken from a file: pass {opt.cli_flag} on the "
                              "command line", source=str(path))
        if opt is None or name == "config":
            raise UnknownOption(unknown_key(key), source=str(path))
        out[name] = value
    return out


def unknown_key(key: str) -> str:
    """The error of a --config key that is no option: the one meant, if one is close, and the
    keys there are, as the flags are written."""
    keys = sorted(o.cli_flag.lstrip("-") for o in OPTIONS
                  if o.name != "config" and not o.flag_only)
    close = difflib.get_close_matches(key.replace("_", "-"), keys, n=1, cutoff=0.6)
    meant = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown option {key!r}{meant}; known: {', '.join(keys)}"


def _coerce(opt: Option, value: Any, source: str) -> Any:
    """A raw flag/env/TOML value as the option's type; raises ConfigError naming the source."""
    where = f"{opt.cli_flag} (from {source})"
    if opt.kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if opt.kind == "regexes":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            raise ConfigError(f"{where}: expected a list of regular expressions")
        for pattern in items:
            try:
                re.compile(pattern)
            except re.error as e:
                raise ConfigError(f"{where}: bad regular expression {pattern!r}: {e}") from None
            except (OverflowError, RecursionError):
                # a repeat count past 2^32, groups nested thousands deep
                raise ConfigError(f"{where}: regular expression too large or too deeply nested: "
                                  f"{pattern!r}") from None
        return tuple(items)
    if opt.kind == "mappings":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            raise ConfigError(f"{where}: expected a list of OLD=NEW strings")
        for text in items:
            parse_rule(text, f"{opt.cli_flag} '{text}' (from {source})")
        return tuple(items)
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if opt.kind in ("int", "duration") and is_number:
        value = str(value)
    if not isinstance(value, (str, Path)):
        raise ConfigError(f"{where}: expected a string, got {type(value).__name__}")
    text = str(value)
    if opt.kind == "int":
        # ASCII digits only: str.isdigit() also takes '²', which int() refuses; 9 digits are
        # plenty for a count.
        if not re.fullmatch(r"\s*[0-9]{1,9}\s*", text) or int(text) < 1:
            raise ConfigError(f"{where}: expected a positive integer below 1,000,000,000, "
                              f"got {value!r}")
        return int(text)
    if opt.kind == "path":
        if "\0" in text:
            raise ConfigError(f"{where}: a path cannot hold a NUL character, got {value!r}")
        try:
            return Path(text).expanduser()
        except RuntimeError:  # ~name of a user this machine does not know
            raise ConfigError(f"{where}: cannot expand {text!r}: "
                              f"no such user's home directory") from None
    if opt.kind == "duration":
        return parse_duration(text, where, opt.floor, opt.floor_why)
    if opt.kind == "secret":
        return Secret(text)
    if opt.kind == "choice" and text not in opt.choices:
        raise ConfigError(f"{where}: expected one of {', '.join(opt.choices)}, got {text!r}")
    return text


_HOSTPORT = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):\d{1,5}$")


def _check(s: Settings) -> None:
    """Cross-field and format checks that types alone cannot express."""
    if not s.zk_root.startswith("/") or (len(s.zk_root) > 1 and s.zk_root.endswith("/")):
        raise ConfigError(f"--zk-root must be an absolute ZooKeeper path like /consumers, "
                          f"got {s.zk_root!r}")
    if s.zk_auth is not None and not s.zk_auth_data():
        raise ConfigError("--zk-auth must look like SCHEME:CREDENTIAL, e.g. digest:user:password")
    if s.parallelism < 1:
        raise ConfigError(f"--parallelism must be at least 1, got {s.parallelism}")
    if s.writers < 1:
        raise ConfigError(f"--writers must be at least 1, got {s.writers}")
    if s.plan and s.resume:
        raise ConfigError("--plan and --resume go apart: "
                          "a run of a reviewed plan resumes with --resume RUN_ID alone")
    if s.zk_write_via == "broker":
        raise ConfigError(
            "--zk-write-via broker is not available: OffsetCommit v0 (kafka-python 3 still "
            "carries it, in kafka.protocol.old) cannot be conditioned on a znode's version, "
            "KRaft brokers refuse it and Kafka 4.0 removed it (KIP-896); "
            "the ZooKeeper half is written with kazoo instead (--zk-write-via zk, the default)")
    if s.metadata is not None and len(s.metadata.encode()) > 4096:
        raise ConfigError("--metadata is longer than offset.metadata.max.bytes (4096 by default)")
    if (s.layout == "template") != bool(s.path_template):
        raise ConfigError("--layout template and --path-template go together")
    if s.bootstrap_server is not None:
        for host in s.bootstrap_server.split(","):
            if not _HOSTPORT.match(host.strip()):
                raise ConfigError(f"--bootstrap-server: {host!r} is not host:port")
    if s.translate_via_mm2 is not None:
        _check_translation(s)
    if s.zk_snapshot is not None:
        side_options.check_snapshot(s)
    if s.dual_commit:
        side_options.check_dual_commit(s)
    if s.rewrite_zk_offsets and s.no_zk_write:
        why = "--translate-via-mm2 implies --no-zk-write" if s.translate_via_mm2 else \
            "--no-zk-write leaves ZooKeeper as it is"
        raise ConfigError(f"--rewrite-zk-offsets writes ZooKeeper, and {why}: pass one of them")
    if s.metrics_address is not None and not _HOSTPORT.match(s.metrics_address):
        raise ConfigError(f"--metrics-address: expected HOST:PORT (e.g. 0.0.0.0:9308), "
                          f"got {s.metrics_address!r}")
    if s.zookeeper_data is not None or s.zookeeper_data_log is not None:
        side_options.check_data_dir(s)
    if s.spark_shared_dir is not None and not s.spark_shared_dir.is_dir():
        raise ConfigError(f"--spark-shared-dir {s.spark_shared_dir}: no such directory")
    if s.zookeeper is not None:
        hosts, _, chroot = s.zookeeper.partition("/")
        for host in hosts.split(","):
            if not _HOSTPORT.match(host.strip()):
                raise ConfigError(f"--zookeeper: {host!r} is not host:port")


_ALIAS = re.compile(r"^[A-Za-z0-9._-]+$")


def _check_translation(s: Settings) -> None:
    """--translate-via-mm2 and the flags it needs."""
    if not s.translate_via_mm2:
        raise ConfigError("--translate-via-mm2 needs the source cluster's alias in MirrorMaker 2's "
                          "configuration")
    # Without --mm2-target-alias, the diff finds it from the one syncs topic there is.
    for flag, alias in (("--translate-via-mm2", s.translate_via_mm2),
                        ("--mm2-target-alias", s.mm2_target_alias)):
        if alias is not None and not _ALIAS.match(alias):
            raise ConfigError(f"{flag}: {alias!r} is not a cluster alias (letters, digits, . _ -)")
    if not s.offset_syncs_bootstrap_server:
        raise ConfigError("--offset-syncs-bootstrap-server is required with --translate-via-mm2: "
                          "the cluster holding mm2-offset-syncs.<target>.internal")
    for host in s.offset_syncs_bootstrap_server.split(","):
        if not _HOSTPORT.match(host.strip()):
            raise ConfigError(f"--offset-syncs-bootstrap-server: {host!r} is not host:port")
    if not s.no_zk_write:
        raise ConfigError("--translate-via-mm2 writes the target cluster only (--no-zk-write)")
