"""`zk2kafka sandbox up|down|status|seed|kraft-migrate|stop-old-consumers|old-consumer-commit|
new-consumer|v0-client|kafka-consumer-groups|kafka-get-offsets|kafka-jmx`: each returns a Result
or raises a MigrateError."""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import asdict

from migrate.errors import EXIT_OK, ConfigError, SandboxError
from migrate.sandbox import V0_EVERY_FLOOR, V0_EVERY_FLOOR_WHY
from migrate.sandbox.modes import MIGRATED_FILE, MODES, phase_of
from migrate.result import Result
from migrate.durations import parse_duration
from migrate.settings import Settings

log = logging.getLogger(__name__)


def sandbox_up(settings: Settings, kraft: bool = False, kafka_version: str | None = None,
               zookeeper_heap: str | None = None, broker_heap: str | None = None) -> Result:
    """Start a detached sandbox of `kafka_version`, or report the one already running.

    Without `kafka_version`: the release the state dir holds, else 3.9.2. The heaps (-Xmx, 512m
    when not given) are ZooKeeper's and every broker's. Returns its export lines; raises
    ConfigError for an unsupported version and SandboxError when the running sandbox, or the data
    in the state dir, is another release's, or runs with other heaps than those asked for.
    """
    from migrate.sandbox.cluster import LocalCluster
    from migrate.jvm.server import DEFAULT_HEAP
    from migrate.jvm.releases import DEFAULT_KAFKA_VERSION, release
    from migrate.sandbox.modes import recorded_version, refuse_other_release

    home = settings.state_dir / "sandbox"
    # Without --kafka-version, an `up` after `down` restarts the release whose data the state dir
    # holds. An unsupported version is a usage error, raised before anything else.
    wanted = release(kafka_version or recorded_version(home) or DEFAULT_KAFKA_VERSION)
    running = LocalCluster.from_state(home)
    heaps = {name: heap for name, heap in (("zookeeper", zookeeper_heap), ("kafka", broker_heap))
             if heap is not None}
    if (home / MIGRATED_FILE).exists():
        return _up_migrated(settings, running, kraft or bool(heaps), kafka_version)
    if running is None and (home / "kraft-controller").exists():
        # Stopped between KIP-866's phases: its broker's config is no ZooKeeper-mode one any more.
        raise SandboxError(f"{home} holds a cluster stopped half-way through `sandbox "
                           "kraft-migrate`, which the sandbox does not restart; remove it, or "
                           "use another --state-dir")
    if running is not None and all(s.alive() for s in running.servers):
        if kafka_version is not None and running.release != wanted:
            raise SandboxError(f"a Kafka {running.release.version} sandbox is already running "
                               f"under {home}; `zk2kafka sandbox down` it first, "
                               f"or use another --state-dir")
        _refuse_other_heaps(running, heaps, home)
        log.info("a Kafka %s sandbox is already running under %s", running.release.version, home)
        endpoints = running.endpoints
    else:
        if running is not None:  # a half-dead leftover: clear it before starting afresh
            running.stop()
        refuse_other_release(home.resolve(), wanted.version)
        home.mkdir(parents=True, exist_ok=True)
        cluster = LocalCluster(home, settings.cache_dir, kraft=kraft, attached=False,
                               kafka_version=wanted.version,
                               zk_heap=zookeeper_heap or DEFAULT_HEAP,
                               broker_heap=broker_heap or DEFAULT_HEAP)
        log.info("starting ZooKeeper %s (heap %s) and Kafka %s (heap %s) under %s (jars cached "
                 "in %s)", wanted.zookeeper, cluster.zk_heap, wanted.version, cluster.broker_heap,
                 home, settings.cache_dir)
        endpoints = cluster.start()
    return Result(endpoints.exports(), asdict(endpoints))


def _refuse_other_heaps(running, heaps: dict[str, str], home) -> None:
    """A heap asked of a running sandbox must be the one it runs with: its JVMs are not
    restarted."""
    for server in running.servers:
        wanted = heaps.get("kafka" if server.name.startswith(("kafka", "kraft")) else server.name)
        if wanted is not None and server.heap != wanted:
            raise SandboxError(f"the sandbox under {home} is running, its {server.name} with a "
                               f"heap of {server.heap or 'unknown size'}, not {wanted}; `zk2kafka "
                               "sandbox down` it first (its data is kept), or use another "
                               "--state-dir")


