"""The run summary (summary.json): counts, blockers, per-group figures and the retention preflight."""

from __future__ import annotations

import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from migrate.diff import schema as s
from migrate.diff.run import DiffResult
from migrate.kafka.snapshot import SnapshotInfo
from migrate.settings import Settings

# Kafka's default before 2.0 (KIP-186) and after: used when the broker does not say.
RETENTION_FALLBACK = "1 day before Kafka 2.0, 7 days since"


def build_summary(run: str, command: str, settings: Settings, result: DiffResult, kafka: SnapshotInfo,
                  inputs: dict[str, Any]) -> dict[str, Any]:
    """summary.json for a diff: every status counted (zeros too), blockers, per group, warnings."""
    counts = dict.fromkeys(s.STATUSES, 0)
    per_group = []
    for row in result.per_group:
        group_counts = {name: row[name] for name in s.STATUSES if row[name]}
        for name, n in group_counts.items():
            counts[name] += n
        per_group.append({"group": row["group"], "offsets": row["offsets"], "counts": group_counts,
                          "blockers": row["blockers"], "planned": row["planned"],
                          "group_state": row["group_state"], "protocol_type": row["protocol_type"],
                          "kafka_members": row["kafka_members"], "zk_consumers": row["zk_consumers"],
                          "lag": row["lag"]})
    blocker_counts = {name: counts[name] for name in s.STATUSES if name in s.BLOCKERS and counts[name]}
    blockers = sum(blocker_counts.values())
    retention = retention_preflight(per_group, kafka.retention_minutes)
    warnings = [w for w in (retention["warning"],) if w]
    if settings.on_conflict == "fail" and counts[s.CONFLICT]:
        warnings.append(f"--on-conflict fail: {counts[s.CONFLICT]} CONFLICT row(s); migrate --execute will refuse")
    return {
        "run": run, "command": command, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": _versions(),
        "inputs": {**inputs, "groups": list(settings.groups), "exclude_groups": list(settings.exclude_groups),
                   "topics": list(settings.topics)},
        "policies": {"on_conflict": settings.on_conflict, "out_of_range": settings.out_of_range,
                     "offset_semantics": settings.offset_semantics,
                     "allow_live_zk_consumers": settings.allow_live_zk_consumers},
        "groups": len(per_group), "offsets": result.rows,
        "counts": counts, "blockers": blockers, "blocker_counts": blocker_counts,
        "planned": {"commit_offsets": sum(g["planned"] for g in per_group),
                    "commit_groups": sum(1 for g in per_group if g["planned"])},
        "kafka": {"cluster_id": kafka.cluster_id, "groups_in_kafka": kafka.groups_in_kafka,
                  "active_groups": kafka.active_groups, "committed_offsets": kafka.committed_offsets,
                  "partitions": kafka.partitions, "missing_topics": kafka.missing_topics},
        "retention": retention,
        "warnings": warnings,
        "spark": {"master": settings.spark_master, "startup_seconds": result.startup_seconds,
                  "diff_seconds": result.diff_seconds},
        "per_group": per_group,
    }


def retention_preflight(per_group: list[dict], minutes: int | None) -> dict[str, Any]:
    """Warn when the migration would create groups that Kafka expires unless consumers join in time.

    A group that only a migration commit brings into being has no protocol type, so its
    offsets expire at commit time + offsets.retention.minutes (DESIGN.md).
    """
    created = [g["group"] for g in per_group
               if g["planned"] and (g["group_state"] is None or (g["group_state"] in ("Empty", "Dead")
                                                                   and not g["protocol_type"]))]
    window = _duration(minutes) if minutes is not None else f"offsets.retention.minutes (unknown: {RETENTION_FALLBACK})"
    warning = None
    if created:
        warning = (f"{len(created)} group(s) would hold offsets in Kafka with no consumer yet "
                   f"({', '.join(created[:5])}{' ...' if len(created) > 5 else ''}); Kafka deletes them {window} "
                   "after the commit unless a consumer joins first: start the new consumers within that window, "
                   "or keep the offsets alive with `zk2kafka sync --renew-every`")
    return {"minutes": minutes, "groups_created": len(created), "warning": warning}


def _duration(minutes: int) -> str:
    if minutes % 1440 == 0:
        return f"{minutes // 1440} day(s) (offsets.retention.minutes={minutes})"
    if minutes % 60 == 0:
        return f"{minutes // 60} hour(s) (offsets.retention.minutes={minutes})"
    return f"{minutes} minute(s) (offsets.retention.minutes={minutes})"


def _versions() -> dict[str, str]:
    out = {}
    for dist in ("zk2kafka", "pyspark", "kafka-python", "kazoo", "pyarrow"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "unknown"
    return out
