"""One function per CLI command, composing the library; each returns a `Result` or raises a MigrateError."""

from __future__ import annotations

import json
import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.errors import EXIT_BLOCKERS, EXIT_ERROR, EXIT_OK, MigrateError, NothingFound, StateDirError
from migrate.result import Result
from migrate.settings import RECORDED, Settings
from migrate.state import StateDir, iso, new_run_id

log = logging.getLogger(__name__)


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
        "started": iso(started)})
    return {
        "run": run, "command": "scan", "source": source, "snapshot": str(snapshot),
        "groups": len(stats.groups), "offsets": stats.offsets, "counts": dict(sorted(stats.statuses.items())),
        "layouts": dict(sorted(stats.layouts.items())), "groups_with_live_zk_consumers": sorted(stats.live_groups),
        "started": iso(started), "seconds": round(time.time() - started, 3), "retried_reads": stats.retries,
    }


def diff(settings: Settings) -> Result:
    """Scan, snapshot Kafka, diff on Spark and write the report; exit 3 when the plan has blockers. Never writes."""
    plan = _plan(settings, "diff")
    return Result(_plan_text(plan.summary, plan.files), _plan_data(plan), plan.exit_code)


@dataclass(frozen=True)
class Plan:
    """A computed plan and where its files are."""

    run: str
    summary: dict[str, Any]
    files: dict[str, Path]   # "plan" is plan.parquet, in PLAN_ORDER

    @property
    def exit_code(self) -> int:
        return EXIT_BLOCKERS if self.summary["blockers"] else EXIT_OK


