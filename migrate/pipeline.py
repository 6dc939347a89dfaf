"""The pipeline up to a plan: scan ZooKeeper, snapshot Kafka, diff the two on Spark (`diff/`).

scan, diff, migrate and verify compute what they report here; the command layer then has the
report stage write it (migrate/report/files.py). Nothing here writes to a store.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow.compute as pc
import pyarrow.parquet as pq

from migrate import group_map, stores
from migrate.diff.plan import BLOCKED_SHOWN, Plan, commits, plan_batches, plan_id
from migrate.diff.schema import CONFLICT, IN_SYNC, KAFKA_ONLY, blocked_groups
from migrate.errors import EXIT_BLOCKERS, EXIT_ERROR, ConfigError, MigrateError, NothingFound
from migrate.journal.journal import journaled_renames
from migrate.kafka.clocks import Margin
from migrate.kafka.client import open_admin
from migrate.kafka.offsets_log.kept import Kept
from migrate.kafka.offset_syncs import (OffsetSyncsReader, SyncsInfo, find_target_alias,
                                        remote_name, syncs_topic, upstream_name)
from migrate.kafka.snapshot import KafkaSnapshot
from migrate.settings import Settings
from migrate.state import StateDir, iso, new_run_id
from migrate.zk.datadir import nothing_found_hint, read_data_dir, snapshot_metadata
from migrate.zk.reader import Selection
from migrate.zk.scan import scan_to_parquet
from migrate.zk.side import DATA_DIR, Origin, ZooKeeperSide, chosen, describe, too_old

log = logging.getLogger(__name__)


def scan(settings: Settings) -> dict[str, Any]:
    """The scan command: the run's zk snapshot and its counts, and the folder of its report."""
    run, state = new_run_id(), StateDir(settings.state_dir)
    return {**_scan(settings, state, run), "report": str(state.reports(run))}


def found_offsets(settings: Settings, scanned: dict[str, Any]) -> None:
    """Raise NothingFound when a scan found no offset: checking nothing is never success."""
    if scanned["offsets"] == 0:
        raise NothingFound("scan", scanned["source"], Selection.of(settings).text,
                           hint=nothing_found_hint(scanned["zookeeper_data"])
                           if "zookeeper_data" in scanned else None)


def _scan(settings: Settings, state: StateDir, run: str) -> dict[str, Any]:
    """Scan ZooKeeper into the run's zk snapshot; what was found, as a dict."""
    if settings.zookeeper_data is not None:
        def scan_copy(private: Settings, found: dict[str, Any]) -> dict[str, Any]:
            origin = Origin(DATA_DIR, str(settings.zookeeper_data), iso(time.time()),
                            f"scan {run}", None, settings.path_template or settings.zk_root,
                            semantics=settings.offset_semantics)
            return {**_scan_store(private, state, run, found["source"], found,
                                  origin.metadata()), "zookeeper_side": describe(origin)}
        return read_data_dir(settings, scan_copy)
    settings.require("zookeeper")
    identity = stores.reach(settings.connection, kafka=False)   # recorded with the snapshot
    return ZooKeeperSide().read(settings, state, run, "scan", _live(settings, state, run),
                                identity.to_json())


def _live(settings: Settings, state: StateDir, run: str) -> Callable[[dict[str, str]],
                                                                     dict[str, Any]]:
    """The scan of the live ensemble, given the metadata saying where it was read."""
    source = f"{settings.zookeeper}{settings.path_template or settings.zk_root}"
    return lambda side: _scan_store(settings, state, run, source, side=side)


def _scan_store(settings: Settings, state: StateDir, run: str, source: str,
                data_dir: dict[str, Any] | None = None,
                side: dict[str, str] | None = None) -> dict[str, Any]:
    """Scan the ZooKeeper `settings` reach (an ensemble, or the private server on a copy of a data
    directory, described by `data_dir`) into the run's zk snapshot; `side`: where it was read
    (migrate/zk/side.py), for the snapshot's metadata."""
    started = time.time()
    snapshot = state.zk_snapshot(run)
    stats = scan_to_parquet(settings, snapshot, {
        "run": run, "source": source, "layout": settings.layout,
        "semantics": settings.offset_semantics, "started": iso(started),
        **({} if data_dir is None else snapshot_metadata(data_dir)), **(side or {})})
    found = {} if data_dir is None else {"zookeeper_data": data_dir}
    return {
        "run": run, "command": "scan", "source": source, "snapshot": str(snapshot),
        "groups": len(stats.groups), "offsets": stats.offsets,
        "counts": dict(sorted(stats.statuses.items())),
        "layouts": dict(sorted(stats.layouts.items())),
        "groups_with_live_zk_consumers": sorted(stats.live_groups),
        "started": iso(started), "seconds": round(time.time() - started, 3),
        "retried_reads": stats.retries, **found,
    }


