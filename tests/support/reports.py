"""A hand-made plan's rows and the summary a diff would write beside them: for the report pages, and a
reviewed plan on disk (`write_plan`) for the checks made before it is executed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from migrate.diff import plan as p
from migrate.diff import schema as s


def row(group, topic, partition, status, offset=None, planned=None, lag=None, kafka=None, reason=None,
        zk_change=s.ZK_UNCHANGED, zk_planned=None):
    action = s.COMMIT if planned is not None else (s.SKIP if status in s.BLOCKERS else s.NOTHING)
    return {"group": group, "topic": topic, "partition": partition, "status": status, "reason": reason or status,
            "action": action, "planned_offset": planned, "zk_offset": offset, "kafka_offset": kafka,
            "log_start": 0, "log_end": 100, "lag": lag, "zk_change": zk_change, "zk_planned": zk_planned}


def table(rows):
    return pa.Table.from_pylist(rows, schema=s.PLAN_SCHEMA)


def summary(rows, warnings=()):
    counts = dict.fromkeys(s.STATUSES, 0)
    per_group = {}
    for r in rows:
        counts[r["status"]] += 1
        g = per_group.setdefault(r["group"], {"group": r["group"], "offsets": 0, "counts": {}, "blockers": 0,
                                              "planned": 0, "group_state": None, "protocol_type": None,
                                              "kafka_members": 0, "zk_consumers": 0, "lag": 0})
        g["offsets"] += 1
        g["counts"][r["status"]] = g["counts"].get(r["status"], 0) + 1
        g["blockers"] += r["status"] in s.BLOCKERS
        g["planned"] += r["planned_offset"] is not None
        g["lag"] += max(r["lag"] or 0, 0)
    blockers = sum(n for name, n in counts.items() if name in s.BLOCKERS)
    return {"run": "20261122T000000Z-abcd", "command": "diff", "created": "2026-11-22T00:00:00Z",
            "versions": {"zk2kafka": "0.1.0"}, "inputs": {"zookeeper": "zk:2181", "zk_root": "/consumers",
                                                            "bootstrap_server": "kafka:9092"},
            "policies": {"on_conflict": "skip", "out_of_range": "skip"},
            "groups": len(per_group), "offsets": len(rows), "counts": counts, "blockers": blockers,
            "planned": {"commit_offsets": sum(g["planned"] for g in per_group.values()),
                        "commit_groups": sum(1 for g in per_group.values() if g["planned"])},
            "kafka": {"cluster_id": "c1", "groups_in_kafka": 1, "active_groups": 0},
            "retention": {"minutes": 10080}, "warnings": list(warnings),
            "spark": {"master": "local[*]", "startup_seconds": 1.0, "diff_seconds": 2.0},
            "per_group": list(per_group.values())}


CURRENT = {"zookeeper": "zk:2181/kafka", "zk_root": "/consumers", "bootstrap_server": "k:9092",
           "groups": [], "exclude_groups": [], "topics": [], "on_conflict": "skip", "out_of_range": "skip",
           "offset_semantics": "next", "allow_live_zk_consumers": False, "no_zk_write": False}


def write_plan(reports: Path, run: str = "20261123T010203Z-3f2a", created: float | None = None) -> Path:
    report = reports / run
    report.mkdir(parents=True)
    rows = [{"group": "g", "topic": "t", "partition": 0, "status": "MIGRATE", "action": p.COMMIT,
             "planned_offset": 5, "zk_path": "/consumers/g/offsets/t/0", "zk_version": 0, "layout": "standard",
             "group_state": None, "kafka_members": 0}]
    pq.write_table(pa.Table.from_pylist(rows, schema=p.PLAN_SCHEMA), report / p.PLAN_FILE)
    summary = {"run": run, "command": "diff", "plan_id": p.plan_id(run, report / p.PLAN_FILE),
               "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created or time.time())),
               "inputs": {k: CURRENT[k] for k in ("zookeeper", "zk_root", "bootstrap_server", "groups",
                                                  "exclude_groups", "topics", "no_zk_write")},
               "policies": {k: CURRENT[k] for k in ("on_conflict", "out_of_range", "offset_semantics",
                                                    "allow_live_zk_consumers")}}
    (report / "summary.json").write_text(json.dumps(summary))
    return report