def _plan(settings: Settings, command: str) -> Plan:
    """scan + Kafka snapshot + Spark diff + reports, for diff, migrate and verify."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from migrate.diff.offset_diff import Policy
    from migrate.diff.run import SparkStarter, run_diff
    from migrate.diff.summary import build_summary
    from migrate.kafka.client import open_admin
    from migrate.kafka.snapshot import KafkaSnapshot
    from migrate.diff.plan import plan_id
    from migrate.report.files import write_reports
    from migrate.zk.reader import Selection

    settings.require("zookeeper")
    settings.require("bootstrap_server")
    run, state = new_run_id(), StateDir(settings.state_dir)
    spark = SparkStarter(settings.spark_master)   # the JVM boots while both stores are read
    try:
        scanned = _scan(settings, state, run)
        if scanned["offsets"] == 0:   # checking nothing is never success
            raise NothingFound(command, scanned["source"], _selection_text(settings),
                               exit_code=EXIT_BLOCKERS if command == "verify" else EXIT_ERROR)
        zk_snapshot = Path(scanned["snapshot"])

        groups, topics = set(), set()
        with pq.ParquetFile(zk_snapshot) as snapshot:   # a batch at a time: the snapshot can be millions of rows
            for batch in snapshot.iter_batches(columns=["group", "topic"]):
                groups.update(pc.unique(batch.column("group")).to_pylist())
                topics.update(pc.unique(batch.column("topic")).to_pylist())
        groups, topics = sorted(groups), sorted(t for t in topics if t is not None)
        selection = Selection(settings.groups, settings.exclude_groups, settings.topics)
        admin = open_admin(settings)
        try:
            kafka = KafkaSnapshot(admin).write(state.kafka_snapshot(run), groups, topics, selection.topic)
        finally:
            admin.close()
    except BaseException:
        spark.stop()
        raise

    policy = Policy(settings.on_conflict, settings.out_of_range, settings.allow_live_zk_consumers,
                    zk_holds_last=settings.offset_semantics == "last" and not settings.no_zk_write)
    report = state.reports(run)
    result = run_diff(zk_snapshot, kafka.path, policy, settings.spark_master, report / "plan.parquet", spark)
    inputs = {"zookeeper": settings.zookeeper, "zk_root": settings.path_template or settings.zk_root,
              "bootstrap_server": settings.bootstrap_server, "zk_snapshot": str(zk_snapshot),
              "no_zk_write": settings.no_zk_write,   # it shapes the plan (--offset-semantics last)
              "kafka_snapshot": str(kafka.path), "scan_seconds": scanned["seconds"],
              "kafka_snapshot_seconds": round(kafka.seconds, 3)}
    summary = {**build_summary(run, command, settings, result, kafka, inputs),
               "plan_id": plan_id(run, result.plan)}   # what a change ticket quotes; `migrate --plan` checks it
    files = {"plan": result.plan, **write_reports(report, summary, result.plan)}
    return Plan(run, summary, files)


def _selection_text(settings: Settings) -> str:
    """The selection as the flags that made it, e.g. `--group billing.* --exclude-group .*-test`."""
    flags = [f"{flag} {p}" for flag, patterns in (("--group", settings.groups), ("--exclude-group",
             settings.exclude_groups), ("--topic", settings.topics)) for p in patterns]
    return " ".join(flags) if flags else "every group and topic"


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
    # The plan id sits before report=: scripts that take the report path as the line's tail still do.
    lines.append(f"run={summary['run']} plan={summary['plan_id']} report={files['summary'].parent}")
    return "\n".join(lines)


def _plan_data(plan: Plan) -> dict[str, Any]:
    data = {k: v for k, v in plan.summary.items() if k != "per_group"}
    return {**data, "report": str(plan.files["summary"].parent), "files": {k: str(v) for k, v in plan.files.items()}}


def migrate(settings: Settings) -> Result:
    """The plan of `diff`; with --execute, the dual commit group by group, journaled; --resume RUN_ID goes on."""
    if settings.resume:
        return _resume(settings)
    if settings.plan:
        return _reviewed(settings)
    plan = _plan(settings, "migrate")
    if not settings.execute:
        *lines, run_line = _plan_text(plan.summary, plan.files).split("\n")
        text = "\n".join([*lines, "dry run: nothing was written; add --execute to commit the plan", run_line])
        return Result(text, {**_plan_data(plan), "dry_run": True}, plan.exit_code)
    if settings.on_conflict == "fail" and plan.summary["counts"]["CONFLICT"]:
        raise MigrateError(f"--on-conflict fail: {plan.summary['counts']['CONFLICT']} CONFLICT row(s) "
                           f"(see {plan.files['markdown']}); nothing was written")
    from migrate.apply.journal import Journal
    from migrate.diff.plan import writer_digest

    groups, skipped = _journal_plan(plan)
    with Journal.open(settings.state_dir, writer=f"migrate --execute, run {plan.run}") as journal:
        journal.create_run(plan.run, "migrate", writer_digest(plan.files["plan"]), _settings_record(settings), groups,
                           skipped, report=str(plan.files["summary"].parent))
        return _execute(settings, journal, plan.run, list(groups), plan.summary["blockers"])


def _reviewed(settings: Settings) -> Result:
    """migrate --plan: the commit rows of a reviewed plan, as reviewed; no scan, no Spark. Dry run unless --execute.

    Raises PlanRefused for a plan altered since, made against other stores or policies, or too old.
    """
    import tempfile

    from migrate.apply.journal import Journal
    from migrate.errors import PlanRefused
    from migrate.diff.plan import PlannedByGroup, ReviewedPlan, groups_seen, writer_digest

    settings.require("zookeeper")
    settings.require("bootstrap_server")
    reviewed = ReviewedPlan.load(settings.plan, Path(settings.state_dir) / "reports")
    current = {**_settings_record(settings), "zk_root": settings.path_template or settings.zk_root}
    refusals = reviewed.refusals(current, settings.max_plan_age)
    if refusals:
        raise PlanRefused(reviewed.id, "; ".join(refusals) + "; nothing was written")
    counts = reviewed.summary["counts"]
    if settings.on_conflict == "fail" and counts.get("CONFLICT"):
        raise PlanRefused(reviewed.id, f"--on-conflict fail: {counts['CONFLICT']} CONFLICT row(s) "
                                       f"(see {reviewed.report / 'report.md'}); nothing was written")
    groups = PlannedByGroup(reviewed.file)
    planned = set(groups)
    skipped = {g["group"]: "nothing to commit: " + ", ".join(f"{k} {n}" for k, n in g["counts"].items())
               for g in reviewed.summary["per_group"] if g["group"] not in planned}
    seen = groups_seen(reviewed.file, planned)
    record = {**_settings_record(settings), "reviewed_plan": reviewed.id}
    run_id = new_run_id()
    log.info("plan %s: %d group(s) to write, as reviewed", reviewed.id, len(planned))
    if not settings.execute:
        # The real run's path on a throwaway journal: the same batches and prechecks, stopping at the first write.
        with tempfile.TemporaryDirectory(prefix="zk2kafka-dry-run-") as scratch, Journal.open(Path(scratch)) as journal:
            journal.create_run(run_id, "migrate", writer_digest(reviewed.file), record, groups, skipped,
                               report=str(reviewed.report))
            return _execute(settings, journal, run_id, list(groups), reviewed.summary["blockers"], seen, reviewed,
                            dry_run=True)
    with Journal.open(settings.state_dir, writer=f"migrate --execute --plan {reviewed.id}, run {run_id}") as journal:
        journal.create_run(run_id, "migrate", writer_digest(reviewed.file), record, groups, skipped,
                           report=str(reviewed.report))
        return _execute(settings, journal, run_id, list(groups), reviewed.summary["blockers"], seen, reviewed)


def _resume(settings: Settings) -> Result:
    """Go on with a journaled run: verified groups stay as they are, the rest are re-checked and finished."""
    from migrate.apply.journal import COMMITTED, FAILED, PARTIAL, PENDING, Journal
    from migrate.diff.plan import readable_writer_digest

    with Journal.open(settings.state_dir, writer=f"migrate --execute --resume {settings.resume}") as journal:
        run = journal.run(settings.resume)
        if run is None or run.kind != "migrate":
            raise MigrateError(f"no migrate run {settings.resume} in {journal.path}; `zk2kafka status` lists them")
        rolled_back = journal.rollback_of(run.run_id)
        if rolled_back is not None:
            # The rollback put its groups' before-values back: resuming would write them again over that.
            raise MigrateError(f"cannot resume {run.run_id}: it was rolled back by {rolled_back.run_id} "
                               f"({rolled_back.state}); start a new run to migrate again")
        changed = _changes(run.settings, _settings_record(settings))
        if changed:
            raise MigrateError(f"cannot resume {run.run_id}: the options changed since it began ({'; '.join(changed)})"
                               "; resume with the same options, or start a new run")
        plan_file = Path(run.report or "", "plan.parquet")
        if readable_writer_digest(plan_file) != run.plan_hash:
            raise MigrateError(f"cannot resume {run.run_id}: its plan {plan_file} is missing or was altered")
        todo = [g.name for g in journal.groups(run.run_id) if g.state in (PENDING, COMMITTED, FAILED, PARTIAL)]
        blockers = json.loads(Path(run.report, "summary.json").read_text())["blockers"]
        log.info("resuming %s: %d group(s) to finish", run.run_id, len(todo))
        seen = reviewed = None
        if run.settings.get("reviewed_plan"):   # a reviewed plan's groups are still checked against its review
            from migrate.diff.plan import ReviewedPlan, groups_seen

            seen = groups_seen(plan_file, set(todo))
            reviewed = ReviewedPlan.load(str(plan_file.parent), Path(settings.state_dir) / "reports")
        return _execute(settings, journal, run.run_id, todo, blockers, seen, reviewed)


def _execute(settings: Settings, journal, run_id: str, groups: list[str], blockers: int, seen=None, reviewed=None,
             dry_run: bool = False) -> Result:
    """The dual commit over `groups` of a journaled run, then the run's state and the exit code.

    `seen` and `reviewed`: a reviewed plan's groups as the diff saw them, and the plan (migrate --plan).
    `dry_run`: the same path, stopping before the first write (on a throwaway journal).
    """
    from migrate.apply.journal import DONE, INCOMPLETE, RUNNING
    from migrate.apply.batches import run_batches
    from migrate.apply.dual_commit import DualCommit
    from migrate.progress import Progress

    metadata = settings.metadata if settings.metadata is not None else f"zk2kafka migrate {run_id}"
    try:
        journal.set_run(run_id, RUNNING)
        # ZooKeeper is read even with --no-zk-write: a plan is committed only while its znodes are as planned.
        with _writers(settings, zk=True) as (kafka, zk):
            writer = DualCommit(journal, run_id, kafka, None if settings.no_zk_write else zk, metadata,
                                settings.offset_semantics, zk_reader=zk, seen=seen, dry_run=dry_run)
            with Progress("groups checked" if dry_run else "groups written", total=len(groups)) as progress:
                # Two batches in flight: one's reads and journal writes overlap the other's commits.
                outcomes, interrupted = run_batches(groups, writer.migrate, WRITE_BATCH, 2, progress)
        run = journal.run(run_id)
        finished = not interrupted and all(run.groups[s] == 0 for s in ("pending", "committed", "failed", "partial"))
        journal.set_run(run_id, DONE if finished else INCOMPLETE)
    except StateDirError as exc:
        # The journal could not record a step (a full disk): the step it missed is re-checked on resume.
        raise StateDirError(exc.path, exc.reason, resume=f"zk2kafka migrate --execute --resume {run_id}") from exc
    if dry_run:
        return _dry_run_result(reviewed, outcomes, interrupted, writer.moved, blockers)
    result = _run_result(journal.run(run_id), outcomes, interrupted, blockers)
    if reviewed is None:
        return result
    *lines, run_line = result.text.split("\n")
    run = journal.run(run_id)
    if writer.moved and not interrupted and run.groups["failed"] == len(writer.moved) and not any(
            run.groups[state] for state in ("pending", "committed", "partial")):
        # Only groups that moved since the review are left: a resume would refuse them again;
        # a fresh diff is what helps.
        lines = [line for line in lines if not line.startswith("incomplete:")]
    lines += _moved_lines(sorted(writer.moved), reviewed)
    return Result("\n".join([*lines, run_line.replace(" report=", f" plan={reviewed.id} report=", 1)]),
                  {**result.data, "plan_id": reviewed.id, "moved": sorted(writer.moved)}, result.exit_code)


_REGEX_META = re.compile(r"([.^$*+?{}()|\[\]\\])")


def _moved_lines(moved: list[str], reviewed) -> list[str]:
    """What to do about groups that moved since the review: a fresh diff of just those, reviewed, then its plan."""
    import shlex

    if not moved:
        return []
    # --group is a full-match regex: only its metacharacters are escaped, so the usual names read as they are.
    fresh = " ".join("--group " + shlex.quote(_REGEX_META.sub(r"\\\1", g)) for g in moved)
    return [f"moved since the review of {reviewed.id}: {len(moved):,} group(s), not written: "
            f"{', '.join(moved[:10])}{' ...' if len(moved) > 10 else ''}",
            f"  a fresh diff of just those (with the same connection options): `zk2kafka diff {fresh}`; "
            "review it, then `zk2kafka migrate --execute --plan <its run>`"]


def _dry_run_result(reviewed, outcomes: list, interrupted: bool, moved: set[str], blockers: int) -> Result:
    """migrate --plan without --execute: what would be written, what moved since the review; exit 3 if anything did."""
    from migrate.apply.dual_commit import WOULD_WRITE

    would = [o for o in outcomes if o.state == WOULD_WRITE]
    failed = {o.group: o.reason for o in outcomes if o.state != WOULD_WRITE}
    lines = [f"plan {reviewed.id}: would write {sum(o.offsets for o in would):,} offsets in {len(would):,} group(s) "
             f"as reviewed; {len(moved):,} group(s) moved since the review"]
    lines += [f"  would write: {o.group}: {o.offsets:,} offset(s)" for o in would][:20]
    lines += [f"  moved: {g}: {why}" for g, why in failed.items() if g in moved][:20]
    lines += [f"  not checked: {g}: {why}" for g, why in failed.items() if g not in moved][:20]
    lines += _moved_lines(sorted(moved), reviewed)
    if blockers:
        lines.append(f"the plan has {blockers:,} blocker row(s), left alone as reviewed "
                     f"(see {reviewed.report / 'report.md'})")
    lines.append("dry run: nothing was written; add --execute to write this plan")
    lines.append(f"run={reviewed.run} plan={reviewed.id} report={reviewed.report}")
    code = EXIT_ERROR if interrupted or len(failed) > len(moved) else (EXIT_BLOCKERS if moved or blockers else EXIT_OK)
    data = {"plan_id": reviewed.id, "run": reviewed.run, "report": str(reviewed.report), "dry_run": True,
            "would_write": {o.group: o.offsets for o in would}, "moved": {g: failed[g] for g in sorted(moved)},
            "unchecked": {g: why for g, why in failed.items() if g not in moved}, "interrupted": interrupted}
    return Result("\n".join(lines), data, code)


def _run_result(run, outcomes: list, interrupted: bool, blockers: int) -> Result:
    written = sum(o.offsets for o in outcomes)
    counts = ", ".join(f"{state} {n:,}" for state, n in run.groups.items() if n)
    done = "restored" if run.kind == "rollback" else "written"
    lines = [f"{run.kind} {run.run_id}: {written:,} offsets {done} this time; groups: {counts}"]
    lines += [f"  {o.state}: {o.group}: {o.reason}" for o in outcomes if o.state in ("failed", "partial")][:20]
    lines += [f"  unfinished: {o.group}: {o.reason}" for o in outcomes
              if o.reason and o.state not in ("failed", "partial")][:20]
    unfinished = run.state != "done"
    if unfinished:
        lines.append(("interrupted" if interrupted else "incomplete")
                     + f": `zk2kafka {'migrate --execute --resume' if run.kind == 'migrate' else 'rollback --execute'}"
                     f" {run.run_id if run.kind == 'migrate' else run.rolls_back}` goes on from here")
    elif blockers:
        lines.append(f"the plan has {blockers:,} blocker row(s) (see the report); exit 3")
    lines.append(f"run={run.run_id} report={run.report}")
    code = EXIT_ERROR if unfinished else (EXIT_BLOCKERS if blockers else EXIT_OK)
    data = {**run.to_json(), "written": written, "interrupted": interrupted,
            "failed": {o.group: o.reason for o in outcomes if o.state == "failed"},
            "partial": {o.group: o.reason for o in outcomes if o.state == "partial"}}
    return Result("\n".join(lines), data, code)


WRITE_BATCH = 250   # groups per batch of the dual commit


@contextmanager
def _writers(settings: Settings, zk: bool):
    """The two stores' writers, `--parallelism` commits in flight (plus room for the batches' reads)."""
    from migrate.kafka.client import open_admin
    from migrate.kafka.writer import KafkaOffsetWriter
    from migrate.zk.client import close, connect
    from migrate.zk.writer import ZkOffsetWriter

    admin = open_admin(settings, in_flight=2 * settings.parallelism + 8)   # two batches, and their reads
    client = connect(settings) if zk else None
    kafka = KafkaOffsetWriter(admin, in_flight=settings.parallelism)
    try:
        yield kafka, ZkOffsetWriter(client) if client else None
    finally:
        admin.close()
        if client is not None:
            close(client)


def _journal_plan(plan: Plan):
    """The plan's commit rows per group for the journal, and the groups left with nothing to commit (and why)."""
    from migrate.diff.plan import PlannedByGroup

    groups = PlannedByGroup(plan.files["plan"])
    planned = set(groups)
    skipped = {g["group"]: "nothing to commit: " + ", ".join(f"{k} {n}" for k, n in g["counts"].items())
               for g in plan.summary["per_group"] if g["group"] not in planned}
    return groups, skipped