def plan(settings: Settings, command: str) -> Plan:
    """scan + Kafka snapshot + Spark diff, for diff, migrate and verify: the plan, its summary,
    and plan.parquet in the run's report folder (the report's files are written beside it).

    Raises NothingFound when the scan found no offset: checking nothing is never success.
    """
    # pyspark loads here, not with the module: scan and the journal's commands never start Spark.
    from migrate.diff.offset_diff import Policy
    from migrate.diff.run import SparkStarter, run_diff
    from migrate.diff.summary import build_summary
    from migrate.diff.translate import Translation

    # The ZooKeeper side and the group mapping are chosen here, once: the stages after them read
    # the side's snapshot and are given old -> new names.
    side = chosen(settings, command)
    if not (side.live or side.dual_commit or settings.no_zk_write):
        # --dual-commit from the environment or a file shapes no verify: from a snapshot, the
        # plan is Kafka's alone, as without it.
        settings = dataclasses.replace(settings, no_zk_write=True, rewrite_zk_offsets=False)
    mapping = group_map.chosen(settings)
    settings.require("bootstrap_server")
    run, state = new_run_id(), StateDir(settings.state_dir)
    # Both stores answer before Spark starts: an unreachable one is a short failure, with no JVM
    # started for nothing. Then Spark boots while the stores are read.
    reached = stores.reach(settings.connection, zookeeper=side.live or side.dual_commit)
    if side.dual_commit:
        _dual_commit_serves(side, reached, settings, command)
    spark = SparkStarter(settings.spark_master, settings.cache_dir)
    try:
        scanned = side.read(settings, state, run, command, _live(settings, state, run),
                            reached.to_json())
        if scanned["offsets"] == 0:
            raise NothingFound(command, scanned["source"], Selection.of(settings).text,
                               exit_code=EXIT_BLOCKERS if command == "verify" else EXIT_ERROR)
        zk_snapshot = Path(scanned["snapshot"])
        names = _names(zk_snapshot)
        # Refused here, with ZooKeeper read and before Kafka is: two groups meeting in one, or a
        # group the journal shows renamed judged by its old name.
        group_map.refuse_unmapped(names.groups, mapping, journaled_renames(settings.state_dir))
        renamed = mapping.resolve(names.groups)
        selection = Selection.of(settings)
        topics, topic_selected = names.topics, selection.topic
        syncs = None
        if settings.translate_via_mm2:
            # The target's snapshot is of the copies' names; the syncs name the source's topics.
            topics, topic_selected = _remote_topics(settings, names.topics, selection)
            syncs = _read_offset_syncs(settings, state.kafka_snapshot(run).with_name(
                f"offset-syncs-{run}.parquet"), names.topics)
        admin = open_admin(settings.connection)
        try:
            # The diff says when offsets already in Kafka expire; the other commands do not
            # spend a read of __consumer_offsets on it.
            kept = Kept(state.root)   # member commits seen, kept (offsets_log/kept.py)
            kafka = KafkaSnapshot(admin, connection=settings.connection, kept=kept).write(
                state.kafka_snapshot(run), [renamed.get(g, g) for g in names.groups], topics,
                topic_selected, commit_clocks=command == "diff", registered=reached.registered)
        finally:
            admin.close()
    except BaseException:
        spark.stop()
        raise

    margin = Margin(settings.clock_margin, kafka.lead)
    policy = Policy(settings.on_conflict, settings.out_of_range, settings.allow_live_zk_consumers,
                    zk_holds_last=settings.offset_semantics == "last" and not settings.no_zk_write,
                    writes_zk=not settings.no_zk_write, rewrite_zk=settings.rewrite_zk_offsets,
                    clock_margin=margin.seconds,
                    own_metadata=() if settings.metadata is None else (settings.metadata,))
    report = state.reports(run)
    translation = None if syncs is None else Translation(
        settings.translate_via_mm2, settings.replication_policy, syncs.path)
    result = run_diff(zk_snapshot, kafka.path, policy, settings.spark_master,
                      report / "plan.parquet", spark, translation, renamed,
                      shared_dir=settings.spark_shared_dir)
    for group in result.per_group:
        if group["group"] in renamed:
            group["kafka_group"] = renamed[group["group"]]
    read = scanned["zookeeper_side"]
    inputs = {"zookeeper": read["zookeeper"], "zk_root": read["zk_root"],
              "bootstrap_server": settings.bootstrap_server,
              # From a snapshot, the ZooKeeper identity is the one recorded when it was read.
              "stores": {**(read.get("stores") or {}), **{
                  k: v for k, v in reached.to_json().items() if k == "kafka_cluster_id"}}
              if not (side.live or side.dual_commit) else reached.to_json(),
              "zookeeper_side": read,
              "zk_snapshot": str(zk_snapshot),
              "no_zk_write": settings.no_zk_write,   # it shapes the plan (--offset-semantics last)
              "kafka_snapshot": str(kafka.path), "scan_seconds": scanned["seconds"],
              "kafka_snapshot_seconds": round(kafka.seconds, 3)}
    if side.dual_commit:
        inputs["dual_commit"] = True   # a snapshot's plan that writes ZooKeeper: its run checks
    if mapping:
        # The rules as given and what they made of the selected groups: the plan's kafka_group
        # column holds the same, so its hash covers it.
        inputs["group_map"] = {"rules": mapping.to_json(), "flags": mapping.flags(),
                               "renamed": renamed}
    if syncs is not None:
        inputs["translation"] = {
            "source_alias": settings.translate_via_mm2,
            "mm2_target_alias": syncs.alias,
            "replication_policy": settings.replication_policy, "syncs_topic": syncs.topic,
            "offset_syncs_bootstrap_server": settings.offset_syncs_bootstrap_server,
            "offset_syncs_snapshot": str(syncs.path), "syncs": syncs.syncs,
            "synced_partitions": syncs.partitions, "skipped_records": syncs.skipped,
            "offset_syncs_seconds": syncs.seconds}
    policies = {"on_conflict": settings.on_conflict, "out_of_range": settings.out_of_range,
                "offset_semantics": settings.offset_semantics,
                "allow_live_zk_consumers": settings.allow_live_zk_consumers,
                "rewrite_zk_offsets": settings.rewrite_zk_offsets,
                "clock_margin": settings.clock_margin}
    summary = {**build_summary(run, command, result, kafka, inputs, selection, policies,
                               settings.spark_master),
               # What a change ticket quotes; `migrate --plan` checks it.
               "plan_id": plan_id(run, result.plan),
               # The clock margin the takeover rule used, and the lead it was widened by.
               "clocks": margin.to_json()}
    if translation is not None:
        summary["redelivery"] = _redelivery(result.plan)
    return Plan(run, summary, {"plan": result.plan})


