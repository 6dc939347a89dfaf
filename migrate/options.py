"""The table of every option: its flag, `ZK2KAFKA_*` variable, TOML key, type, help and commands.

The CLI builds its flags from `OPTIONS` and `migrate.settings` resolves the sources from it, so a
flag, its variable and its TOML key can never drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.durations import duration_text

ENV_PREFIX = "ZK2KAFKA_"


@dataclass(frozen=True)
class Option:
    """One setting: its flag, environment variable, TOML key, type and help."""

    name: str
    kind: str  # str | path | bool | int | regexes | mappings | choice | secret | duration
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] = ()
    flag: str | None = None  # defaults to --name-with-dashes
    commands: tuple[str, ...] = ()  # empty: a global option, on every command
    env: bool = True
    metavar: str | None = None
    # Shapes what a writing run does (never a secret): the journal keeps it, resume and rollback
    # compare it.
    recorded: bool = False
    # A duration that paces work on a cluster: the least it takes (seconds), and why, said when a
    # smaller one is refused (a typo of 42ms for 42m must not hammer the cluster).
    floor: float | None = None
    floor_why: str = ""

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def repeatable(self) -> bool:
        """Given once per value (--group a --group b), never from one environment variable."""
        return self.kind in ("regexes", "mappings")

    @property
    def env_var(self) -> str | None:
        if not self.env or self.repeatable:
            return None
        return ENV_PREFIX + self.name.upper()

    @property
    def flag_only(self) -> bool:
        """Given on the command line only, never by the environment or the --config file: what
        one invocation does (--execute, --resume, --plan, --run)."""
        return not self.env and not self.repeatable

    @property
    def shown_default(self) -> str:
        """The default as the flag takes it: 24h, not 86400.0."""
        if self.kind == "duration" and isinstance(self.default, (int, float)):
            return duration_text(self.default)
        return str(self.default)


    def shown(self, value: Any) -> str:
        """A value of this option in a message, as the operator would write it: 'billing.*',
        none, 24h."""
        if value is None or value == [] or value == ():
            return "none"
        if self.repeatable:
            return ", ".join(repr(v) for v in value)
        if self.kind == "bool":
            return "given" if value else "not given"
        if self.kind == "duration" and isinstance(value, (int, float)):
            return duration_text(value)
        return repr(value)


def flag(name: str) -> str:
    """The flag of option `name` as typed (`--group` for groups)."""
    opt = OPTIONS_BY_NAME.get(name)
    return opt.cli_flag if opt else "--" + name.replace("_", "-")


def shown(name: str, value: Any) -> str:
    """A value of option `name` in a message (Option.shown)."""
    opt = OPTIONS_BY_NAME.get(name)
    return opt.shown(value) if opt else repr(value)


_REGEX_META = re.compile(r"([.^$*+?{}()|\[\]\\])")


def exactly(name: str) -> str:
    """The --group (or --topic) pattern matching just `name`: a full-match regex, so only its
    metacharacters are escaped (`a.b` as `a\\.b`, `g-1` as it is)."""
    return _REGEX_META.sub(r"\\\1", name)


PLAN_COMMANDS = ("diff", "migrate", "verify", "sync")
WRITE_COMMANDS = ("migrate", "sync", "rollback")
SCAN_COMMANDS = ("scan",) + PLAN_COMMANDS
TRANSLATE_COMMANDS = ("diff", "migrate", "verify")   # sync does not translate
# The commands that carry an old group's offsets into a Kafka group of another name
# (migrate/group_map.py).
MAP_COMMANDS = ("diff", "migrate", "verify", "ready-for-kraft", "sync")

OPTIONS: tuple[Option, ...] = (
    Option("zookeeper", "str", None,
           "ZooKeeper connect string; a chroot suffix (host:2181/kafka) is honoured",
           metavar="CONNECT", recorded=True),
    Option("zk_root", "str", "/consumers", "root of the legacy offsets tree",
           metavar="PATH", recorded=True),
    Option("zk_auth", "secret", None,
           "ZooKeeper auth as SCHEME:CREDENTIAL, e.g. digest:user:password",
           metavar="SCHEME:CRED"),
    Option("bootstrap_server", "str", None, "Kafka bootstrap servers, host:port[,host:port...]",
           metavar="HOSTS", recorded=True),
    Option("command_config", "path", None,
           "Kafka client properties file, as kafka-consumer-groups.sh takes it",
           metavar="FILE"),
    Option("config", "path", None,
           "TOML file holding any of these options (keys as the flags: bootstrap-server, group)",
           metavar="FILE"),
    Option("zk_sasl_mechanism", "str", None, "ZooKeeper SASL mechanism (DIGEST-MD5 or GSSAPI)",
           metavar="MECH"),
    Option("zk_sasl_username", "str", None, "ZooKeeper SASL user (DIGEST-MD5)", metavar="USER"),
    Option("zk_sasl_password", "secret", None,
           "ZooKeeper SASL password (DIGEST-MD5); prefer the environment or --config",
           metavar="PASSWORD"),
    Option("zk_tls", "bool", False, "connect to ZooKeeper over TLS"),
    Option("zk_tls_cafile", "path", None,
           "CA bundle (PEM) that signed the ZooKeeper server certificate",
           metavar="FILE"),
    Option("zk_tls_certfile", "path", None, "client certificate (PEM) for ZooKeeper TLS",
           metavar="FILE"),
    Option("zk_tls_keyfile", "path", None, "client key (PEM) for ZooKeeper TLS", metavar="FILE"),
    Option("groups", "regexes", (), "select groups whose whole name matches REGEX (repeatable)",
           flag="--group", metavar="REGEX", recorded=True),
    Option("exclude_groups", "regexes", (),
           "leave out groups whose whole name matches REGEX (repeatable)",
           flag="--exclude-group", metavar="REGEX", recorded=True),
    Option("topics", "regexes", (), "select topics whose whole name matches REGEX (repeatable)",
           flag="--topic", metavar="REGEX", recorded=True),
    # A cutover that is also a rename (migrate/group_map.py).
    Option("map_group", "mappings", (),
           "judge and write each ZooKeeper group whose whole name matches the regular expression "
           "OLD against and to the Kafka group NEW, a template holding OLD's groups "
           "(legacy-(.*)=\\1-v2; split at the last =); ZooKeeper stays the old group's; the "
           "journal keeps the mapping for resume, rollback and verify --run; two groups meeting "
           "in one Kafka group are refused (repeatable)",
           commands=MAP_COMMANDS, metavar="OLD=NEW"),
    Option("map_group_file", "path", None,
           "as --map-group, from a CSV file of literal old,new names, one pair a line",
           commands=MAP_COMMANDS, metavar="FILE"),
    Option("state_dir", "path", Path("zk2kafka-state"), "snapshots, reports and the run journal",
           metavar="DIR"),
    Option("cache_dir", "path", Path("~/.cache/zk2kafka"), "downloaded Kafka jars for the sandbox",
           metavar="DIR"),
    Option("spark_master", "str", "local[*]",
           "Spark master: local[*], spark://host:7077, yarn, k8s://...",
           metavar="URL"),
    Option("spark_shared_dir", "path", None,
           "a directory every Spark executor sees at this same path (a shared file system; on "
           "one machine, any): on a cluster the executors read the snapshots and write the plan "
           "there, where without it the driver ships them and collects the plan whole (unused "
           "on local[*])",
           metavar="DIR"),
    Option("log_format", "choice", "text", "log format on stderr", choices=("text", "json")),
    Option("json", "bool", False, "print the result as JSON on stdout"),
    Option("debug", "bool", False, "show tracebacks of errors"),
    Option("offset_semantics", "choice", "next",
           "what the znodes hold: the next offset to read (next) "
           "or the last one processed (last: one is added)",
           choices=("next", "last"), commands=SCAN_COMMANDS, recorded=True),
    Option("layout", "choice", "standard",
           "offset layout in ZooKeeper: "
           "standard (/consumers/<g>/offsets/<t>/<p>, also Kafka 1.1.0's /offset/), "
           "storm (storm-kafka spout JSON under --zk-root), template (--path-template)",
           choices=("standard", "storm", "template"), commands=SCAN_COMMANDS, recorded=True),
    Option("path_template", "str", None,
           "a path template such as /myapp/{group}/{topic}/{partition} "
           "(implies --layout template)",
           commands=SCAN_COMMANDS, metavar="TEMPLATE", recorded=True),
    Option("zk_readers", "int", 1,
           "ZooKeeper reader processes, each with its own session; groups are sharded over them",
           commands=SCAN_COMMANDS, metavar="N"),
    # A copy of a ZooKeeper server's files instead of a live ensemble (migrate/zk/datadir.py).
    Option("zookeeper_data", "path", None,
           "scan a copy of a ZooKeeper server's dataDir (its version-2/ snapshots and logs) "
           "instead of --zookeeper: a private ZooKeeper 3.8 server replays it on a copy of its "
           "own; --zk-root is then the whole path from the ensemble's root "
           "(/kafka/consumers under the brokers' /kafka chroot)",
           commands=("scan",), metavar="DIR"),
    Option("zookeeper_data_log", "path", None,
           "with --zookeeper-data: the server's dataLogDir, where it kept its transaction logs "
           "apart from the snapshots",
           commands=("scan",), metavar="DIR"),
    # A snapshot zk2kafka wrote as the ZooKeeper side (migrate/zk/side.py): ready-for-kraft takes
    # it only to refuse it in one line.
    Option("zk_snapshot", "str", None,
           "read the ZooKeeper side from a snapshot zk2kafka wrote instead of --zookeeper: a "
           "scan's, a diff's or ready-for-kraft's run id, or the snapshot's path "
           "(snapshots/zk-RUN.parquet); ZooKeeper is not written (--no-zk-write implied), and "
           "a run reads the ZooKeeper it came from again where it still answers "
           "(--dual-commit writes it); ready-for-kraft refuses it (it reads ZooKeeper live)",
           commands=("diff", "migrate", "verify", "ready-for-kraft"), metavar="RUN|PATH"),
    # The dual commit from a snapshot: a road of its own, chosen by name (migrate/zk/side.py).
    Option("dual_commit", "bool", False,
           "with --zk-snapshot: plan the dual commit, as from --zookeeper (Kafka committed, "
           "ZooKeeper kept in agreement, each znode written or fenced at the version and mzxid "
           "the snapshot read), instead of Kafka alone; the snapshot must be a read of the live "
           "ensemble --zookeeper names, same ensemble and root (checked), and a run refuses it "
           "older than --max-plan-age",
           commands=("diff", "migrate")),
    # A flag only: an exported variable or a line in a config file would turn every later dry
    # run into a write.
    Option("execute", "bool", False, "really write; without it the command is a dry run",
           commands=("migrate", "rollback", "sync", "renew"), env=False),
    Option("resume", "str", None,
           "continue the interrupted run RUN_ID with its own selection and policies "
           "(dry run unless --execute)",
           commands=("migrate",), env=False, metavar="RUN_ID"),
    Option("plan", "str", None,
           "execute the plan a diff wrote (its plan id RUN@sha, run id, report dir or "
           "plan.parquet), the one reviewed: no new scan or diff; a group that moved since is "
           "not written",
           commands=("migrate",), env=False, metavar="PLAN"),
    Option("max_plan_age", "duration", 86400.0,
           "with --plan: refuse a plan older than this (e.g. 24h, 3d)",
           commands=("migrate",), metavar="DURATION"),
    Option("run", "str", None,
           "verify what that migrate run wrote (from its journal), without a new diff",
           commands=("verify",), env=False, metavar="RUN_ID"),
    Option("on_conflict", "choice", "skip", "when Kafka already has a different offset",
           choices=("skip", "zk", "kafka", "max", "fail"), commands=PLAN_COMMANDS,
           recorded=True),
    Option("out_of_range", "choice", "skip", "when the ZooKeeper offset is outside the log",
           choices=("skip", "clamp", "commit"), commands=PLAN_COMMANDS, recorded=True),
    Option("metadata", "str", None, "commit metadata (default names the run)",
           commands=WRITE_COMMANDS, metavar="TEXT", recorded=True),
    Option("no_zk_write", "bool", False,
           "commit to Kafka only; do not keep ZooKeeper in agreement",
           commands=("diff",) + WRITE_COMMANDS, recorded=True),
    # Its own flag: a policy that picks Kafka's offset or a bound of the log must not move the old
    # consumers' offsets in ZooKeeper by itself.
    Option("rewrite_zk_offsets", "bool", False,
           "let a row set ZooKeeper to another offset than the old consumer's own (what "
           "--on-conflict kafka|max or --out-of-range clamp can plan); without it such rows are "
           "not planned, in either store (--no-zk-write commits them to Kafka alone)",
           commands=("diff", "migrate"), recorded=True),
    Option("zk_write_via", "choice", "zk",
           "how the ZooKeeper half is written: "
           "zk (kazoo, conditioned on the scanned znode versions) "
           "or broker (OffsetCommit v0; not available, see docs/migrate.md)",
           choices=("zk", "broker"), commands=WRITE_COMMANDS),
    Option("parallelism", "int", 32,
           "Kafka commits in flight at once (groups are read and journaled in batches)",
           commands=WRITE_COMMANDS, metavar="N"),
    Option("writers", "int", 1,
           "writer processes, each with its own Kafka and ZooKeeper sessions, journaling into the "
           "one journal; migrate --execute: groups are sharded over them a batch at a time; "
           "sync: each follows the groups whose name hashes to it",
           commands=("migrate", "sync"), metavar="N"),
    Option("rescan_every", "duration", 30.0,
           "sync: full re-scan of ZooKeeper this often, catching what a watch missed "
           "(e.g. 30s, 5m; at least 1s)",
           commands=("sync",), metavar="DURATION", floor=1.0,
           floor_why="a re-scan lists every selected group in ZooKeeper and asks Kafka for its "
                     "offsets: more often than once a second it only loads both stores"),
    Option("renew_every", "duration", None,
           "sync: re-commit unchanged offsets of groups with no Kafka members this often "
           "(e.g. 6h; at least 1m: Kafka counts retention in minutes), keeping alive offsets "
           "that expire by commit time: groups without a protocol type, and every group "
           "before Kafka 2.1. It cannot keep alive an Empty consumer group's offsets on 2.1+ "
           "(KIP-211): they expire offsets.retention.minutes after the group became Empty, "
           "whatever is committed; only a consumer joining stops that. "
           "renew: re-commit this often the offsets zk2kafka wrote, from Kafka and the journal "
           "alone (default: once, then end)",
           commands=("sync", "renew"), metavar="DURATION", floor=60.0,
           floor_why="Kafka counts offsets.retention.minutes in minutes: a renewal more often "
                     "than once a minute keeps nothing alive longer, and only loads "
                     "__consumer_offsets"),
    Option("stop_after", "duration", None,
           "sync, renew: stop by itself after this long (default: until SIGINT or SIGTERM)",
           commands=("sync", "renew"), metavar="DURATION"),
    # sync and renew as services: their HTTP endpoint, and the size of sync's series.
    Option("metrics_address", "str", None,
           "sync, renew (with --execute --renew-every): serve Prometheus metrics on "
           "http://HOST:PORT/metrics and health on /healthz (e.g. 0.0.0.0:9308; port 0 picks a "
           "free one)",
           commands=("sync", "renew"), metavar="HOST:PORT"),
    Option("no_group_metrics", "bool", False,
           "sync: leave out the per-group series (for fleets of 10,000+ groups); "
           "the totals over all groups stay",
           commands=("sync",)),
    # One rule for both (migrate/zk/quiet.py): a group whose offset znodes changed within this
    # window is not ready; the default is twice the old consumer's 60 s auto-commit interval.
    Option("quiet_for", "duration", 120.0,
           "sync: call a group ready only once none of its offset znodes changed for this long; "
           "ready-for-kraft: watch ZooKeeper this long for writes (e.g. 2m; at least the old "
           "consumers' auto.commit.interval.ms, 60s by default, with room to spare: below 60s "
           "the verdict warns that such a client may not have written within it)",
           commands=("sync", "ready-for-kraft"), metavar="DURATION"),
    # The takeover rule (migrate/kafka/takeover.py) compares a broker's clock with ZooKeeper's.
    Option("clock_margin", "duration", 60.0,
           "a Kafka commit counts as a new consumer's (taken over) only when it is newer than "
           "ZooKeeper's last write of the znode by more than this, widened by the lead of "
           "Kafka's clock over ZooKeeper's the run measures: the two clocks are two servers', "
           "and a pair closer than it shows nothing (e.g. 1m; migrate/kafka/clocks.py)",
           commands=PLAN_COMMANDS + ("ready-for-kraft",), metavar="DURATION", recorded=True),
    # The clock probe (migrate/zk/clock.py): the one znode the gate writes.
    Option("no_clock_probe", "bool", False,
           "ready-for-kraft, sync --execute: do not create and delete the ephemeral znode "
           "/zk2kafka/clock-N that measures ZooKeeper's clock from both sides (the gate's one "
           "write to ZooKeeper, never under /consumers); ZooKeeper's clock is then bounded from "
           "below only, and the evidence says so",
           commands=("ready-for-kraft", "sync")),
    # ready-for-kraft's search of the whole ensemble (migrate/zk/ensemble.py) and what the
    # operator leaves in ZooKeeper on purpose.
    Option("leave_behind", "regexes", (),
           "ready-for-kraft: leave in ZooKeeper on purpose the groups whose whole name matches "
           "PATTERN, or, for a PATTERN starting with /, the offsets trees, groups or znodes whose "
           "whole path on the ensemble without chroot matches it (e.g. /other-app/consumers; "
           "repeatable; recorded in the verdict); nothing else not cleared gives exit 0",
           commands=("ready-for-kraft",), metavar="PATTERN"),
    Option("ensemble_max_znodes", "int", 100_000,
           "ready-for-kraft, scan --zookeeper-data: most znodes the search of the whole "
           "ensemble (or copy) for other offsets trees lists; for ready-for-kraft a search cut "
           "short is not ready",
           commands=("ready-for-kraft", "scan"), metavar="N"),
    Option("ensemble_max_time", "duration", 60.0,
           "ready-for-kraft, scan --zookeeper-data: longest the search of the whole ensemble "
           "(or copy) for other offsets trees takes; for ready-for-kraft a search cut short is "
           "not ready",
           commands=("ready-for-kraft", "scan"), metavar="DURATION"),
    Option("allow_live_zk_consumers", "bool", False,
           "migrate groups whose old consumers are still registered in ZooKeeper",
           commands=PLAN_COMMANDS, recorded=True),
    # Onto a cluster copied by MirrorMaker 2 (runbooks/new-cluster-mirrormaker2.md): ZooKeeper's
    # offsets are of the source cluster, --bootstrap-server is the target.
    Option("translate_via_mm2", "str", None,
           "translate ZooKeeper's offsets onto a MirrorMaker 2 copy through MM2's offset syncs; "
           "SOURCE_ALIAS is the source cluster's alias in MM2's configuration. Commits to "
           "--bootstrap-server (the target) only: ZooKeeper is not written (implies --no-zk-write)",
           commands=TRANSLATE_COMMANDS, metavar="SOURCE_ALIAS", recorded=True),
    Option("mm2_target_alias", "str", None,
           "with --translate-via-mm2: the target cluster's alias in MM2's configuration "
           "(the syncs topic is mm2-offset-syncs.<TARGET_ALIAS>.internal); found when the syncs "
           "cluster holds one such topic",
           commands=TRANSLATE_COMMANDS, metavar="TARGET_ALIAS", recorded=True),
    Option("offset_syncs_bootstrap_server", "str", None,
           "with --translate-via-mm2: the cluster holding MM2's offset syncs topic "
           "(the source by default; the target with offset-syncs.topic.location=target); "
           "--command-config applies to it too",
           commands=TRANSLATE_COMMANDS, metavar="HOSTS", recorded=True),
    Option("replication_policy", "choice", "default",
           "with --translate-via-mm2: MM2's replication policy, default (<alias>.<topic>) "
           "or identity (same topic names)",
           choices=("default", "identity"), commands=TRANSLATE_COMMANDS, recorded=True),
)
OPTIONS_BY_NAME = {o.name: o for o in OPTIONS}