def _settings_record(settings: Settings) -> dict[str, Any]:
    return {name: list(v) if isinstance(v := getattr(settings, name), tuple) else v for name in RECORDED}


def _changes(before: dict[str, Any], now: dict[str, Any], keys: tuple[str, ...] = RECORDED) -> list[str]:
    return [f"--{k.replace('_', '-')}: {before.get(k)!r} then, {now.get(k)!r} now"
            for k in keys if before.get(k) != now.get(k)]


def verify(settings: Settings) -> Result:
    """A fresh diff; exit 0 only when every selected ZooKeeper offset equals Kafka's (IN_SYNC)."""
    from migrate.diff.schema import IN_SYNC, KAFKA_ONLY

    if settings.run:
        return _verify_run(settings)
    plan = _plan(settings, "verify")
    counts = plan.summary["counts"]
    checked = plan.summary["offsets"] - counts[KAFKA_ONLY]
    mismatched = {k: n for k, n in counts.items() if n and k not in (IN_SYNC, KAFKA_ONLY)}
    lines = [f"verify: {counts[IN_SYNC]:,} of {checked:,} ZooKeeper offsets equal Kafka's"]
    lines += [f"  {k:<18} {n:>9,}" for k, n in mismatched.items()]
    lines.append("verified: every selected offset is IN_SYNC" if not mismatched
                 else f"mismatch: {sum(mismatched.values()):,} offset(s) differ; see {plan.files['markdown']} (exit 3)")
    lines.append(f"run={plan.run} report={plan.files['summary'].parent}")
    data = {**_plan_data(plan), "verified": not mismatched, "mismatched": mismatched}
    return Result("\n".join(lines), data, EXIT_BLOCKERS if mismatched else EXIT_OK)


