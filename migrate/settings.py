"""One frozen `Settings` per invocation, from flags > environment > TOML (`--config`) > defaults.

Every option is declared once in `OPTIONS`; the CLI builds its flags from that
table and this module resolves the sources, so a flag, its `ZK2KAFKA_*`
variable and its TOML key can never drift apart. Secrets are wrapped in
`Secret` and never shown by `repr`, logs or reports.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.errors import ConfigError
from migrate.kafka_config import ClientConfig, check_tls, load_client_config

ENV_PREFIX = "ZK2KAFKA_"


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


@dataclass(frozen=True)
class Option:
    """One setting: its flag, environment variable, TOML key, type and help."""

    name: str
    kind: str  # str | path | bool | int | regexes | choice | secret | duration
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] = ()
    flag: str | None = None  # defaults to --name-with-dashes
    commands: tuple[str, ...] = ()  # empty: a global option, on every command
    env: bool = True
    metavar: str | None = None
    # Shapes what a writing run does (never a secret): the journal keeps it, resume and rollback compare it.
    recorded: bool = False

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def env_var(self) -> str | None:
        return ENV_PREFIX + self.name.upper() if self.env and self.kind != "regexes" else None


PLAN_COMMANDS = ("diff", "migrate", "verify", "sync")
WRITE_COMMANDS = ("migrate", "sync", "rollback")

OPTIONS: tuple[Option, ...] = (
    Option("zookeeper", "str", None, "ZooKeeper connect string; a chroot suffix (host:2181/kafka) is honoured",
           metavar="CONNECT", recorded=True),
    Option("zk_root", "str", "/consumers", "root of the legacy offsets tree", metavar="PATH", recorded=True),
    Option("zk_auth", "secret", None, "ZooKeeper auth as SCHEME:CREDENTIAL, e.g. digest:user:password",
           metavar="SCHEME:CRED"),
    Option("bootstrap_server", "str", None, "Kafka bootstrap servers, host:port[,host:port...]", metavar="HOSTS",
           recorded=True),
    Option("command_config", "path", None, "Kafka client properties file, as kafka-consumer-groups.sh takes it",
           metavar="FILE"),
    Option("config", "path", None, "TOML file holding any of these options (keys as the flags, without dashes)",
           metavar="FILE"),
    Option("zk_sasl_mechanism", "str", None, "ZooKeeper SASL mechanism (DIGEST-MD5 or GSSAPI)", metavar="MECH"),
    Option("zk_sasl_username", "str", None, "ZooKeeper SASL user (DIGEST-MD5)", metavar="USER"),
    Option("zk_sasl_password", "secret", None,
           "ZooKeeper SASL password (DIGEST-MD5); prefer the environment or --config", metavar="PASSWORD"),
    Option("zk_tls", "bool", False, "connect to ZooKeeper over TLS"),
    Option("zk_tls_cafile", "path", None, "CA bundle (PEM) that signed the ZooKeeper server certificate",
           metavar="FILE"),
    Option("zk_tls_certfile", "path", None, "client certificate (PEM) for ZooKeeper TLS", metavar="FILE"),
    Option("zk_tls_keyfile", "path", None, "client key (PEM) for ZooKeeper TLS", metavar="FILE"),
    Option("groups", "regexes", (), "select groups whose whole name matches REGEX (repeatable)", flag="--group",
           metavar="REGEX", recorded=True),
    Option("exclude_groups", "regexes", (), "leave out groups whose whole name matches REGEX (repeatable)",
           flag="--exclude-group", metavar="REGEX", recorded=True),
    Option("topics", "regexes", (), "select topics whose whole name matches REGEX (repeatable)", flag="--topic",
           metavar="REGEX", recorded=True),
    Option("state_dir", "path", Path("zk2kafka-state"), "snapshots, reports and the run journal", metavar="DIR"),
    Option("cache_dir", "path", Path("~/.cache/zk2kafka"), "downloaded Kafka jars for the sandbox", metavar="DIR"),
    Option("spark_master", "str", "local[*]", "Spark master: local[*], spark://host:7077, yarn, k8s://...",
           metavar="URL"),
    Option("log_format", "choice", "text", "log format on stderr", choices=("text", "json")),
    Option("json", "bool", False, "print the result as JSON on stdout"),
    Option("debug", "bool", False, "show tracebacks of errors"),
    Option("offset_semantics", "choice", "next",
           "what the znodes hold: the next offset to read (next) or the last one processed (last: one is added)",
           choices=("next", "last"), commands=("scan",) + PLAN_COMMANDS, recorded=True),
    Option("layout", "choice", "standard",
           "offset layout in ZooKeeper: standard (/consumers/<g>/offsets/<t>/<p>, also Kafka 1.1.0's /offset/), "
           "storm (storm-kafka spout JSON under --zk-root), template (--path-template)",
           choices=("standard", "storm", "template"), commands=("scan",) + PLAN_COMMANDS, recorded=True),
    Option("path_template", "str", None,
           "a path template such as /myapp/{group}/{topic}/{partition} (implies --layout template)",
           commands=("scan",) + PLAN_COMMANDS, metavar="TEMPLATE", recorded=True),
    Option("zk_readers", "int", 1,
           "ZooKeeper reader processes, each with its own session; groups are sharded over them",
           commands=("scan",) + PLAN_COMMANDS, metavar="N"),
    Option("execute", "bool", False, "really write; without it the command is a dry run",
           commands=("migrate", "rollback", "sync")),
    Option("resume", "str", None, "continue the interrupted run RUN_ID", commands=("migrate",), env=False,
           metavar="RUN_ID"),
    Option("plan", "str", None, "execute the plan a `diff` wrote (its run id, plan id RUN@sha, or report dir), the one "
           "reviewed: no new scan or diff; a group that moved since is not written", commands=("migrate",), env=False,
           metavar="RUN_ID"),
    Option("max_plan_age", "duration", 86400.0, "with --plan: refuse a plan older than this (e.g. 24h, 3d)",
           commands=("migrate",), metavar="DURATION"),
    Option("run", "str", None, "verify what that migrate run wrote (from its journal), without a new diff",
           commands=("verify",), env=False, metavar="RUN_ID"),
    Option("on_conflict", "choice", "skip", "when Kafka already has a different offset",
           choices=("skip", "zk", "kafka", "max", "fail"), commands=PLAN_COMMANDS, recorded=True),
    Option("out_of_range", "choice", "skip", "when the ZooKeeper offset is outside the log",
           choices=("skip", "clamp", "commit"), commands=PLAN_COMMANDS, recorded=True),
    Option("metadata", "str", None, "commit metadata (default names the run)", commands=WRITE_COMMANDS, metavar="TEXT",
           recorded=True),
    Option("no_zk_write", "bool", False, "commit to Kafka only; do not keep ZooKeeper in agreement",
           commands=WRITE_COMMANDS, recorded=True),
    Option("zk_write_via", "choice", "zk",
           "how the ZooKeeper half is written: zk (kazoo, conditioned on the scanned znode versions) "
           "or broker (OffsetCommit v0; not available, see README)", choices=("zk", "broker"), commands=WRITE_COMMANDS),
    Option("parallelism", "int", 32, "Kafka commits in flight at once (groups are read and journaled in batches)",
           commands=WRITE_COMMANDS, metavar="N"),
    Option("rescan_every", "duration", 30.0, "sync: full re-scan of ZooKeeper this often, catching what a watch "
           "missed (e.g. 30s, 5m)", commands=("sync",), metavar="DURATION"),
    Option("renew_every", "duration", None, "sync: re-commit unchanged offsets of groups with no Kafka members this "
           "often (e.g. 6h), keeping alive offsets that expire by commit time: groups without a protocol type, and "
           "every group before Kafka 2.1. It cannot keep alive an Empty consumer group's offsets on 2.1+ (KIP-211): "
           "they expire offsets.retention.minutes after the group became Empty, whatever is committed; only a "
           "consumer joining stops that", commands=("sync",), metavar="DURATION"),
    Option("stop_after", "duration", None, "sync: stop by itself after this long (default: until SIGINT or SIGTERM)",
           commands=("sync",), metavar="DURATION"),
    Option("allow_live_zk_consumers", "bool", False,
           "migrate groups whose old consumers are still registered in ZooKeeper", commands=PLAN_COMMANDS,
           recorded=True),
)
OPTIONS_BY_NAME = {o.name: o for o in OPTIONS}
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
    state_dir: Path = Path("zk2kafka-state")
    cache_dir: Path = Path("~/.cache/zk2kafka").expanduser()
    spark_master: str = "local[*]"
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
    zk_write_via: str = "zk"
    parallelism: int = 32
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
    rescan_every: float = 30.0
    renew_every: float | None = None
    stop_after: float | None = None
    # Parsed from --command-config; secrets inside stay out of repr.
    kafka_client: ClientConfig | None = field(default=None, compare=False)

    def require(self, name: str) -> Any:
        """The value of option `name`; raises ConfigError naming the flag and variable when unset."""
        value = getattr(self, name)
        if value in (None, ""):
            opt = OPTIONS_BY_NAME[name]
            hint = f" or set {opt.env_var}" if opt.env_var else ""
            raise ConfigError(f"{opt.cli_flag} is required for this command{hint}")
        return value

    def kafka_options(self) -> dict[str, Any]:
        """kafka-python client keyword options: --command-config merged under --bootstrap-server."""
        options = dict(self.kafka_client.options) if self.kafka_client else {}
        options["bootstrap_servers"] = self.require("bootstrap_server").split(",")
        return options

    def secrets(self) -> list[str]:
        """Every secret value of these settings, for `migrate.log.redact`: the passwords and credentials."""
        found = list(self.kafka_client.secrets()) if self.kafka_client else []
        if self.zk_sasl_password is not None:
            found.append(self.zk_sasl_password.reveal())
        for scheme, credential in self.zk_auth_data():
            # digest:user:password: the password, and the credential kazoo logs as one string.
            found += [credential, credential.partition(":")[2]] if scheme == "digest" else [credential]
        return [s for s in found if s]

    def zk_auth_data(self) -> list[tuple[str, str]]:
        """kazoo `auth_data`: [(scheme, credential)] or []."""
        if self.zk_auth is None:
            return []
        scheme, _, credential = self.zk_auth.reveal().partition(":")
        return [(scheme, credential)] if scheme and credential else []


def load_settings(flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Settings:
    """Resolve flags > environment > TOML file > defaults into Settings; raises ConfigError."""
    environ = os.environ if environ is None else environ
    from_env = {o.name: environ[o.env_var] for o in OPTIONS if o.env_var and environ.get(o.env_var, "") != ""}
    config_path = flags.get("config") or from_env.get("config")
    from_file = _read_toml(Path(config_path)) if config_path else {}

    values: dict[str, Any] = {}
    for opt in OPTIONS:
        for source, layer in (("flag", flags), ("environment", from_env), (str(config_path), from_file)):
            if opt.name in layer and layer[opt.name] is not None:
                values[opt.name] = _coerce(opt, layer[opt.name], source)
                break
    if "verbosity" in flags:  # -v/-q: flags only
        values["verbosity"] = int(flags["verbosity"])
    if values.get("path_template") and "layout" not in values:
        values["layout"] = "template"
    settings = Settings(**values)
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
        raise ConfigError(f"not valid TOML: not UTF-8 text (byte {e.start})", source=str(path)) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"not valid TOML: {e}", source=str(path)) from None
    except ValueError:  # tomllib's int() refuses integers of more than 4,300 digits
        raise ConfigError("not valid TOML: a number too long to read", source=str(path)) from None
    # Accept the flag spellings too: `bootstrap-server`, `group`, `exclude-group`, `topic`.
    aliases = {o.cli_flag.lstrip("-").replace("-", "_"): o.name for o in OPTIONS}
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        name = name if name in OPTIONS_BY_NAME else aliases.get(name, name)
        if name not in OPTIONS_BY_NAME or name == "config":
            known = ", ".join(sorted(o.name for o in OPTIONS if o.name != "config"))
            raise ConfigError(f"unknown option {key!r}; known: {known}", source=str(path))
        out[name] = value
    return out


def _coerce(opt: Option, value: Any, source: str) -> Any:
    """Convert a raw flag/env/TOML value to the option's type; raises ConfigError naming the source."""
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
            except (OverflowError, RecursionError):  # a repeat count past 2^32, groups nested thousands deep
                raise ConfigError(f"{where}: regular expression too large or too deeply nested: "
                                  f"{pattern!r}") from None
        return tuple(items)
    if opt.kind in ("int", "duration") and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, (str, Path)):
        raise ConfigError(f"{where}: expected a string, got {type(value).__name__}")
    text = str(value)
    if opt.kind == "int":
        # ASCII digits only: str.isdigit() also takes '²', which int() refuses; 9 digits are plenty for a count.
        if not re.fullmatch(r"\s*[0-9]{1,9}\s*", text) or int(text) < 1:
            raise ConfigError(f"{where}: expected a positive integer below 1,000,000,000, got {value!r}")
        return int(text)
    if opt.kind == "path":
        if "\0" in text:
            raise ConfigError(f"{where}: a path cannot hold a NUL character, got {value!r}")
        try:
            return Path(text).expanduser()
        except RuntimeError:  # ~name of a user this machine does not know
            raise ConfigError(f"{where}: cannot expand {text!r}: no such user's home directory") from None
    if opt.kind == "duration":
        return parse_duration(text, where)
    if opt.kind == "secret":
        return Secret(text)
    if opt.kind == "choice" and text not in opt.choices:
        raise ConfigError(f"{where}: expected one of {', '.join(opt.choices)}, got {text!r}")
    return text


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, where: str = "duration") -> float:
    """Seconds from `500ms`, `30s`, `5m`, `6h`, `1d` or a bare number of seconds; raises ConfigError."""
    m = _DURATION.match(text)
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"] if m else 0.0
    # Past threading.TIMEOUT_MAX (~292 years) a wait or timer raises OverflowError; 1e400 is inf.
    if not 0 < seconds <= threading.TIMEOUT_MAX:
        raise ConfigError(f"{where}: expected a duration like 30s, 5m, 6h or 1d, got {text!r}")
    return seconds