def _up_migrated(settings: Settings, running, kraft: bool, kafka_version: str | None) -> Result:
    """`up` over a home `sandbox kraft-migrate` moved to KRaft: it stays in KRaft mode."""
    from migrate.jvm.artifacts import ensure_bundle
    from migrate.sandbox.kraft_migration import restart_in_kraft_mode
    from migrate.jvm.releases import DEFAULT_KAFKA_VERSION

    home = settings.state_dir / "sandbox"
    if kraft or kafka_version not in (None, DEFAULT_KAFKA_VERSION):
        raise SandboxError(f"{home} holds a cluster migrated to KRaft in place: `sandbox up` "
                           "restarts it as it is, without --kraft, --kafka-version or a heap; "
                           "use another --state-dir for another sandbox")
    if running is not None and all(s.alive() for s in running.servers):
        log.info("the sandbox under %s runs in KRaft mode (migrated in place)", home)
        return Result(running.endpoints.exports(), asdict(running.endpoints))
    if running is not None:   # a half-dead leftover
        running.stop()
    log.info("starting the KRaft controller and broker migrated in place under %s", home)
    cluster = restart_in_kraft_mode(home.resolve(), ensure_bundle("kafka-3.9", settings.cache_dir))
    return Result(cluster.endpoints.exports(), asdict(cluster.endpoints))


def sandbox_down(settings: Settings) -> Result:
    """Stop the sandbox recorded under the state dir; a no-op when none runs."""
    from migrate.sandbox import v0_client
    from migrate.sandbox.cluster import LocalCluster

    home = settings.state_dir / "sandbox"
    clients = [f"the v0 client of {c['group']}" for c in v0_client.stop(home)]
    cluster = LocalCluster.from_state(home)
    if cluster is None and not clients:
        return Result("no sandbox running", {"stopped": []})
    if cluster is not None:
        cluster.stop()
    names = clients + ([s.name for s in reversed(cluster.servers)] if cluster else [])
    return Result("stopped " + ", ".join(names), {"stopped": names})


def sandbox_status(settings: Settings) -> Result:
    """Where the sandbox listens and whether each server is alive.

    Raises SandboxError when none runs.
    """
    from migrate.sandbox.cluster import LocalCluster

    home = settings.state_dir / "sandbox"
    cluster = LocalCluster.from_state(home)
    if cluster is None:
        raise _none_running(home)
    state = cluster.status()
    lines = [f"Kafka {state['kafka_version']} (ZooKeeper {cluster.release.zookeeper}): "
             f"{MODES[cluster.mode]}"
             + ("; ZooKeeper stopped" if cluster.endpoints.zookeeper is None else "")]
    for s in state["servers"]:
        up = "up" if s["alive"] else "DOWN"
        heap = s["heap"] or "?"
        lines.append(f"{s['name']:<16} pid {s['pid']:<8} {up:<5} heap {heap:<5} log {s['log']}")
    healthy = all(s["alive"] for s in state["servers"])
    state["phase"] = phase_of(cluster.mode)
    return Result("\n".join([cluster.endpoints.exports(), *(f"# {line}" for line in lines)]),
                  state, EXIT_OK if healthy else 1)


def sandbox_seed(settings: Settings, groups: int = 0, partitions: int = 4) -> Result:
    """Seed topics, messages and legacy offsets into the configured (or the running) sandbox;
    with `groups`, that many bulk groups on a topic of `partitions` partitions."""
    from migrate.sandbox.seed import seed

    settings = _connected(settings, "seed")
    result = seed(settings.zookeeper, settings.kafka_options(), settings.zk_root, groups,
                  partitions)
    named = ", ".join(result.groups)
    if result.bulk_groups:
        named += (f" and {result.bulk_groups:,} bulk groups bulk-... on topic bulk "
                  f"({partitions} partitions)")
    text = (f"seeded {len(result.topics)} topics ({result.messages} new messages) and "
            f"{result.znodes:,} offset znodes under {settings.zookeeper}{settings.zk_root} "
            f"for groups {named}")
    return Result(text, asdict(result))


