"""The plan as the journal and the plan hash read it: plan.parquet streamed in batches, the same as all at once."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from migrate.diff import plan as planmod
from migrate.journal.journal import digest
from migrate.diff.plan import Planned
from migrate.diff import schema as s

NAMES = ["a", "B", "é", "Z", "日本", "a-1", "\U0001F600", "a b", "ä"]


def plan_table(groups: int = 40, partitions: int = 7, seed: int = 7) -> pa.Table:
    rng = random.Random(seed)
    rows = []
    for g in range(groups):
        group = f"{rng.choice(NAMES)}{g}"
        for p in range(partitions):
            topic = rng.choice(NAMES)
            commit = (g + p) % 5 != 0
            rows.append({"group": group, "topic": topic, "partition": p, "status": s.MIGRATE if commit else s.IN_SYNC,
                         "action": s.COMMIT if commit else s.NOTHING, "planned_offset": g * 100 + p if commit else None,
                         "zk_path": f"/consumers/{group}/offsets/{topic}/{p}", "zk_version": p % 3 or None,
                         "layout": "standard", "kafka_offset": None if commit else g})
    return pa.Table.from_pylist(rows, schema=s.PLAN_SCHEMA).sort_by(s.PLAN_ORDER)   # as the diff writes it


def plan_file(tmp_path, table: pa.Table) -> Path:
    """The table as plan.parquet, in row groups smaller than a batch and not aligned with one."""
    path = tmp_path / "plan.parquet"
    pq.write_table(table, path, row_group_size=5)
    return path


def all_at_once(table: pa.Table) -> dict[str, list[Planned]]:
    groups: dict[str, list[Planned]] = {}
    for r in sorted(table.to_pylist(), key=lambda r: (r["group"], r["topic"], r["partition"])):
        if r["action"] == s.COMMIT:
            groups.setdefault(r["group"], []).append(Planned(r["topic"], r["partition"], r["planned_offset"],
                                                             r["zk_path"], r["zk_version"], r["layout"],
                                                             r["kafka_offset"]))
    return groups


@pytest.mark.parametrize("batch", [1, 3, 65_536])
def test_the_plan_hash_is_the_digest_of_the_sorted_commit_rows(monkeypatch, tmp_path, batch):
    monkeypatch.setattr(planmod, "BATCH_ROWS", batch)
    table = plan_table()
    rows = [(r["group"], r["topic"], r["partition"], r["planned_offset"], r["zk_version"])
            for r in table.to_pylist() if r["action"] == s.COMMIT]
    assert planmod.writer_digest(plan_file(tmp_path, table)) == planmod.writer_digest(table) == digest(sorted(rows))
    assert planmod.writer_digest(table.slice(0, 0)) == digest([])


@pytest.mark.parametrize("batch", [1, 4, 65_536])
def test_planned_rows_stream_per_group_in_order(monkeypatch, tmp_path, batch):
    monkeypatch.setattr(planmod, "BATCH_ROWS", batch)
    table = plan_table()
    expected = all_at_once(table)
    streamed = planmod.PlannedByGroup(plan_file(tmp_path, table))
    assert list(streamed) == sorted(expected) and len(streamed) == len(expected)
    assert list(streamed.items()) == list(expected.items())
    first = sorted(expected)[0]
    assert streamed[first] == expected[first]
    some = next(iter(expected))
    assert streamed[some] == expected[some]
    with pytest.raises(KeyError):
        streamed["no such group"]


def test_a_plan_file_gone_truncated_or_not_a_plan_has_no_hash(tmp_path):
    path = plan_file(tmp_path, plan_table())
    assert planmod.readable_writer_digest(path) == planmod.writer_digest(plan_table())
    path.write_bytes(path.read_bytes()[:200])
    assert planmod.readable_writer_digest(path) is None
    pq.write_table(pa.table({"group": ["g"]}), path)   # a Parquet file, but not a plan
    assert planmod.readable_writer_digest(path) is None
    path.unlink()
    assert planmod.readable_writer_digest(path) is None
