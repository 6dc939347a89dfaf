"""`zk2kafka ready-for-kraft`: before each step of KIP-866 that cannot be undone, is anything kept
in ZooKeeper still to be moved? Reads both stores and writes neither.

It reads every offset under the root (with the configured layout; the standard one covers
`offsets/` and Kafka 1.1.0's `offset/`), searches the rest of the ensemble for other offsets
trees (migrate/zk/ensemble.py), watches the selected groups for `--quiet-for`, reads them again,
then snapshots Kafka for those groups and the ones found elsewhere, judges each group (rules.py)
and what the verdict covers (coverage.py: groups the selection left out, trees elsewhere, what
--leave-behind names). The command layer renders it. The run's evidence stays in the state
dir, so that the proof of what was moved outlives ZooKeeper: the final ZooKeeper read
(snapshots/zk-<run>.parquet), the Kafka snapshot it was compared with
(snapshots/kafka-<run>.parquet), and the verdict (reports/<run>/summary.json, report.md).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from kafka.errors import KafkaError
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from migrate.errors import EXIT_BLOCKERS, MigrateError, NothingFound
from migrate.journal.authorship import Authorship, named_run
from migrate.journal.journal import Journal, journaled_renames
from migrate.kafka.offsets_log.kept import Kept
from migrate.kafka.offsets_log import OffsetsLog
from migrate.kafka.clocks import Margin
from migrate.kafka.client import fetch_committed, open_admin
from migrate.kafka.compat import BrokerFeatures, describe_cluster
from migrate.kafka.retry import RetryPolicy
from migrate.kafka.snapshot import (ASSIGNED, GROUP, IDLE_STATES, OFFSET, PARTITION, REFUSED,
                                    KafkaSnapshot)
from migrate.durations import exact_duration
from migrate.options import flag
from migrate.ready.coverage import LeftBehind, blocking, elsewhere, not_checked, summary
from migrate.ready.evidence import (READ_BUDGET, Reading, agreed, follow, groups_found, lead, mark,
                                   with_log)
from migrate import group_map
from migrate.ready.expiry import HeldGroup, expiring
from migrate.ready.own import own_differences
from migrate.ready.rules import Evidence, KafkaGroup, judge
from migrate.ready.watch import COMMIT_INTERVAL, WriteWatch, short_watch
from migrate.settings import Settings
from migrate.state import StateDir, iso, new_run_id
from migrate.zk.brokers import registrations
from migrate.zk.clock import NOT_PROBED, probe
from migrate.zk.client import close, connect
from migrate.zk.ensemble import bare, search
from migrate.zk.quiet import Stamp, moved_within, seconds
from migrate.zk.reader import SCHEMA, Selection, ZkOffsetReader
from migrate.zk.scan import ReaderOptions, make_reader
from migrate.zk.side import ENSEMBLE, Origin, refuse_snapshot

log = logging.getLogger(__name__)
SELECTION = ("groups", "exclude_groups", "topics")


def ready_for_kraft(settings: Settings) -> dict[str, Any]:
    """Judge every selected group under the root; the verdict as the command prints it.

    Raises NothingFound (exit 3) when there is no offset at all: nothing checked is not ready.
    """
    refuse_snapshot(settings, "ready-for-kraft")
    settings.require("zookeeper")
    settings.require("bootstrap_server")
    mapping = group_map.chosen(settings)   # the file read, and the rules checked, before any store
    run, state = new_run_id(), StateDir(settings.state_dir)
    source = f"{settings.zookeeper}{settings.path_template or settings.zk_root}"
    # Both stores reached before the watch: an unreachable Kafka fails now, not after it.
    admin = open_admin(settings.connection)
    try:
        return _check(settings, admin, run, state, source, mapping)
    finally:
        admin.close()


def _check(settings: Settings, admin, run: str, state: StateDir, source: str,
           mapping: group_map.GroupMap) -> dict[str, Any]:
    left = LeftBehind(settings.leave_behind)
    if settings.quiet_for < COMMIT_INTERVAL:
        log.warning("ready-for-kraft: %s", short_watch(settings.quiet_for))
    client = connect(settings.connection)
    try:
        options = ReaderOptions.of(settings)
        reader = make_reader(client, options)
        # Every group under the root is read: those the selection leaves out are named, not
        # passed over in silence.
        everything = make_reader(client, replace(options, selection=Selection()))
        under_root = everything.groups()
        rows = _read(everything, under_root)
        first = [r for r in rows if _selected(options.selection, r)]
        outside = [r for r in rows if not _selected(options.selection, r)]
        if not first:
            raise NothingFound("ready-for-kraft", source, Selection.of(settings).text,
                               exit_code=EXIT_BLOCKERS)
        group_map.refuse_unmapped({r["group"] for r in first}, mapping,
                                  journaled_renames(settings.state_dir))
        _, chroot = bare(settings.connection)
        checked_root = chroot + reader.root   # on the bare ensemble, as --leave-behind reads it
        searched = search(settings.connection, checked_root, settings.ensemble_max_znodes,
                          settings.ensemble_max_time)
        log.info("ready-for-kraft %s: searched the ensemble %s from / in %.1fs: %d znodes listed, "
                 "%d other offsets tree(s)%s", run, searched.hosts, searched.seconds,
                 searched.listed, len(searched.trees),
                 f"; {searched.cut_short}" if searched.cut_short else "")
        watch = WriteWatch(client, group_of=lambda path: _group_of(reader.root, path))
        offsets_log = OffsetsLog(admin, connection=settings.connection)
        unreadable = follow(offsets_log, mapping, {r["group"] for r in first},
                            groups_found(searched))
        started = time.time()
        armed = watch.arm([r["path"] for r in first if r["mzxid"] is not None],
                          _directories(reader, first))
        if unreadable is None:
            unreadable = mark(offsets_log)   # a commit past here in __consumer_offsets: during it
        log.info("ready-for-kraft %s: watching %d znodes of %d groups under %s for writes for "
                 "%s (--quiet-for)", run, armed, len({r["group"] for r in first}), source,
                 exact_duration(settings.quiet_for))
        # __consumer_offsets is read while the watch waits; what the watch adds, after it. (Not
        # while the watches are armed too: on two cores that slowed both.)
        early = Reading(offsets_log, READ_BUDGET) if unreadable is None else None
        watch.wait(settings.quiet_for)
        ended = time.time()
        groups = reader.groups()   # a group created during the watch is judged too
        final = _read(reader, groups)
        read_done = time.time()
        liveness = _liveness(client, reader, groups)
        registered = registrations(client, _cluster_id(admin))
        probed = NOT_PROBED if settings.no_clock_probe else probe(client)
    finally:
        close(client)
    moved = _moved(first, final, watch.seen, since=min(started, ended - settings.quiet_for))
    zk_snapshot = state.zk_snapshot(run)
    side = Origin(ENSEMBLE, source, iso(ended), f"ready-for-kraft {run}", settings.zookeeper,
                  reader.root, semantics=settings.offset_semantics).metadata()   # for --zk-snapshot
    pq.write_table(pa.Table.from_pylist(final, schema=SCHEMA.with_metadata(
        {f"zk2kafka.{k}": v for k, v in side.items()})), zk_snapshot)
    found_rows = [r for tree in searched.trees for r in tree.rows]
    # Refused here, with ZooKeeper read and before Kafka is: two groups meeting in one.
    renamed = mapping.resolve(groups)
    kafka, partitions, refused, kafka_snapshot, idle = _kafka(
        admin, state, run, sorted({renamed.get(g, g) for g in groups}
                                  | {r["group"] for r in found_rows}), final + found_rows,
        {(renamed.get(r["group"], r["group"]), r["topic"], r["partition"]) for r in final}
        | {(r["group"], r["topic"], r["partition"]) for r in found_rows})
    # A renamed group is judged by the Kafka group it maps to: moved when that one holds its
    # offsets, taken over by that one's consumers.
    judged = {**kafka, **{old: kafka.get(new, KafkaGroup()) for old, new in renamed.items()}}
    # One read of __consumer_offsets: who committed the values a takeover is judged by, and
    # when; when the idle groups' offsets expire; how far the brokers' clocks are from ours.
    clocks_unknown = unreadable or (early.finish(kafka) if early is not None else None)
    if clocks_unknown is None:
        clocks_unknown = agreed(kafka, offsets_log, lambda moved: fetch_committed(
            admin, RetryPolicy(), moved).found)
    with_log(kafka, offsets_log, clocks_unknown)
    clocks = lead(offsets_log.clocks, registered, final, read_done, probed)
    margin = Margin(settings.clock_margin, clocks)
    journal = (Journal.open(settings.state_dir)
               if (settings.state_dir / "journal.sqlite").exists() else None)
    try:
        wrote = _zk2kafka_wrote(journal)
        evidence = Evidence(watching=True, margin=margin.seconds,
                            own=Authorship(journal, metadata="").custom_metadata(),
                            kept=Kept(settings.state_dir))
        verdicts = judge(final, judged, partitions, moved, liveness, wrote, evidence, refused)
        found = elsewhere(searched, kafka, partitions, wrote, _cluster_id(admin), left, evidence,
                          refused)
        evidence.kept.save()
        own = own_differences(journal, verdicts, final, judged)
    finally:
        if journal is not None:
            journal.close()
    kept = [v.group for v in verdicts if not v.ready and left.group(v.group, checked_root)]
    data = {"run": run, "command": "ready-for-kraft", "source": source,
            "selection": Selection.of(settings).text, "bootstrap_server": settings.bootstrap_server,
            "watched": {"from": iso(started), "to": iso(ended), "quiet_for": settings.quiet_for,
                        "shown": exact_duration(settings.quiet_for)},
            "short_watch": (short_watch(settings.quiet_for)
                            if settings.quiet_for < COMMIT_INTERVAL else None),
            "groups": len(verdicts), "offsets": sum(v.offsets for v in verdicts),
            "under_root": len(set(under_root) | set(groups)),
            "selected_by": _provenance(settings, SELECTION),
            "not_checked": not_checked(outside, checked_root, left),
            "left_behind": {"patterns": _provenance(settings, ("leave_behind",)),
                            "groups": kept},
            "not_ready": [v.group for v in verdicts if not v.ready and v.group not in kept],
            "own_differences": own,
            "verdicts": [v.to_json() for v in verdicts],
            "clocks": margin.to_json(),
            "ensemble": summary(searched, found, left),
            "evidence": {"zookeeper": str(zk_snapshot), "kafka": str(kafka_snapshot)}}
    if mapping:
        data["group_map"] = {"rules": mapping.to_json(), "flags": mapping.flags(),
                             "renamed": renamed}
    data["blocking"] = blocking(data)
    data["ready"] = not data["blocking"] and bool(verdicts)
    data["expiry"] = _expiry(kafka_snapshot, zk_snapshot, idle, offsets_log.groups,
                             clocks_unknown,
                             {v.group for v in verdicts if v.foreign or v.taken_over}, renamed)
    return data


def _selected(selection: Selection, row: dict) -> bool:
    return selection.group(row["group"]) and selection.topic(row["topic"])


def _provenance(settings: Settings, names: tuple[str, ...]) -> list[dict[str, str]]:
    """Each pattern of options `names` with its flag and where it came from: flag, environment,
    config file."""
    return [{"option": flag(name), "pattern": pattern,
             "from": settings.sources.get(name, "flag")}
            for name in names for pattern in getattr(settings, name)]


def _cluster_id(admin) -> str | None:
    """This cluster's id, to tell its chroot from another cluster's; None when it cannot be
    read (then no chroot is taken for another cluster's)."""
    try:
        return describe_cluster(admin, BrokerFeatures.of(admin)).cluster_id
    except (KafkaError, MigrateError, KeyError):
        return None


def _read(reader: ZkOffsetReader, groups: list[str]) -> list[dict]:
    """Every offset row of `groups`, with mtime kept as the stat's milliseconds."""
    rows = [row for batch in reader.batches(groups) for row in batch.to_pylist()]
    for row in rows:
        row["mtime_s"] = seconds(row["mtime"])
    return rows


def _directories(reader: ZkOffsetReader, rows: list[dict]) -> list[str]:
    """The directories whose children a writer changes: the root (new groups), each group's
    ids/ (registrations), and each offset znode's topic and layout directories (new partitions
    and topics)."""
    found = {reader.root or "/"}
    for row in rows:
        parent = row["path"].rsplit("/", 1)[0]
        found.update((parent, parent.rsplit("/", 1)[0]))
        if reader.liveness:
            found.add(f"{reader.root}/{row['group']}/ids")
    return sorted(found)


def _moved(first: list[dict], final: list[dict], seen: dict[str, float], since: float):
    """The offset znodes of the final read written during the watch: by mtime, by what the watch
    saw, and by a zxid the first read did not have (changed, or created since)."""
    before = {r["path"]: r["mzxid"] for r in first}
    seen = dict(seen)
    for row in final:
        if row["mzxid"] is not None and before.get(row["path"]) != row["mzxid"]:
            seen[row["path"]] = max(seen.get(row["path"], since), row["mtime_s"] or since)
    stamps = [Stamp(r["path"], r["mtime_s"]) for r in final]
    return moved_within(stamps, since, seen)


def _liveness(client: KazooClient, reader: ZkOffsetReader,
              groups: list[str]) -> dict[str, tuple[int, int]]:
    """Per group: old consumers registered under ids/ and partitions owned under owners/ (only
    the old high-level consumer's layouts have them). Every group, with offsets or not."""
    if not reader.liveness:
        return {}
    root = reader.root
    ids = {g: client.get_children_async(f"{root}/{g}/ids") for g in groups}
    owners = {g: client.get_children_async(f"{root}/{g}/owners") for g in groups}
    consumers = {g: len(_children(request)) for g, request in ids.items()}
    topics = {(g, t): client.get_children_async(f"{root}/{g}/owners/{t}")
              for g, request in owners.items() for t in _children(request)}
    owned = dict.fromkeys(groups, 0)
    for (g, _), request in topics.items():
        owned[g] += len(_children(request))
    return {g: (consumers[g], owned[g]) for g in groups if consumers[g] or owned[g]}


def _children(request) -> list[str]:
    try:
        return request.get(timeout=30)
    except KazooException:   # no such directory: nobody registered
        return []


def _kafka(admin, state: StateDir, run: str, groups: list[str], rows: list[dict],
           judged: set[tuple[str, str, int]]):
    """Kafka's side of `groups` (snapshotted into the state dir): per group (its state, members,
    the partitions assigned to them, its offsets of the `judged` (group, topic, partition) that
    ZooKeeper holds), its every partition, the snapshot's path, and the groups it holds offsets
    of with no member."""
    path = state.kafka_snapshot(run)
    # Its commit times are read with the expiry's clocks, in one read (_check).
    KafkaSnapshot(admin).write(path, groups, {r["topic"] for r in rows if r["topic"] is not None},
                               commit_times=False, offsets_log=False)
    # A million offsets are picked and counted as Arrow columns, never all as Python rows.
    table = pq.read_table(path, columns=["kind", "group", "topic", "partition",
                                         "committed_offset", "metadata", "group_state",
                                         "protocol_type", "members", "error", "member"])
    kind = table["kind"]
    kafka: dict[str, KafkaGroup] = {}
    for row in table.filter(pc.equal(kind, GROUP)).to_pylist():
        held = kafka.setdefault(row["group"], KafkaGroup())
        held.state, held.refused = row["group_state"], row["error"]
        held.members, held.protocol_type = row["members"] or 0, row["protocol_type"]
    described = dict(kafka)   # the groups Kafka described
    for row in table.filter(pc.equal(kind, ASSIGNED)).to_pylist():
        kafka.setdefault(row["group"], KafkaGroup()).assigned[(row["topic"], row["partition"])] = \
            row["member"] or ""
    partitions = {(r["topic"], r["partition"])
                  for r in table.filter(pc.equal(kind, PARTITION)).to_pylist()}
    refused = {r["topic"]: r["error"] for r in table.filter(pc.equal(kind, REFUSED)).to_pylist()}
    offsets = table.filter(pc.equal(kind, OFFSET)).select(
        ["group", "topic", "partition", "committed_offset", "metadata"])
    asked = pa.table({name: pa.array(column, offsets.schema.field(name).type)
                      for name, column in zip(("group", "topic", "partition"),
                                              zip(*judged) if judged else ((), (), ()))})
    for row in offsets.join(asked, ["group", "topic", "partition"],
                            join_type="left semi").to_pylist():
        kafka.setdefault(row["group"], KafkaGroup()).offsets[row["topic"], row["partition"]] = (
            row["committed_offset"], row["metadata"])
    counted = offsets.group_by("group").aggregate([("partition", "count")]).to_pydict()
    idle = [HeldGroup(g, described[g].state, described[g].protocol_type, n)
            for g, n in sorted(zip(counted["group"], counted["partition_count"]))
            if g in described and described[g].state in IDLE_STATES]
    return kafka, partitions, refused, path, idle


def _expiry(kafka_snapshot, zk_snapshot, held: list[HeldGroup], clocks, why: str | None,
            foreign: set[str], renamed: dict[str, str]) -> dict[str, Any]:
    """When Kafka deletes the offsets of the groups it holds with no member (ready/expiry.py),
    from the Kafka snapshot and each such group's clocks in __consumer_offsets. Information,
    never a blocker. `foreign`: the ZooKeeper groups whose Kafka values zk2kafka did not write
    (sync refuses to renew them)."""
    meta = pq.read_schema(kafka_snapshot).metadata or {}
    minutes = meta.get(b"offsets_retention_minutes", b"").decode()
    found = expiring(held, clocks, why, int(minutes) if minutes else None,
                     meta.get(b"broker_version", b"").decode() or None, time.time(),
                     str(zk_snapshot))
    refused = {renamed.get(g, g) for g in foreign}
    for g in found["groups"]:
        g["sync_refuses"] = g["group"] in refused
    return found


def _zk2kafka_wrote(journal: Journal | None):
    """Whether zk2kafka wrote a value Kafka holds: its metadata names a zk2kafka run (any state
    dir's: a value moved by another run is still no new consumer's), or a run of this state dir's
    journal committed exactly it with a custom --metadata."""
    authorship = Authorship(journal, metadata="")

    def wrote(group: str, key, offset: int, metadata: str | None) -> bool:
        if named_run(metadata) is not None:
            return True
        return journal is not None and not authorship.foreign(group, {key: (offset, metadata)},
                                                               [key], {})
    return wrote


def _group_of(root: str, path: str) -> str | None:
    rest = path[len(root):].strip("/") if path.startswith(root) else ""
    return rest.split("/", 1)[0] or None
