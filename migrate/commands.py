"""One function per CLI command, composing the library; each returns a `Result` or raises a MigrateError."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from migrate.errors import EXIT_BLOCKERS, EXIT_OK, NotImplementedYet, SandboxError
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
    run, state = new_run_id(), StateDir(settings.state_dir)
    data = _scan(settings, state, run)
    report = state.reports(run)
    (report / "scan.json").write_text(json.dumps(data, indent=2) + "\n")
    rate = data["offsets"] / data["seconds"] if data["seconds"] > 0 else 0
    lines = [f"scanned {data['groups']} groups, {data['offsets']} offsets from {data['source']} "
             f"in {data['seconds']:.1f}s ({rate:,.0f}/s)"]
    lines += [f"  {status:<11} {n:>9,}" for status, n in data["counts"].items()]
    lines.append("layouts: " + ", ".join(f"{k} {v:,}" for k, v in data["layouts"].items()))
    live = data["groups_with_live_zk_consumers"]
    if live:
        lines.append(f"groups with old consumers still registered: {len(live)} "
                     f"({', '.join(live[:10])}{' ...' if len(live) > 10 else ''})")
    lines += [f"snapshot: {data['snapshot']}", f"run={run} report={report}"]
    return Result("\n".join(lines), {**data, "report": str(report)})


def _scan(settings: Settings, state: StateDir, run: str) -> dict[str, Any]:
    """Scan ZooKeeper into the run's zk snapshot; what was found, as a dict."""
    from migrate.zk.scan import scan_to_parquet

    settings.require("zookeeper")
    source = f"{settings.zookeeper}{settings.path_template or settings.zk_root}"
    started = time.time()
    snapshot = state.zk_snapshot(run)
    stats = scan_to_parquet(settings, snapshot, {
        "run": run, "source": source, "layout": settings.layout, "semantics": settings.offset_semantics,
        "started": _iso(started)})
    return {
        "run": run, "command": "scan", "source": source, "snapshot": str(snapshot),
        "groups": len(stats.groups), "offsets": stats.offsets, "counts": dict(sorted(stats.statuses.items())),
        "layouts": dict(sorted(stats.layouts.items())), "groups_with_live_zk_consumers": sorted(stats.live_groups),
        "started": _iso(started), "seconds": round(time.time() - started, 3), "retried_reads": stats.retries,
    }


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def diff(settings: Settings) -> Result:
    """Scan, snapshot Kafka, diff on Spark and write the report; exit 3 when the plan has blockers. Never writes."""
    plan = _plan(settings, "diff")
    return Result(_plan_text(plan.summary, plan.files), _plan_data(plan), plan.exit_code)


@dataclass(frozen=True)
class Plan:
    """A computed plan and where its files are."""

    run: str
    summary: dict[str, Any]
    files: dict[str, Path]
    table: Any  # pyarrow.Table of PLAN_SCHEMA rows

    @property
    def exit_code(self) -> int:
        return EXIT_BLOCKERS if self.summary["blockers"] else EXIT_OK


def _plan(settings: Settings, command: str) -> Plan:
    """scan + Kafka snapshot + Spark diff + reports, for diff, migrate and verify."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from migrate.diff.offset_diff import Policy
    from migrate.diff.run import run_diff
    from migrate.diff.summary import build_summary
    from migrate.kafka.client import open_admin
    from migrate.kafka.snapshot import KafkaSnapshot
    from migrate.report.render import write_reports
    from migrate.zk.reader import Selection

    settings.require("zookeeper")
    settings.require("bootstrap_server")
    run, state = new_run_id(), StateDir(settings.state_dir)
    scanned = _scan(settings, state, run)
    zk_snapshot = Path(scanned["snapshot"])

    columns = pq.read_table(zk_snapshot, columns=["group", "topic"])
    groups = sorted(pc.unique(columns.column("group")).to_pylist())
    topics = sorted(t for t in pc.unique(columns.column("topic")).to_pylist() if t is not None)
    selection = Selection(settings.groups, settings.exclude_groups, settings.topics)
    admin = open_admin(settings)
    try:
        kafka = KafkaSnapshot(admin).write(state.kafka_snapshot(run), groups, topics, selection.topic)
    finally:
        admin.close()

    policy = Policy(settings.on_conflict, settings.out_of_range, settings.allow_live_zk_consumers)
    result = run_diff(zk_snapshot, kafka.path, policy, settings.spark_master)
    report = state.reports(run)
    inputs = {"zookeeper": settings.zookeeper, "zk_root": settings.path_template or settings.zk_root,
              "bootstrap_server": settings.bootstrap_server, "zk_snapshot": str(zk_snapshot),
              "kafka_snapshot": str(kafka.path), "scan_seconds": scanned["seconds"],
              "kafka_snapshot_seconds": round(kafka.seconds, 3)}
    summary = build_summary(run, command, settings, result, kafka, inputs)
    pq.write_table(result.plan, report / "plan.parquet")
    files = {"plan": report / "plan.parquet", **write_reports(report, summary, result.plan)}
    return Plan(run, summary, files, result.plan)


def _plan_text(summary: dict[str, Any], files: dict[str, Path]) -> str:
    """The summary table an operator reads on the terminal, then the report files and the run line."""
    from migrate.diff.schema import BLOCKERS

    lines = [f"{summary['offsets']:,} offsets in {summary['groups']:,} groups "
             f"(Spark {summary['spark']['master']}: start {summary['spark']['startup_seconds']:.1f}s, "
             f"diff {summary['spark']['diff_seconds']:.1f}s)"]
    lines += [f"  {name:<18} {n:>9,}{'  blocker' if name in BLOCKERS else ''}"
              for name, n in summary["counts"].items() if n]
    planned = summary["planned"]
    lines.append(f"planned: commit {planned['commit_offsets']:,} offsets in {planned['commit_groups']:,} groups")
    lines.append(f"blockers: {summary['blockers']:,}" + (" (see the report; exit 3)" if summary["blockers"] else ""))
    lines += [f"warning: {w}" for w in summary["warnings"]]
    lines += [f"{name}: {path}" for name, path in files.items() if name in ("markdown", "html", "reset_offsets")]
    lines.append(f"run={summary['run']} report={files['summary'].parent}")
    return "\n".join(lines)


def _plan_data(plan: Plan) -> dict[str, Any]:
    data = {k: v for k, v in plan.summary.items() if k != "per_group"}
    return {**data, "report": str(plan.files["summary"].parent), "files": {k: str(v) for k, v in plan.files.items()}}


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