def _dual_commit_serves(side: ZooKeeperSide, now: stores.Stores, settings: Settings,
                        command: str) -> None:
    """Refuse a snapshot's dual commit (--dual-commit) where the ensemble reached now (`now`) is
    not the one the snapshot was read from (ConfigError), or, for a run that writes at once
    (migrate), where the snapshot is older than --max-plan-age (MigrateError)."""
    origin = side.origin
    differs = stores.same_clusters(
        stores.Stores.from_json(origin.stores), now,
        {"zookeeper": origin.zookeeper, "bootstrap_server": settings.bootstrap_server},
        settings.connection, f"the snapshot {side.snapshot}")
    if differs:
        raise ConfigError(f"--zk-snapshot {settings.zk_snapshot} --dual-commit: --zookeeper "
                          f"{settings.zookeeper} is not the ensemble the snapshot was read from "
                          f"({'; '.join(differs)}): the dual commit writes the znodes it read; "
                          "give that ensemble, or leave out --dual-commit to write Kafka alone")
    old = too_old(describe(origin), settings.max_plan_age) if command == "migrate" else None
    if old:
        raise MigrateError(f"--zk-snapshot {settings.zk_snapshot} --dual-commit: {old}; "
                           "nothing was written")


def _remote_topics(settings: Settings, topics: list[str],
                   selection: Selection) -> tuple[list[str], Callable[[str], bool]]:
    """The target's names of the copies of `topics`, and the selection as it reads the target's
    names (the copies of selected source topics)."""
    alias, policy = settings.translate_via_mm2, settings.replication_policy

    def selected(remote: str) -> bool:
        upstream = upstream_name(remote, alias, policy)
        return upstream is not None and selection.topic(upstream)

    return [remote_name(t, alias, policy) for t in topics], selected