def sandbox_kraft_migrate(settings: Settings, keep_zookeeper: bool = False,
                          to: str = "finalized") -> Result:
    """KIP-866 on the running 3.9.2 sandbox, from the phase it is in up to `to` (migration, kraft
    or finalized); once finalized, ZooKeeper stopped unless kept. Returns the export lines of the
    cluster as it is afterwards."""
    from migrate.jvm.artifacts import ensure_bundle
    from migrate.sandbox.cluster import LocalCluster
    from migrate.sandbox.kraft_migration import migrate_to_kraft, stop_zookeeper
    from migrate.sandbox.modes import KRAFT, PHASES

    home = settings.state_dir / "sandbox"
    cluster = LocalCluster.from_state(home)
    if cluster is None:
        raise _none_running(home)
    if cluster.mode == KRAFT:
        if to != "finalized":
            raise SandboxError(f"the sandbox under {home} is finalized already, past phase {to}")
        # Migrated with --keep-zookeeper: without it now, ZooKeeper is decommissioned.
        stopped = not keep_zookeeper and stop_zookeeper(cluster)
        log.info("the sandbox under %s is already in KRaft mode%s", home,
                 "; ZooKeeper stopped" if stopped else "")
    else:
        migrate_to_kraft(cluster, ensure_bundle(cluster.release.bundle, settings.cache_dir),
                         keep_zookeeper, to)
        kept = "" if PHASES[to] != KRAFT or keep_zookeeper else "; ZooKeeper stopped"
        log.info("the sandbox under %s is in %s%s", home, MODES[cluster.mode], kept)
    return Result(cluster.endpoints.exports() + f"\n# {MODES[cluster.mode]}",
                  {**asdict(cluster.endpoints), "mode": cluster.mode,
                   "phase": phase_of(cluster.mode)})


def sandbox_stop_old_consumers(settings: Settings) -> Result:
    """What stopping the old consumers of the --group groups does in ZooKeeper: their
    registrations under ids/ and owners/ go. Only the seed's stand-ins (persistent znodes) are
    removed; a live consumer's registration (ephemeral) is refused, nothing removed."""
    from migrate.sandbox.old_consumers import stop_old_consumers

    if not settings.groups:
        raise ConfigError("stop-old-consumers needs --group REGEX: the groups whose old "
                          "consumers to stop")
    settings = _connected(settings, "stop-old-consumers", kafka=False)
    stopped = stop_old_consumers(settings.zookeeper, settings.zk_root, settings.groups,
                                 settings.exclude_groups)
    lines = [f"stopped the old consumers of {group}: {ids} registration(s) in ids/ and {owned} "
             f"partition(s) owned under owners/ removed" for group, (ids, owned) in stopped.items()]
    return Result("\n".join(lines), {"stopped": {g: {"ids": i, "owners": o}
                                                 for g, (i, o) in stopped.items()}})


def sandbox_old_consumer_commit(settings: Settings, partition: int, offset: int) -> Result:
    """What an old consumer's commit does: `offset`, the next one to read, in the znode of the
    --group group's --topic-`partition`."""
    from migrate.sandbox.old_consumers import commit_offset

    group = _one_name(settings.groups, "--group", "old-consumer-commit")
    topic = _one_name(settings.topics, "--topic", "old-consumer-commit")
    settings = _connected(settings, "old-consumer-commit", kafka=False)
    path = commit_offset(settings.zookeeper, settings.zk_root, group, topic, partition, offset)
    return Result(f"an old consumer of {group} committed {topic}-{partition} -> {offset} "
                  f"({path})", {"group": group, "znode": path, "offset": offset})


def sandbox_v0_client(settings: Settings, action: str, partition: int = 0, offset: int = 0,
                      every: str = "1s") -> Result:
    """`start`: a legacy client of the --group group committing through the broker with
    OffsetCommit v0, in the background, tracked under the sandbox's state dir; `stop`: those
    of the --group groups (every one without it)."""
    from migrate.sandbox import v0_client

    home = settings.state_dir / "sandbox"
    if action == "stop":
        stopped = ([c for g in settings.groups for c in v0_client.stop(home, g)]
                   if settings.groups else v0_client.stop(home))
        lines = [f"stopped the v0 client of {c['group']} (pid {c['pid']}); its last commit: "
                 f"{c['last_commit'] or 'none'}" for c in stopped]
        return Result("\n".join(lines) or "no v0 client running", {"stopped": stopped})
    group = _one_name(settings.groups, "--group", "v0-client start")
    topic = _one_name(settings.topics, "--topic", "v0-client start")
    settings = _connected(settings, "v0-client start")
    client = v0_client.start(home, settings.bootstrap_server, group, topic, partition, offset,
                             parse_duration(every, "--every", V0_EVERY_FLOOR, V0_EVERY_FLOOR_WHY))
    return Result(f"started a v0 client of {group} (pid {client['pid']}): OffsetCommit v0 to "
                  f"{settings.bootstrap_server} every {every}; first commit: "
                  f"{client['last_commit']}; log {client['log']}", client)


