"""One function per CLI command: it composes the stages, gets the command's data, and renders its
text from that data (migrate/report/text.py); each returns a `Result` or raises a MigrateError."""

from __future__ import annotations

from typing import Any

from migrate.errors import EXIT_BLOCKERS, EXIT_OK, ConfigError
from migrate.heap import collecting_rarely
from migrate.options import MAP_COMMANDS, flag
from migrate.report import text
from migrate.result import Result
from migrate.settings import Settings
from migrate.write import results

SERVICES = ("sync", "renew")   # they run for days and pace their own collections (heap.py)

# Each command imports the stages it runs, in its function: the diff's pipeline, sync's metrics and
# the sandbox would slow every start of a command that uses none of them (`migrate --execute
# --plan`, `verify --run`, `status`; docs/performance.md).


def scan(settings: Settings) -> Result:
    """Read every selected ZooKeeper offset, from a live ensemble or a copy of a server's data
    directory (--zookeeper-data), into snapshots/zk-<run>.parquet, with counts in reports/<run>/."""
    from migrate import pipeline
    from migrate.report import files

    data = pipeline.scan(settings)
    files.write_scan(data)
    pipeline.found_offsets(settings, data)
    return Result(text.scan(data), data)


def diff(settings: Settings) -> Result:
    """Scan, snapshot Kafka, diff on Spark and write the report; exit 3 when the plan has blockers.

    Never writes.
    """
    from migrate import pipeline
    from migrate.report import files

    plan = files.reported(pipeline.plan(settings, "diff"))
    data = pipeline.plan_data(plan)
    return Result(text.plan(data), data, plan.exit_code)


def migrate(settings: Settings) -> Result:
    """The plan of `diff`; with --execute, the dual commit group by group, journaled.

    --resume RUN_ID goes on with a run; --plan PLAN writes a reviewed plan as it was reviewed.
    Without --execute, each is the same path up to the first write.
    """
    from migrate.write import execute

    if settings.resume:
        from migrate.write.resume import resume

        data = resume(settings)
        if not settings.execute:
            return Result(text.resume_dry_run(data), data, results.dry_run_exit_code(data))
        return Result(text.run(data), data, results.exit_code(data))
    if settings.plan:
        data = execute.reviewed(settings)
        if data.get("all_applied"):
            return Result(text.already_applied(data), data, results.applied_exit_code(data))
        if not settings.execute:
            return Result(text.reviewed_dry_run(data), data, results.dry_run_exit_code(data))
        return Result(text.run(data), data, results.exit_code(data))
    from migrate import pipeline
    from migrate.report import files

    plan = files.reported(pipeline.plan(settings, "migrate"))
    if not settings.execute:
        data = {**pipeline.plan_data(plan), "dry_run": True}
        return Result(text.migrate_dry_run(data), data, plan.exit_code)
    data = execute.fresh(settings, plan)
    return Result(text.run(data), data, results.exit_code(data))


def verify(settings: Settings) -> Result:
    """A fresh diff: exit 0 only when every selected ZooKeeper offset equals Kafka's (IN_SYNC).

    verify --run RUN_ID: exit 0 only when every offset that run wrote still holds its value.
    """
    if settings.run:
        from migrate.write.applied import verify_run

        data = verify_run(settings)
        return Result(text.verify_run(data), data, EXIT_OK if data["verified"] else EXIT_BLOCKERS)
    from migrate import pipeline
    from migrate.report import files

    data = pipeline.verify(files.reported(pipeline.plan(settings, "verify")))
    return Result(text.verify(data), data, EXIT_OK if data["verified"] else EXIT_BLOCKERS)


def sync(settings: Settings) -> Result:
    """Follow ZooKeeper, mirroring each offset change into Kafka, until SIGTERM or --stop-after.

    Without --execute it only says what it would commit; with it, the run is journaled (kind sync).
    """
    from migrate.sync.command import follow

    data = follow(settings)
    return Result(text.sync(data), data)


def renew(settings: Settings) -> Result:
    """Re-commit the offsets zk2kafka wrote, each exactly as Kafka holds it, from Kafka and the
    journal alone (no ZooKeeper): once, or every --renew-every until SIGTERM or --stop-after.

    Without --execute one pass says what it would renew, and nothing is written.
    """
    from migrate.renew.command import renew as renew_offsets
    from migrate.report.renew import text as renew_text

    data = renew_offsets(settings)
    return Result(renew_text(data), data)