def _verify_run(settings: Settings) -> Result:
    """verify --run RUN_ID: every offset that run wrote (its verified groups) still holds its value in both stores.

    Reads the journal and the stores, a batch of groups at a time; no scan, no Spark. Exit 3 on any
    difference, or when the run wrote nothing to check.
    """
    from migrate.apply.journal import SKIPPED, VERIFIED, Journal
    from migrate.apply.kafka_half import committed_offset
    from migrate.zk.writer import encode

    with Journal.open(settings.state_dir) as journal:
        run = journal.run(settings.run)
        if run is None or run.kind != "migrate":
            raise MigrateError(f"no migrate run {settings.run} in {journal.path}; `zk2kafka status` lists them")
        wrote_zk = not run.settings.get("no_zk_write")
        where = ("bootstrap_server", "zookeeper", "zk_root", "path_template") if wrote_zk else ("bootstrap_server",)
        elsewhere = _changes(run.settings, _settings_record(settings), where)
        if elsewhere:
            raise MigrateError(f"cannot verify {run.run_id}: it wrote to other stores than these "
                               f"({'; '.join(elsewhere)}); point the connection options at the ones it wrote")
        written = [g.name for g in journal.groups(run.run_id) if g.state == VERIFIED]
        semantics = run.settings.get("offset_semantics", "next")
        checked, differ = 0, []
        with _writers(settings, zk=wrote_zk) as (kafka, zk):
            for i in range(0, len(written), WRITE_BATCH):
                chunk = written[i:i + WRITE_BATCH]
                parts = journal.partitions_of(run.run_id, chunk)
                kafka_now = kafka.committed_many(chunk)
                zk_now = zk.read([p.zk_path for g in chunk for p in parts[g]]) if zk else {}
                for g in chunk:
                    answer = kafka_now[g]
                    for p in parts[g]:
                        checked += 1
                        held = None if isinstance(answer, Exception) else committed_offset(answer.get(p.key))
                        if held != p.offset:
                            differ.append(f"{g} {p.topic}-{p.partition}: Kafka holds {held}, the run wrote {p.offset}")
                        elif zk and zk_now[p.zk_path].value != encode(p.before_zk_value, p.offset, p.layout, semantics):
                            differ.append(f"{g} {p.zk_path}: ZooKeeper holds {zk_now[p.zk_path].value!r}, "
                                          f"not the run's value")
        rolled_back = journal.rollback_of(run.run_id)
    plan = run.settings.get("reviewed_plan")
    stores = "Kafka and ZooKeeper" if wrote_zk else "Kafka"
    lines = [f"verify of run {run.run_id}{f' (plan {plan})' if plan else ''}: {checked - len(differ):,} of "
             f"{checked:,} offsets it wrote in {len(written):,} group(s) still hold its values in {stores}"]
    lines += [f"  differs: {d}" for d in differ[:20]]
    others = {state: n for state, n in run.groups.items() if n and state not in (VERIFIED, SKIPPED)}
    if others:
        lines.append("groups the run did not write: " + ", ".join(f"{k} {n:,}" for k, n in others.items())
                     + f" (`zk2kafka status {run.run_id}` says why)")
    if rolled_back is not None:
        lines.append(f"the run was rolled back by {rolled_back.run_id} ({rolled_back.state})")
    if not checked:
        lines.append("nothing verified: the run wrote no offsets (exit 3)")
    elif differ:
        lines.append(f"mismatch: {len(differ):,} offset(s) no longer hold what the run wrote (exit 3)")
    else:
        lines.append("verified: every offset the run wrote holds its value")
    lines.append(f"run={run.run_id}{f' plan={plan}' if plan else ''} report={run.report}")
    ok = checked and not differ
    data = {**run.to_json(), "reviewed_plan": plan, "checked": checked, "differ": differ, "verified": bool(ok),
            "not_written": others}
    return Result("\n".join(lines), data, EXIT_OK if ok else EXIT_BLOCKERS)