_HOSTPORT = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):\d{1,5}$")


def _check(s: Settings) -> None:
    """Cross-field and format checks that types alone cannot express."""
    if not s.zk_root.startswith("/") or (len(s.zk_root) > 1 and s.zk_root.endswith("/")):
        raise ConfigError(f"--zk-root must be an absolute ZooKeeper path like /consumers, got {s.zk_root!r}")
    if s.zk_auth is not None and not s.zk_auth_data():
        raise ConfigError("--zk-auth must look like SCHEME:CREDENTIAL, e.g. digest:user:password")
    if s.parallelism < 1:
        raise ConfigError(f"--parallelism must be at least 1, got {s.parallelism}")
    if s.plan and s.resume:
        raise ConfigError("--plan and --resume go apart: a run of a reviewed plan resumes with --resume RUN_ID alone")
    if s.zk_write_via == "broker":
        raise ConfigError(
            "--zk-write-via broker is not available: it needs OffsetCommit v0, and kafka-python 3 carries "
            "OffsetCommit versions 2-10 only (Kafka 4.0 removed v0 and v1, KIP-896); the ZooKeeper half is "
            "written with kazoo instead (--zk-write-via zk, the default)")
    if s.metadata is not None and len(s.metadata.encode()) > 4096:
        raise ConfigError("--metadata is longer than offset.metadata.max.bytes (4096 by default)")
    if (s.layout == "template") != bool(s.path_template):
        raise ConfigError("--layout template and --path-template go together")
    if s.bootstrap_server is not None:
        for host in s.bootstrap_server.split(","):
            if not _HOSTPORT.match(host.strip()):
                raise ConfigError(f"--bootstrap-server: {host!r} is not host:port")
    if s.zookeeper is not None:
        hosts, _, chroot = s.zookeeper.partition("/")
        for host in hosts.split(","):
            if not _HOSTPORT.match(host.strip()):
                raise ConfigError(f"--zookeeper: {host!r} is not host:port")