def ready_for_kraft(settings: Settings) -> Result:
    """Read-only: exit 0 only when every ZooKeeper offset of the ensemble for this cluster is in
    Kafka (or its group taken over, or left behind on purpose with --leave-behind), no old
    consumer is registered and nothing wrote an offset znode for --quiet-for; else 3."""
    from migrate.ready.check import ready_for_kraft as check
    from migrate.report import ready
    from migrate.state import StateDir

    data = check(settings)
    data["report"] = str(ready.write_report(StateDir(settings.state_dir).reports(data["run"]),
                                            data))
    return Result(ready.text(data), data, EXIT_OK if data["ready"] else EXIT_BLOCKERS)


def rollback(settings: Settings, run_id: str) -> Result:
    """Put back the values a run journaled before it wrote, in Kafka and ZooKeeper.

    A dry run unless --execute.
    """
    from migrate.renew.command import not_a_renewal
    from migrate.write.rollback import rollback as rollback_run

    not_a_renewal(settings.state_dir, run_id)   # a renewal moved nothing: said in its own words
    data = rollback_run(settings, run_id)
    if not settings.execute:
        return Result(text.rollback_dry_run(data), data)
    return Result(text.run(data), data, results.exit_code(data))


def status(settings: Settings, run_id: str | None = None) -> Result:
    """Runs in the journal, or one run's groups by state with the reasons of those that failed."""
    from migrate.write.status import status as run_status

    data = run_status(settings.state_dir, run_id)
    return Result(text.status(data), data)


def run(command: str, settings: Settings, args: dict[str, Any]) -> Result:
    """Dispatch a parsed command line to its function."""
    _mapping_applies(command, settings)
    if command in SERVICES:
        return _dispatch(command, settings, args)
    with collecting_rarely():
        return _dispatch(command, settings, args)


def _dispatch(command: str, settings: Settings, args: dict[str, Any]) -> Result:
    if command == "sandbox":
        return _sandbox(settings, args)
    if command == "rollback":
        return rollback(settings, args["run_id"])
    if command == "status":
        return status(settings, args.get("run_id"))
    commands = {"scan": scan, "diff": diff, "migrate": migrate, "verify": verify, "sync": sync,
                "renew": renew, "ready-for-kraft": ready_for_kraft}
    return commands[command](settings)


def _sandbox(settings: Settings, args: dict[str, Any]) -> Result:
    """Dispatch a `sandbox` action to its function."""
    from migrate.sandbox.commands import (sandbox_down, sandbox_kraft_migrate,
                                          sandbox_new_consumer, sandbox_old_consumer_commit,
                                          sandbox_seed, sandbox_status,
                                          sandbox_stop_old_consumers, sandbox_tool, sandbox_up,
                                          sandbox_v0_client)

    action = args["action"]
    if action == "up":
        return sandbox_up(settings, kraft=args.get("kraft", False),
                          kafka_version=args.get("kafka_version"),
                          zookeeper_heap=args.get("zookeeper_heap"),
                          broker_heap=args.get("broker_heap"))
    if action == "seed":
        return sandbox_seed(settings, args["seed_groups"], args["seed_partitions"])
    if action == "kraft-migrate":
        return sandbox_kraft_migrate(settings, args["keep_zookeeper"], args["kraft_phase"])
    if action == "old-consumer-commit":
        return sandbox_old_consumer_commit(settings, args["partition"], args["offset"])
    if action == "v0-client":
        return sandbox_v0_client(settings, args["v0_action"], args["partition"],
                                 args["offset"], args["every"])
    if action.startswith("kafka-"):
        return sandbox_tool(settings, action, args["tool_args"])
    actions = {"down": sandbox_down, "status": sandbox_status,
               "stop-old-consumers": sandbox_stop_old_consumers,
               "new-consumer": sandbox_new_consumer}
    return actions[action](settings)


def _mapping_applies(command: str, settings: Settings) -> None:
    """A group mapping (perhaps from the environment or the --config file) is refused where it
    would not be applied: a command that writes or judges each group under its own name would
    go on as if the rename were not meant."""
    given = [name for name in ("map_group", "map_group_file") if name in settings.given]
    if not given or command in ("scan", "status", "sandbox"):
        return
    # renew takes each run's mapping from its journal, as verify --run and --resume do.
    journaled = settings.run or settings.resume or command == "renew"
    if command in MAP_COMMANDS and not journaled:
        return
    where = "; ".join(f"{flag(name)} from {settings.sources.get(name, 'flag')}" for name in given)
    if journaled or command == "rollback":
        raise ConfigError(f"{where}: a run's group mapping is the one its journal recorded, which "
                          f"{command} takes from there: leave the mapping out")
    raise ConfigError(f"{where}: a group mapping is taken by diff, migrate, verify, "
                      "ready-for-kraft and sync; "
                      f"{command} takes each group under its own name: leave the mapping out")