def sync(settings: Settings) -> Result:
    """Follow ZooKeeper and mirror each offset change into Kafka until SIGINT/SIGTERM or --stop-after.

    Without --execute it only says what it would commit. With it, the run is journaled
    (kind sync) like migrate, so `status` shows it and `rollback` can undo it in Kafka.
    """
    import signal
    import threading

    from migrate.apply.journal import DONE, Journal
    from migrate.kafka.client import open_admin
    from migrate.kafka.compat import BrokerFeatures, group_states
    from migrate.kafka.retry import RetryPolicy
    from migrate.kafka.writer import KafkaOffsetWriter
    from migrate.apply.sync import Follower
    from migrate.zk.client import close, connect
    from migrate.zk.scan import make_reader

    settings.require("zookeeper")
    settings.require("bootstrap_server")
    run_id, state = new_run_id(), StateDir(settings.state_dir)
    report = state.reports(run_id)
    # The writers' lock first: a second writer stops before it connects to anything.
    journal = Journal.open(settings.state_dir, writer=f"sync --execute, run {run_id}") if settings.execute else None
    admin = open_admin(settings, in_flight=settings.parallelism + 4)
    client = connect(settings)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if journal is not None:
            record = {**_settings_record(settings), "no_zk_write": True}   # sync only reads ZooKeeper
            journal.create_run(run_id, "sync", "", record, {}, report=str(report))
        policy = RetryPolicy()

        features = BrokerFeatures.of(admin)

        def kafka_groups() -> dict[str, str | None]:
            # Before 2.6 ListGroups carries no state: a live group must not read as idle on old brokers.
            return group_states(admin, features, policy.call)

        def kafka_partitions(topics: list[str]) -> dict[str, set[int]]:
            # A topic Kafka lacks comes back with no partitions (the admin never asks to create it).
            return {t["name"]: {p["partition_index"] for p in t["partitions"]}
                    for t in policy.call("describe topics", lambda: admin.describe_topics(topics))}

        # As migrate: an explicit --metadata, even "", is what is written; the journal records it for later runs.
        metadata = settings.metadata if settings.metadata is not None else f"zk2kafka sync {run_id}"
        follower = Follower(client, make_reader(client, settings),
                            KafkaOffsetWriter(admin, policy, settings.parallelism),
                            kafka_groups, kafka_partitions, journal, run_id, metadata,
                            settings.rescan_every, settings.renew_every, report / "sync-status.json",
                            dry_run=not settings.execute)
        if settings.stop_after:
            timer = threading.Timer(settings.stop_after, stop.set)
            timer.daemon = True   # never what keeps the process alive
            timer.start()
        log.info("sync %s: following %s%s into %s%s; stop with Ctrl-C or SIGTERM", run_id, settings.zookeeper,
                 settings.zk_root, settings.bootstrap_server,
                 "" if settings.execute else " (dry run: nothing is written)")
        try:
            status = follower.run(stop)
        except KeyboardInterrupt:
            status = follower.status
        if journal is not None:
            journal.set_run(run_id, DONE)
    finally:
        stop.set()
        signal.signal(signal.SIGTERM, previous)
        admin.close()
        close(client)
        if journal is not None:
            journal.close()
    data = {"run": run_id, "kind": "sync", "dry_run": not settings.execute, "report": str(report),
            **status.to_json(follower.groups)}
    stopped = data["groups_stopped"]
    lines = [f"sync {run_id}: stopped after {time.time() - status.started:.0f}s; {status.offsets:,} offset change(s) "
             f"mirrored in {status.commits:,} commit(s), {status.renewals:,} renewal(s)"
             + ("" if settings.execute else " (dry run: nothing was written)"),
             f"groups synced: {len(data['groups_synced'])}; ready to switch: {len(data['groups_ready'])}; "
             f"stopped: {len(stopped)}"]
    lines += [f"  stopped: {g}: {why}" for g, why in stopped.items()][:20]
    unmirrored = data["groups_unmirrored"]
    if unmirrored:
        lines.append(f"groups with rows sync cannot mirror (never called ready): {len(unmirrored)}")
        lines += [f"  not mirrored: {g} {row}: {why}"
                  for g, rows in unmirrored.items() for row, why in rows.items()][:20]
    lines.append(f"run={run_id} report={report}")
    return Result("\n".join(lines), data)


