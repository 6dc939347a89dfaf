"""One function per CLI command, composing the library; each returns a `Result` or raises a MigrateError."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from migrate.errors import EXIT_OK, NotImplementedYet, SandboxError
from migrate.settings import Settings
from migrate.state import StateDir, new_run_id

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Result:
    """What a command prints on stdout: text for people, `data` for --json, and its exit code."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)
    exit_code: int = EXIT_OK

    def render(self) -> str:
        return self.text

    def to_json(self) -> dict[str, Any]:
        return self.data


def scan(settings: Settings) -> Result:
    """Read every selected ZooKeeper offset into snapshots/zk-<run>.parquet; report counts in reports/<run>/."""
    from migrate.zk.scan import scan_to_parquet

    settings.require("zookeeper")
    run, state = new_run_id(), StateDir(settings.state_dir)
    source = f"{settings.zookeeper}{settings.path_template or settings.zk_root}"
    started = time.time()
    snapshot = state.zk_snapshot(run)
    stats = scan_to_parquet(settings, snapshot, {
        "run": run, "source": source, "layout": settings.layout, "semantics": settings.offset_semantics,
        "started": _iso(started)})
    elapsed = time.time() - started
    report = state.reports(run)
    data = {
        "run": run, "command": "scan", "source": source, "snapshot": str(snapshot), "report": str(report),
        "groups": len(stats.groups), "offsets": stats.offsets, "counts": dict(sorted(stats.statuses.items())),
        "layouts": dict(sorted(stats.layouts.items())), "groups_with_live_zk_consumers": sorted(stats.live_groups),
        "started": _iso(started), "seconds": round(elapsed, 3), "retried_reads": stats.retries,
    }
    (report / "scan.json").write_text(json.dumps(data, indent=2) + "\n")
    rate = stats.offsets / elapsed if elapsed > 0 else 0
    lines = [f"scanned {data['groups']} groups, {stats.offsets} offsets from {source} in {elapsed:.1f}s ({rate:,.0f}/s)"]
    lines += [f"  {status:<11} {n:>9,}" for status, n in data["counts"].items()]
    lines.append("layouts: " + ", ".join(f"{k} {v:,}" for k, v in data["layouts"].items()))
    if stats.live_groups:
        names = ", ".join(sorted(stats.live_groups)[:10]) + (" ..." if len(stats.live_groups) > 10 else "")
        lines.append(f"groups with old consumers still registered: {len(stats.live_groups)} ({names})")
    lines += [f"snapshot: {snapshot}", f"run={run} report={report}"]
    return Result("\n".join(lines), data)


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def diff(settings: Settings) -> Result:
    raise NotImplementedYet("diff")


def migrate(settings: Settings) -> Result:
    raise NotImplementedYet("migrate")


def verify(settings: Settings) -> Result:
    raise NotImplementedYet("verify")


def sync(settings: Settings) -> Result:
    raise NotImplementedYet("sync")


def rollback(settings: Settings, run_id: str) -> Result:
    raise NotImplementedYet("rollback")


def status(settings: Settings, run_id: str | None = None) -> Result:
    raise NotImplementedYet("status")


def sandbox_up(settings: Settings, kraft: bool = False) -> Result:
    """Start a detached sandbox (or report the one already running) and return its export lines."""
    from migrate.sandbox.cluster import LocalCluster

    home = settings.state_dir / "sandbox"
    running = LocalCluster.from_state(home)
    if running is not None and all(s.alive() for s in running.servers):
        log.info("a sandbox is already running under %s", home)
        endpoints = running.endpoints
    else:
        if running is not None:  # a half-dead leftover: clear it before starting afresh
            running.stop()
        home.mkdir(parents=True, exist_ok=True)
        log.info("starting ZooKeeper and Kafka under %s (jars cached in %s)", home, settings.cache_dir)
        endpoints = LocalCluster(home, settings.cache_dir, kraft=kraft, attached=False).start()
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
    """Where the sandbox listens and whether each server is alive; raises SandboxError when none runs."""
    from migrate.sandbox.cluster import LocalCluster

    home = settings.state_dir / "sandbox"
    cluster = LocalCluster.from_state(home)
    if cluster is None:
        raise SandboxError(f"no sandbox running under {home}; start one with `zk2kafka sandbox up`")
    state = cluster.status()
    lines = [f"{s['name']:<10} pid {s['pid']:<8} {'up' if s['alive'] else 'DOWN':<5} log {s['log']}"
             for s in state["servers"]]
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
            raise SandboxError("seed needs --zookeeper and --bootstrap-server, or a sandbox started by "
                               "`zk2kafka sandbox up` under the same --state-dir")
        settings = dataclasses.replace(
            settings, zookeeper=settings.zookeeper or cluster.endpoints.zookeeper,
            bootstrap_server=settings.bootstrap_server or cluster.endpoints.bootstrap_server)
    result = seed(settings.zookeeper, settings.kafka_options(), settings.zk_root)
    text = (f"seeded {len(result.topics)} topics ({result.messages} new messages) and "
            f"{result.znodes} offset znodes under {settings.zookeeper}{settings.zk_root} "
            f"for groups {', '.join(result.groups)}")
    return Result(text, asdict(result))


def run(command: str, settings: Settings, args: dict[str, Any]) -> Result:
    """Dispatch a parsed command line to its function."""
    if command == "sandbox":
        action = args["action"]
        if action == "up":
            return sandbox_up(settings, kraft=args.get("kraft", False))
        return {"down": sandbox_down, "status": sandbox_status, "seed": sandbox_seed}[action](settings)
    if command == "rollback":
        return rollback(settings, args["run_id"])
    if command == "status":
        return status(settings, args.get("run_id"))
    return {"scan": scan, "diff": diff, "migrate": migrate, "verify": verify, "sync": sync}[command](settings)
