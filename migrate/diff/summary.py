"""The run summary (summary.json): counts, blockers, per-group figures, and the retention
preflight's answer (retention.py)."""

from __future__ import annotations

import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from migrate.diff import schema as s
from migrate.diff.retention import retention_preflight, selection_flags
from migrate.diff.run import ZK_MOVES, DiffResult
from migrate.group_map import flags_text, renamed_text
from migrate.kafka.compat import HOW_VERSION_IS_KNOWN
from migrate.kafka.snapshot import SnapshotInfo
from migrate.state import iso
from migrate.zk.reader import Selection
from migrate.zk.side import SNAPSHOT


def build_summary(run: str, command: str, result: DiffResult, kafka: SnapshotInfo,
                  inputs: dict[str, Any], selection: Selection, policies: dict[str, Any],
                  spark_master: str) -> dict[str, Any]:
    """summary.json for a diff: every status counted (zeros too), blockers, per group, warnings.

    `selection`: the groups and topics selected; `policies`: the diff's policies as summary.json
    records them (on_conflict, out_of_range, offset_semantics, allow_live_zk_consumers,
    rewrite_zk_offsets); `spark_master`: where the diff ran.
    """
    counts = dict.fromkeys(s.STATUSES, 0)
    per_group = []
    for row in result.per_group:
        group_counts = {name: row[name] for name in s.STATUSES if row[name]}
        for name, n in group_counts.items():
            counts[name] += n
        per_group.append({"group": row["group"], "offsets": row["offsets"], "counts": group_counts,
                          "blockers": row["blockers"], "planned": row["planned"],
                          "group_state": row["group_state"], "protocol_type": row["protocol_type"],
                          "kafka_members": row["kafka_members"],
                          "zk_consumers": row["zk_consumers"], "lag": row["lag"],
                          "zk_moves": {change: row[name] for change, name in ZK_MOVES.items()
                                       if row[name]},
                          "first_blocker": row["first_blocker"],
                          # the Kafka group it maps to (--map-group), where it is renamed
                          **{k: row[k] for k in ("kafka_group",) if k in row}})
    blocker_counts = {name: counts[name] for name in s.STATUSES
                      if name in s.BLOCKERS and counts[name]}
    blockers = sum(blocker_counts.values())
    # Kafka's clocks are of the Kafka groups: a renamed one is told as `old -> new`, and the sync
    # that renews it repeats the mapping.
    renamed = {g["group"]: g["kafka_group"] for g in per_group if "kafka_group" in g}
    label = {new: renamed_text(old, renamed) for old, new in renamed.items()}
    empty_since = None if kafka.empty_since is None else {
        label.get(name, name): ms for name, ms in kafka.empty_since.items()}
    commit_clocks = None if kafka.commit_clocks is None else {
        label.get(name, name): clocks for name, clocks in kafka.commit_clocks.items()}
    # The road without ZooKeeper (its side a snapshot): renew keeps offsets alive from Kafka and
    # the journal, with each run's mapping as the journal recorded it; sync needs ZooKeeper, which
    # a snapshot's dual commit (--dual-commit) has.
    after_zookeeper = ((inputs.get("zookeeper_side") or {}).get("from") == SNAPSHOT
                       and not inputs.get("dual_commit"))
    retention = retention_preflight([{**g, "group": renamed_text(g["group"], renamed)}
                                     for g in per_group],
                                    kafka.retention_minutes, kafka.broker_version,
                                    kafka.retention_unknown, kafka.default_retention_minutes,
                                    empty_since, kafka.empty_since_unknown,
                                    selection=selection_flags(selection)
                                    + ("" if after_zookeeper else flags_text(inputs)),
                                    commit_clocks=commit_clocks,
                                    commit_clocks_unknown=kafka.commit_clocks_unknown,
                                    renewal="renew" if after_zookeeper else "sync")
    warnings = list(retention["warnings"])
    if policies["on_conflict"] == "fail" and counts[s.CONFLICT]:
        warnings.append(f"--on-conflict fail: {counts[s.CONFLICT]} CONFLICT row(s); "
                        f"migrate --execute will refuse")
    zk_changes = {change: sum(g["zk_moves"].get(change, 0) for g in per_group)
                  for change in ZK_MOVES}
    return {
        "run": run, "command": command, "created": iso(time.time()),
        "versions": _versions(),
        "inputs": {**inputs, "groups": list(selection.groups),
                   "exclude_groups": list(selection.exclude_groups),
                   "topics": list(selection.topics)},
        "policies": dict(policies),
        "groups": len(per_group), "offsets": result.rows,
        "counts": counts, "blockers": blockers, "blocker_counts": blocker_counts,
        "planned": {"commit_offsets": sum(g["planned"] for g in per_group),
                    "commit_groups": sum(1 for g in per_group if g["planned"])},
        # The rows that set ZooKeeper's offset forwards or backwards, and those not planned
        # because they would (without --rewrite-zk-offsets): every other row keeps it.
        "zk_changes": zk_changes,
        # Partitions of the groups' topics with no offset anywhere (diff/coverage.py).
        "no_offset": result.no_offset,
        "kafka": {"broker_version": kafka.broker_version,
                  "broker_version_source": HOW_VERSION_IS_KNOWN,
                  "cluster_id": kafka.cluster_id, "groups_in_kafka": kafka.groups_in_kafka,
                  "active_groups": kafka.active_groups,
                  "committed_offsets": kafka.committed_offsets,
                  "partitions": kafka.partitions, "missing_topics": kafka.missing_topics},
        "retention": retention,
        "warnings": warnings,
        "spark": {"master": spark_master, "startup_seconds": result.startup_seconds,
                  "diff_seconds": result.diff_seconds},
        "per_group": per_group,
    }


def _versions() -> dict[str, str]:
    out = {}
    for dist in ("zk2kafka", "pyspark", "kafka-python", "kazoo", "pyarrow"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "unknown"
    return out