def _read_offset_syncs(settings: Settings, path: Path, topics: list[str]) -> SyncsInfo:
    """MM2's offset syncs of `topics` into `path`; raises OffsetSyncsUnavailable."""
    options = {**settings.kafka_options(),
               "bootstrap_servers": settings.offset_syncs_bootstrap_server.split(",")}
    alias = settings.mm2_target_alias
    if alias is None:
        alias = find_target_alias(options)
        log.info("offset syncs: %s holds those of one MirrorMaker 2 target, %s",
                 settings.offset_syncs_bootstrap_server, alias)
    topic = syncs_topic(alias)
    info = OffsetSyncsReader(options, topic).write(path, set(topics))
    log.info("offset syncs: %d from %s on %s in %.1fs (%d records skipped)", info.syncs, topic,
             settings.offset_syncs_bootstrap_server, info.seconds, info.skipped)
    return info


def _redelivery(plan_file: Path) -> dict[str, int]:
    """Over a translated plan's commits: how many messages the groups may read a second time at
    most, in all and on the widest partition."""
    total, widest = 0, 0
    for batch in commits(plan_file, ["redelivery_window"]):
        windows = batch.column("redelivery_window")
        total += pc.sum(windows).as_py() or 0
        widest = max(widest, pc.max(windows).as_py() or 0)
    return {"reread_at_most": total, "widest_window": widest}


class Names(NamedTuple):
    """The groups and topics a zk snapshot holds: what the Kafka snapshot reads."""

    groups: list[str]
    topics: list[str]


def _names(zk_snapshot: Path) -> Names:
    """The groups and topics of a zk snapshot, sorted."""
    groups, topics = set(), set()
    # A batch at a time: the snapshot can be millions of rows.
    with pq.ParquetFile(zk_snapshot) as snapshot:
        for batch in snapshot.iter_batches(columns=["group", "topic"]):
            groups.update(pc.unique(batch.column("group")).to_pylist())
            topics.update(pc.unique(batch.column("topic")).to_pylist())
    return Names(sorted(groups), sorted(t for t in topics if t is not None))


def plan_data(plan: Plan) -> dict[str, Any]:
    """A computed plan as diff and migrate print it (`--json`): its summary without the per-group
    table, the groups with blocker rows (why, in words), and where the report and its files are."""
    data = {k: v for k, v in plan.summary.items() if k != "per_group"}
    renamed = (data["inputs"].get("group_map") or {}).get("renamed") or {}
    # per_group is in order of most blockers first: the groups a terminal lists first.
    blocked = blocked_groups(plan.summary["per_group"], BLOCKED_SHOWN)
    return {**data, "blocked": {group_map.renamed_text(g, renamed): why
                                for g, why in blocked.items()},
            "report": str(plan.files["summary"].parent),
            "files": {k: str(v) for k, v in plan.files.items()}}


def verify(computed: Plan) -> dict[str, Any]:
    """A fresh plan's data, and whether every selected ZooKeeper offset equals Kafka's (IN_SYNC);
    where they differ, whether Kafka is ahead (a consumer moved on past the migrated offset) or
    behind (rewound below it)."""
    counts = computed.summary["counts"]
    mismatched = {k: n for k, n in counts.items() if n and k not in (IN_SYNC, KAFKA_ONLY)}
    ahead = behind = 0
    for batch in plan_batches(computed.files["plan"], ["status", "zk_minus_kafka"]):
        differ = batch.filter(pc.equal(batch.column("status"), CONFLICT)).column("zk_minus_kafka")
        ahead += pc.sum(pc.less(differ, 0)).as_py() or 0
        behind += pc.sum(pc.greater(differ, 0)).as_py() or 0
    return {**plan_data(computed), "verified": not mismatched, "mismatched": mismatched,
            "kafka_ahead": ahead, "kafka_behind": behind}