def rollback(settings: Settings, run_id: str) -> Result:
    """Put back the values a run journaled before it wrote, in Kafka and ZooKeeper; dry run unless --execute."""
    from migrate.apply.journal import DONE, INCOMPLETE, RUNNING, VERIFIED, Journal
    from migrate.apply.batches import run_batches
    from migrate.apply.dual_commit import DualCommit
    from migrate.progress import Progress

    writer = f"rollback --execute {run_id}" if settings.execute else None   # a dry run only reads
    with Journal.open(settings.state_dir, writer=writer) as journal:
        original = journal.run(run_id)
        if original is None or original.kind not in ("migrate", "sync"):
            raise MigrateError(f"no migrate or sync run {run_id} in {journal.path}; `zk2kafka status` lists them")
        wrote_zk = not original.settings.get("no_zk_write")
        touched = [g.name for g in journal.groups(run_id) if g.before_recorded]
        offsets = sum(map(len, journal.partitions_of(run_id, touched).values()))
        if not settings.execute:
            text = (f"rollback of {run_id} would restore {offsets:,} offsets in {len(touched):,} groups "
                    f"({'Kafka and ZooKeeper' if wrote_zk else 'Kafka'}) to the values journaled before it wrote\n"
                    "dry run: nothing was written; add --execute to roll back")
            return Result(text, {"run": run_id, "groups": len(touched), "offsets": offsets, "dry_run": True})

        # The stores given now must be the ones the run wrote: restoring elsewhere would "succeed" at nothing.
        where = ("bootstrap_server", "zookeeper", "zk_root", "path_template") if wrote_zk else ("bootstrap_server",)
        elsewhere = _changes(original.settings, _settings_record(settings), where)
        if elsewhere:
            raise MigrateError(f"cannot roll back {run_id}: it wrote to other stores than these "
                               f"({'; '.join(elsewhere)}); point the connection options at the ones it wrote")
        previous = journal.rollback_of(run_id)
        if previous is not None and previous.state == DONE:
            # Its znodes now carry the rollback's versions: a second pass would only fail every group.
            raise MigrateError(f"run {run_id} was already rolled back by {previous.run_id}; nothing to do")
        # Both stores are reachable before anything is journaled.
        with _writers(settings, zk=wrote_zk) as (kafka, zk_writer):
            if previous is not None:
                rollback_id = previous.run_id  # an interrupted rollback goes on
            else:
                rollback_id = new_run_id()
                journal.create_run(rollback_id, "rollback", original.plan_hash, original.settings,
                                   {g: [] for g in touched}, rolls_back=run_id, report=original.report)
            todo = [g.name for g in journal.groups(rollback_id) if g.state != VERIFIED]
            journal.set_run(rollback_id, RUNNING)
            # The run's own semantics: they decide which znode bytes are the ones it wrote.
            writer = DualCommit(journal, rollback_id, kafka, zk_writer, "", original.settings["offset_semantics"])
            with Progress("groups rolled back", total=len(todo)) as progress:
                outcomes, interrupted = run_batches(todo, lambda gs: [writer.rollback(g, run_id) for g in gs],
                                                    1, settings.parallelism, progress)
        run = journal.run(rollback_id)
        journal.set_run(rollback_id, DONE if not interrupted and run.groups[VERIFIED] == len(touched) else INCOMPLETE)
        return _run_result(journal.run(rollback_id), outcomes, interrupted, 0)


