"""`zk2kafka sandbox up|down|status|seed`: each returns a Result or raises a MigrateError."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import asdict

from migrate.errors import EXIT_OK, SandboxError
from migrate.result import Result
from migrate.settings import Settings

log = logging.getLogger(__name__)


def sandbox_up(settings: Settings, kraft: bool = False, kafka_version: str | None = None) -> Result:
    """Start a detached sandbox of `kafka_version`, or report the one already running.

    Without `kafka_version`: the release the state dir holds, else 3.9.2. Returns its export
    lines; raises ConfigError for an unsupported version and SandboxError when the running
    sandbox, or the data in the state dir, is another release's.
    """
    from migrate.sandbox.cluster import LocalCluster
    from migrate.sandbox.releases import (DEFAULT_KAFKA_VERSION, recorded_version,
                                          refuse_other_release, release)

    home = settings.state_dir / "sandbox"
    # Without --kafka-version, an `up` after `down` restarts the release whose data the state dir
    # holds. An unsupported version is a usage error, raised before anything else.
    wanted = release(kafka_version or recorded_version(home) or DEFAULT_KAFKA_VERSION)
    running = LocalCluster.from_state(home)
    if running is not None and all(s.alive() for s in running.servers):
        if kafka_version is not None and running.release != wanted:
            raise SandboxError(f"a Kafka {running.release.version} sandbox is already running "
                               f"under {home}; `zk2kafka sandbox down` it first, "
                               f"or use another --state-dir")
        log.info("a Kafka %s sandbox is already running under %s", running.release.version, home)
        endpoints = running.endpoints
    else:
        if running is not None:  # a half-dead leftover: clear it before starting afresh
            running.stop()
        refuse_other_release(home.resolve(), wanted.version)
        home.mkdir(parents=True, exist_ok=True)
        log.info("starting ZooKeeper %s and Kafka %s under %s (jars cached in %s)",
                 wanted.zookeeper, wanted.version, home, settings.cache_dir)
        endpoints = LocalCluster(home, settings.cache_dir, kraft=kraft, attached=False,
                                 kafka_version=wanted.version).start()
    return Result(endpoints.exports(), asdict(endpoints))


def sandbox_down(settings: Settings) -> Result:
    """Stop the sandbox recorded under the state dir; a no-op when none runs."""
    from migrate.sandbox.cluster import LocalCluster

    cluster = LocalCluster.from_state(settings.state_dir / "sandbox")
    if cluster is None:
        return Result("no sandbox running", {"stopped": []})
    cluster.stop()
    names = [s.name for s in reversed(cluster.servers)]  # the order they were stopped in
    return Result("stopped " + ", ".join(names), {"stopped": names})


def sandbox_status(settings: Settings) -> Result:
    """Where the sandbox listens and whether each server is alive.

    Raises SandboxError when none runs.
    """
    from migrate.sandbox.cluster import LocalCluster

    home = settings.state_dir / "sandbox"
    cluster = LocalCluster.from_state(home)
    if cluster is None:
        raise SandboxError(f"no sandbox running under {home}; start one with `zk2kafka sandbox up`")
    state = cluster.status()
    lines = [f"Kafka {state['kafka_version']} (ZooKeeper {cluster.release.zookeeper})"]
    for s in state["servers"]:
        up = "up" if s["alive"] else "DOWN"
        lines.append(f"{s['name']:<10} pid {s['pid']:<8} {up:<5} log {s['log']}")
    healthy = all(s["alive"] for s in state["servers"])
    return Result("\n".join([cluster.endpoints.exports(), *(f"# {line}" for line in lines)]),
                  state, EXIT_OK if healthy else 1)


def sandbox_seed(settings: Settings) -> Result:
    """Seed topics, messages and legacy offsets into the configured (or the running) sandbox."""
    from migrate.sandbox.cluster import LocalCluster
    from migrate.sandbox.seed import seed

    if settings.zookeeper is None or settings.bootstrap_server is None:
        cluster = LocalCluster.from_state(settings.state_dir / "sandbox")
        if cluster is None:
            raise SandboxError("seed needs --zookeeper and --bootstrap-server, or a sandbox "
                               "started by `zk2kafka sandbox up` under the same --state-dir")
        settings = dataclasses.replace(
            settings, zookeeper=settings.zookeeper or cluster.endpoints.zookeeper,
            bootstrap_server=settings.bootstrap_server or cluster.endpoints.bootstrap_server)
    result = seed(settings.zookeeper, settings.kafka_options(), settings.zk_root)
    text = (f"seeded {len(result.topics)} topics ({result.messages} new messages) and "
            f"{result.znodes} offset znodes under {settings.zookeeper}{settings.zk_root} "
            f"for groups {', '.join(result.groups)}")
    return Result(text, asdict(result))
