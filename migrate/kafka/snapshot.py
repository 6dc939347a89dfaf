"""KafkaSnapshot: what Kafka holds for the selected groups, in a handful of batched requests.

It reads only.

One Parquet file, six kinds of rows (column `kind`):
- `group`: every selected group, with its Kafka state, protocol type and member
  count (state null when Kafka has no such group), for either rebalance protocol (members.py:
  a KIP-848 group's from ConsumerGroupDescribe);
- `assigned`: each partition assigned to a member of a live group (topic, partition, member);
- `offset`: every committed offset of those groups (OffsetFetch, one request per
  coordinator for many groups);
- `partition`: every partition of the topics involved, with its log-start and
  log-end offsets (ListOffsets, one request per leader);
- `refused`: each topic involved that zk2kafka may not Describe (TOPIC_AUTHORIZATION_FAILED), with
  the permission to grant in `error`: not gone, only not shown;
- `commit`: for each committed offset of a group holding a value that names no zk2kafka run, the
  record of `__consumer_offsets` that wrote the newest value read (offsets_log/): the offset it
  committed (`committed_offset`), when (`commit_ms`) and who made it (`commit_by`, `commit_who`:
  the takeover rule's words, migrate/kafka/takeover.py), when asked for.
The broker's `offsets.retention.minutes` (or why it is unknown), the cluster id, the broker's
release (from its ApiVersions answer) and the clocks the read of `__consumer_offsets` measured
(`clocks`, migrate/kafka/clocks.py) ride in the file's metadata. What is asked
of the broker depends on the API versions it announces (see `compat`).
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from migrate.batches import chunks
from migrate.connection import Connection
from migrate.errors import KafkaUnavailable
from migrate.kafka import compat, members
from migrate.kafka.client import fetch_committed
from migrate.kafka.clocks import UNMEASURED, Lead
from migrate.kafka.log_bounds import log_bounds
from migrate.kafka.offsets_log.kept import Kept
from migrate.kafka.offsets_log.snapshot_rows import COMMIT as COMMIT   # kinds
from migrate.kafka.offsets_log.snapshot_rows import COMMIT_COLUMNS, commit_rows, read_log
from migrate.kafka.retry import RetryPolicy
from migrate.kafka.values import named_run

log = logging.getLogger(__name__)
T = TypeVar("T")

GROUP, OFFSET, PARTITION, ASSIGNED = "group", "offset", "partition", "assigned"
REFUSED = "refused"
# Metadata's answer for a topic the principal may not Describe (Kafka never says whether it exists).
TOPIC_AUTHORIZATION_FAILED = 29
KAFKA_SCHEMA = pa.schema([
    ("kind", pa.string()), ("group", pa.string()),
    ("topic", pa.string()), ("partition", pa.int32()),
    ("committed_offset", pa.int64()), ("metadata", pa.string()),
    ("group_state", pa.string()), ("protocol_type", pa.string()), ("members", pa.int32()),
    ("log_start", pa.int64()), ("log_end", pa.int64()), ("leader", pa.int32()),
    ("error", pa.string()),  # why a group or partition could not be read fully
    ("commit_ms", pa.int64()),   # `commit` rows: the commit timestamp __consumer_offsets keeps
    ("commit_by", pa.string()),  # `commit` rows: takeover.MEMBER, OUTSIDE, ... (its writers)
    ("commit_who", pa.string()),  # `commit` rows: the rule's words for who made the commit
    ("member", pa.string()),      # `assigned` rows: the member holding the partition
])
# Groups in these states have no members; any other state means live consumers.
IDLE_STATES = members.IDLE_STATES
GROUP_CHUNK = 1000      # groups per OffsetFetch / DescribeGroups round
PARTITION_CHUNK = 20000  # partitions per ListOffsets round


def not_authorized(topic: str) -> str:
    """Why a topic Kafka would not describe is neither moved nor gone, and what to grant."""
    return (f"zk2kafka may not describe topic {topic} (TOPIC_AUTHORIZATION_FAILED): whether it "
            f"exists is not shown; grant its principal Describe and Read on the topic "
            f"(kafka-acls.sh --add --allow-principal User:<principal> --operation Describe "
            f"--operation Read --topic {topic})")


@dataclass(frozen=True)
class SnapshotInfo:
    """What the snapshot holds, for the summary."""

    path: Path
    groups_in_kafka: int
    active_groups: int
    committed_offsets: int
    partitions: int
    missing_topics: int
    retention_minutes: int | None
    cluster_id: str | None
    seconds: float
    # e.g. "2.8": the release line its ApiVersions answer implies
    broker_version: str | None = None
    retention_unknown: str | None = None  # why retention_minutes is None
    # the release's default, when the release is known
    default_retention_minutes: int | None = None
    # Empty consumer groups (2.1+): when each became Empty (ms since the epoch, from
    # __consumer_offsets), and why some or all could not be told.
    empty_since: dict[str, int] = field(default_factory=dict)
    empty_since_unknown: str | None = None
    # Groups with no member that expire by commit time, when asked for: each group's distinct
    # (commit ms, expire ms or None) pairs (one commit request sets one time for all its
    # partitions, so a group has few), and why some or all could not be told; None: not read.
    commit_clocks: dict[str, list[tuple[int, int | None]]] | None = None
    commit_clocks_unknown: str | None = None
    # How far Kafka's clock leads ZooKeeper's, as far as the read of __consumer_offsets measured
    lead: Lead = UNMEASURED


class _Retention(NamedTuple):
    """offsets.retention.minutes of a live broker, why it is unknown, and the cluster id."""

    minutes: int | None
    why_unknown: str | None
    cluster_id: str | None


# The columns of an `offset` row, in the order write gives them
OFFSET_COLUMNS = ("group", "topic", "partition", "committed_offset", "metadata")


def _table(schema: pa.Schema, kind: str, columns: Sequence[str], rows: list[tuple]) -> pa.Table:
    """Rows of one kind as a table of `schema`, built column by column (a million rows as dicts
    took some 2 s to convert), the columns they do not give null."""
    given = {"kind": [kind] * len(rows), **dict(zip(columns, zip(*rows)))}
    return pa.Table.from_pydict(
        {f.name: given.get(f.name) or pa.nulls(len(rows), f.type) for f in schema}, schema=schema)


class KafkaSnapshot:
    """Reads group state, committed offsets and log bounds for given groups and topics."""

    def __init__(self, admin: KafkaAdminClient, policy: RetryPolicy | None = None,
                 connection: Connection | None = None, kept: Kept | None = None):
        self.admin = admin
        self.kept = kept   # the member commits the state dir keeps (offsets_log/kept.py)
        self.connection = connection   # a large read of __consumer_offsets split over processes
        self.policy = policy or RetryPolicy()
        self.features = compat.BrokerFeatures.of(admin)

    def write(self, path: Path, groups: Sequence[str], topics: Iterable[str],
              topic_selected: Callable[[str], bool] = lambda topic: True,
              commit_clocks: bool = False, commit_times: bool = True,
              registered: Sequence = (), offsets_log: bool = True) -> SnapshotInfo:
        """Snapshot `groups` and the partitions of `topics` into `path`, plus the selected topics
        those groups committed to.

        `commit_clocks`: also read when the offsets of the groups with no member that expire by
        commit time were committed (a read of __consumer_offsets; the diff asks, to say when).
        The commit times of the groups holding a value that names no zk2kafka run are read
        in the same read, as `commit` rows, unless `commit_times` is False (a caller that reads
        __consumer_offsets itself): a takeover is judged by them. `registered`: the brokers'
        registrations in ZooKeeper (migrate/zk/brokers.py), which bound their clocks too.
        `offsets_log`: False for a caller that reads __consumer_offsets for all of it itself
        (ready-for-kraft): then nothing of it is read here.

        Committed offsets are written a round of groups at a time: a million of them are never
        all in memory.
        """
        started = time.monotonic()
        wanted = set(groups)
        every_group = self._call("list groups",
                                 lambda: compat.list_groups(self.admin, self.features))
        listed = {g["group_id"]: dict(g) for g in every_group if g["group_id"] in wanted}
        if compat.states_in_list(self.features):
            live = self._members(sorted(g for g, info in listed.items()
                                        if info.get("group_state") not in IDLE_STATES), listed)
        else:
            # ListGroups before v4 (Kafka 2.6) has no state: DescribeGroups tells it for every
            # listed group.
            live = self._members(sorted(listed), listed)
        active = sum(1 for g, m in live.items()
                     if m.count or listed[g].get("group_state") not in IDLE_STATES)
        retention = self._retention_and_cluster()
        meta = {"zk2kafka.snapshot": "kafka", "cluster_id": retention.cluster_id or "",
                "offsets_retention_minutes":
                    "" if retention.minutes is None else str(retention.minutes),
                "offsets_retention_unknown": retention.why_unknown or "",
                "broker_version": self.features.release,
                "broker_version_source": compat.HOW_VERSION_IS_KNOWN}
        schema = KAFKA_SCHEMA.with_metadata(meta)
        path.parent.mkdir(parents=True, exist_ok=True)
        committed, offset_errors, all_topics = 0, {}, set(topics)
        unexplained: set[str] = set()   # groups holding a value that names no zk2kafka run
        with pq.ParquetWriter(path, schema) as out:
            for chunk in chunks(sorted(listed), GROUP_CHUNK):
                found, errors = self._committed(chunk)
                offset_errors.update(errors)
                rows = [(group, topic, partition, offset, metadata)
                        for group, offsets in found.items()
                        for (topic, partition), (offset, metadata) in offsets.items()
                        if topic_selected(topic)]
                out.write_table(_table(schema, OFFSET, OFFSET_COLUMNS, rows))
                committed += len(rows)
                all_topics.update(row[1] for row in rows)
                if commit_times:
                    unexplained.update(row[0] for row in rows if named_run(row[4]) is None)
            read = read_log(self.admin, self.features, listed if offsets_log else {},
                            unexplained, commit_clocks, evidence=commit_times,
                            registered=registered, connection=self.connection)
            rows_of = commit_rows(read, self.kept)
            while rows := list(itertools.islice(rows_of, PARTITION_CHUNK)):
                out.write_table(_table(schema, COMMIT, COMMIT_COLUMNS, rows))
            if self.kept is not None:
                self.kept.save()
            out.add_key_value_metadata({"empty_since": json.dumps(read.empty_since),
                                        "empty_since_unknown": read.empty_since_unknown or "",
                                        "clocks": json.dumps(read.lead.to_json(0.0))})

            rows = []
            for group in groups:
                info, found = listed.get(group), live.get(group)
                rows.append({"kind": GROUP, "group": group,
                             "group_state": info.get("group_state") if info else None,
                             "protocol_type": info.get("protocol_type") if info else None,
                             "members": found.count if info and found else 0,
                             "error": offset_errors.get(group)})
                rows += [{"kind": ASSIGNED, "group": group, "topic": topic, "partition": p,
                          "member": member}
                         for (topic, p), member in sorted(found.assigned.items()
                                                          if info and found else ())]
            partitions, missing = self._partitions(sorted(all_topics))
            out.write_table(pa.Table.from_pylist(rows + partitions, schema=schema))
        refused = sorted(r["topic"] for r in partitions if r["kind"] == REFUSED)
        if refused:
            log.warning("kafka snapshot: zk2kafka may not describe %d topic(s) (%s): their offsets "
                        "are blocked, not taken for gone", len(refused), ", ".join(refused[:5]))
        info = SnapshotInfo(
            path=path, groups_in_kafka=len(listed), active_groups=active,
            committed_offsets=committed, partitions=len(partitions) - len(refused),
            missing_topics=missing,
            retention_minutes=retention.minutes, cluster_id=retention.cluster_id,
            seconds=time.monotonic() - started,
            broker_version=self.features.release if self.features.version else None,
            retention_unknown=retention.why_unknown,
            default_retention_minutes=self.features.default_retention_minutes,
            empty_since=read.empty_since, empty_since_unknown=read.empty_since_unknown,
            commit_clocks=read.commit_clocks if commit_clocks else None,
            commit_clocks_unknown=read.commit_clocks_unknown if commit_clocks else None,
            lead=read.lead)
        log.info("kafka snapshot: %d of %d groups known to Kafka (%d active), "
                 "%d committed offsets, %d partitions, %d missing topics in %.1fs "
                 "(broker Kafka %s)", info.groups_in_kafka, len(groups), info.active_groups,
                 info.committed_offsets, info.partitions, missing, info.seconds,
                 self.features.release)
        return info

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return self.policy.call(what, fn)
        except KafkaError as exc:
            raise KafkaUnavailable(f"{what}: {exc}") from exc

    def _members(self, groups: list[str], listed: dict[str, dict]) -> dict[str, members.Members]:
        """Members of each group in `groups` and the partitions assigned to them (DescribeGroups,
        or ConsumerGroupDescribe for a KIP-848 group; batched per coordinator).

        Where ListGroups gave no state (before v4) or the classic one of a KIP-848 group, each
        group's `group_state` in `listed` is set from the answer.
        """
        out: dict[str, members.Members] = {}
        types = {g: info.get("group_type") for g, info in listed.items()}
        for chunk in chunks(groups, GROUP_CHUNK):
            out.update(self._call("describe groups", lambda c=chunk: members.describe(
                self.admin, self.features, c, types)))
        for g, found in out.items():
            if g in listed and (listed[g].get("group_state") is None
                                or found.protocol == members.CONSUMER_TYPE):
                listed[g]["group_state"] = found.state
        return out

    def _committed(self, groups: list[str]) -> tuple[dict, dict[str, str]]:
        """Committed offsets per group.

        A group Kafka refuses to show (e.g. not authorized) gets an error instead.
        """
        committed: dict = {}
        errors: dict[str, str] = {}
        for chunk in chunks(groups, GROUP_CHUNK):
            try:
                # {group: {(topic, p): (offset, meta)}}, on zk2kafka's own codec
                found, refused = fetch_committed(self.admin, self.policy, chunk,
                                                 features=self.features)
            except KafkaError as exc:
                raise KafkaUnavailable(f"fetch committed offsets: {exc}") from exc
            committed.update(found)
            errors.update({g: f"{type(exc).__name__}: {exc}" for g, exc in refused.items()})
        return committed, errors

    def _partitions(self, topics: list[str]) -> tuple[list[dict], int]:
        """A row with log bounds per partition of the existing `topics`.

        Returns the rows and how many of `topics` Kafka lacks.
        """
        rows: list[dict] = []
        missing = 0
        for chunk in chunks(topics, GROUP_CHUNK):
            for topic in self._call("describe topics", lambda c=chunk: self.features.call(
                    "Metadata", lambda: self.admin.describe_topics(c))):
                if topic["error_code"] == TOPIC_AUTHORIZATION_FAILED:
                    rows.append({"kind": REFUSED, "topic": topic["name"],
                                 "error": not_authorized(topic["name"])})
                    continue
                # unknown or invalid: no partition to commit to
                if not topic["partitions"]:
                    missing += 1
                    continue
                error = None if topic["error_code"] == 0 else f"error code {topic['error_code']}"
                for p in topic["partitions"]:
                    leader = p["leader_id"]
                    no_leader = None if leader >= 0 else "partition has no leader"
                    rows.append({"kind": PARTITION, "topic": topic["name"],
                                 "partition": p["partition_index"], "leader": leader,
                                 "error": error or no_leader})
        readable = [r for r in rows if r["kind"] == PARTITION and r["error"] is None]
        for chunk in chunks(readable, PARTITION_CHUNK):
            self._log_bounds(chunk)
        return rows, missing

    def _log_bounds(self, rows: list[dict]) -> None:
        """Fill log_start/log_end of `rows` in place.

        A partition whose lookup fails non-retriably gets `error` instead.
        """
        tps = [TopicPartition(r["topic"], r["partition"]) for r in rows]
        bounds = log_bounds(self.admin, self.features, self.policy, tps)
        for row, tp in zip(rows, tps):
            if isinstance(bounds[tp], str):
                row["error"] = bounds[tp]
            else:
                row["log_start"], row["log_end"] = bounds[tp]

    def _retention_and_cluster(self) -> _Retention:
        """offsets.retention.minutes of a live broker (or why it is unknown), and the cluster id."""
        cluster = self._call("describe cluster",
                             lambda: compat.describe_cluster(self.admin, self.features))
        if not cluster.brokers:
            return _Retention(None, "the cluster listed no broker", cluster.cluster_id)
        key = "offsets.retention.minutes"
        setting = compat.broker_setting(self.admin, self.features, cluster.brokers[0], key,
                                        self.policy.call)
        if setting.value is None:
            log.warning("could not read %s: %s", key, setting.why_unknown)
            return _Retention(None, setting.why_unknown, cluster.cluster_id)
        try:
            return _Retention(int(setting.value), None, cluster.cluster_id)
        except ValueError:
            why = f"broker {cluster.brokers[0]} gave {key}={setting.value!r}, not a number"
            log.warning("could not read %s: %s", key, why)
            return _Retention(None, why, cluster.cluster_id)