def status(settings: Settings, run_id: str | None = None) -> Result:
    """Runs in the journal, or one run's groups by state with the reasons of those that failed."""
    from migrate.apply.journal import FAILED, PARTIAL, Journal

    if not (Path(settings.state_dir) / "journal.sqlite").exists():
        return Result(f"no runs yet: {settings.state_dir}/journal.sqlite does not exist", {"runs": []})
    with Journal.open(settings.state_dir) as journal:
        if run_id is None:
            runs = journal.runs()
            lines = [f"{'run':<24} {'kind':<9} {'state':<11} {'offsets':>9}  groups"]
            lines += [f"{r.run_id:<24} {r.kind:<9} {r.state:<11} {r.offsets:>9,}  "
                      + ", ".join(f"{s} {n:,}" for s, n in r.groups.items() if n)
                      + (f"  (rolls back {r.rolls_back})" if r.rolls_back else "") for r in runs]
            return Result("\n".join(lines), {"runs": [r.to_json() for r in runs]})
        run = journal.run(run_id)
        if run is None:
            raise MigrateError(f"no run {run_id} in {journal.path}; `zk2kafka status` lists them")
        failed = [g for g in journal.groups(run_id) if g.state in (FAILED, PARTIAL)]
        lines = [f"{run.kind} {run.run_id}: {run.state}; created {run.to_json()['created']}, "
                 f"updated {run.to_json()['updated']}",
                 "groups: " + ", ".join(f"{s} {n:,}" for s, n in run.groups.items() if n),
                 f"offsets: {run.offsets:,}; report: {run.report}"
                 + (f"; executed the reviewed plan {run.settings['reviewed_plan']}"
                    if run.settings.get("reviewed_plan") else "")]
        lines += [f"  {g.state}: {g.name}: {g.reason}" for g in failed]
        return Result("\n".join(lines), {**run.to_json(),
                                         "failed": {g.name: g.reason for g in failed if g.state == FAILED},
                                         "partial": {g.name: g.reason for g in failed if g.state == PARTIAL}})


def run(command: str, settings: Settings, args: dict[str, Any]) -> Result:
    """Dispatch a parsed command line to its function."""
    if command == "sandbox":
        from migrate.sandbox.commands import sandbox_down, sandbox_seed, sandbox_status, sandbox_up

        action = args["action"]
        if action == "up":
            return sandbox_up(settings, kraft=args.get("kraft", False), kafka_version=args.get("kafka_version"))
        return {"down": sandbox_down, "status": sandbox_status, "seed": sandbox_seed}[action](settings)
    if command == "rollback":
        return rollback(settings, args["run_id"])
    if command == "status":
        return status(settings, args.get("run_id"))
    return {"scan": scan, "diff": diff, "migrate": migrate, "verify": verify, "sync": sync}[command](settings)