def sandbox_new_consumer(settings: Settings) -> Result:
    """What starting the --group group's new consumers does on Kafka: one joins, reads --topic to
    its end from the group's committed offsets, commits and leaves."""
    from migrate.sandbox.new_consumer import run_new_consumer

    group = _one_name(settings.groups, "--group", "new-consumer")
    topic = _one_name(settings.topics, "--topic", "new-consumer")
    settings = _connected(settings, "new-consumer", zookeeper=False)   # Kafka alone
    try:
        started = run_new_consumer(group, topic, settings.kafka_options())
    except TimeoutError as e:
        raise SandboxError(str(e)) from None
    at = ", ".join(f"{topic}-{p} {o}" for p, o in sorted(started.items())) or "nothing to read"
    return Result(f"a new consumer of {group} started at {at}, read to the end, committed and left",
                  {"group": group, "topic": topic, "started": started})


def _one_name(names: tuple[str, ...], flag: str, action: str) -> str:
    """The one literal name `flag` gave; ConfigError for none, several, or a pattern."""
    if len(names) != 1 or not re.fullmatch(r"[\w.-]+", names[0]):
        raise ConfigError(f"{action} needs one {flag} NAME, a name and not a pattern")
    return names[0]


def sandbox_tool(settings: Settings, tool: str, args: list[str]) -> Result:
    """Run Kafka's own `tool` of the sandbox's release with `args` (after `--`), against the
    sandbox's broker unless they name a --bootstrap-server. Its output and exit code are its own."""
    from migrate.sandbox.cluster import LocalCluster
    from migrate.jvm.releases import DEFAULT_KAFKA_VERSION, release
    from migrate.sandbox.modes import recorded_version
    from migrate.sandbox.tools import JMX_URL, run_tool

    home = settings.state_dir / "sandbox"
    args = args[1:] if args[:1] == ["--"] else list(args)
    cluster = LocalCluster.from_state(home)
    if tool == "kafka-jmx" and "--jmx-url" not in args:
        if cluster is None or cluster.endpoints.broker_jmx is None:
            raise ConfigError(f"{tool} needs --jmx-url (after --), or a sandbox under --state-dir")
        args = ["--jmx-url", JMX_URL.format(cluster.endpoints.broker_jmx), *args]
    elif tool != "kafka-jmx" and "--bootstrap-server" not in args:
        bootstrap = settings.bootstrap_server or (cluster.endpoints.bootstrap_server
                                                  if cluster else None)
        if bootstrap is None:
            raise ConfigError(f"{tool} needs a broker: --bootstrap-server, "
                              "ZK2KAFKA_BOOTSTRAP_SERVER, or a sandbox under --state-dir")
        args = ["--bootstrap-server", bootstrap, *args]
    version = release(recorded_version(home) or DEFAULT_KAFKA_VERSION)
    done = run_tool(tool, version, args, settings.cache_dir)
    return Result(done.stdout.rstrip("\n"), {"tool": tool, "args": args,
                                              "exit_code": done.returncode,
                                              "stdout": done.stdout}, done.returncode)


def _none_running(home) -> SandboxError:
    """No sandbox under the state dir: most often another state dir than `sandbox up`'s (a
    change's own, exported as ZK2KAFKA_STATE_DIR)."""
    return SandboxError(f"no sandbox running under {home}: a sandbox is that of the --state-dir "
                        "its `zk2kafka sandbox up` was given (./zk2kafka-state by default), also "
                        "where ZK2KAFKA_STATE_DIR names another; give that --state-dir, or start "
                        "one with `zk2kafka sandbox up`")


def _connected(settings: Settings, action: str, kafka: bool = True,
               zookeeper: bool = True) -> Settings:
    """The settings with the running sandbox's ZooKeeper (unless the action acts on Kafka alone)
    and Kafka, where none is given."""
    from migrate.sandbox.cluster import LocalCluster

    if (zookeeper and settings.zookeeper is None) or (kafka and settings.bootstrap_server is None):
        cluster = LocalCluster.from_state(settings.state_dir / "sandbox")
        needs = " and ".join(["--zookeeper"] * zookeeper + ["--bootstrap-server"] * kafka)
        if cluster is None:
            raise SandboxError(f"{action} needs {needs}, or a sandbox started by `zk2kafka "
                               "sandbox up` under the same --state-dir")
        if zookeeper and cluster.endpoints.zookeeper is None and settings.zookeeper is None:
            raise SandboxError(f"{action}: the sandbox has no ZooKeeper any more "
                               "(`sandbox kraft-migrate` stopped it)")
        settings = dataclasses.replace(
            settings, zookeeper=settings.zookeeper or cluster.endpoints.zookeeper,
            bootstrap_server=settings.bootstrap_server or cluster.endpoints.bootstrap_server)
    return settings
