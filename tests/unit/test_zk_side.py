"""The ZooKeeper side read from a snapshot (migrate/zk/side.py): which file `--zk-snapshot` names,
where its offsets were read as its metadata (or its run's report) says, the selection's rows
copied with that origin, and the options that need live ZooKeeper refused."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from migrate.errors import ConfigError, MigrateError
from migrate.settings import load_settings
from migrate.state import StateDir, iso
from migrate.zk.reader import SCHEMA
from migrate.write.snapshot_plan import for_writing
from migrate.zk.side import (DATA_DIR, ENSEMBLE, SNAPSHOT, Origin, ZooKeeperSide, chosen,
                             origin_of, refuse_snapshot, too_old)


def row(group: str, topic: str | None, partition: int, offset: int) -> dict:
    return {"group": group, "topic": topic, "partition": partition, "raw": str(offset),
            "offset": offset, "status": "OK", "version": 0, "mzxid": 5, "zk_consumers": 0,
            "layout": "offsets", "path": f"/consumers/{group}/offsets/{topic}/{partition}"}


def write_snapshot(path: Path, rows: list[dict], meta: dict[str, str] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA.with_metadata(meta or {})), path)
    return path


def test_the_origin_travels_in_the_snapshot_metadata_and_into_a_copy(tmp_path):
    origin = Origin(ENSEMBLE, "zk1:2181/consumers", "2026-01-02T03:04:05Z", "scan R1", "zk1:2181",
                    "/consumers", {"zookeeper_cluster_id": "abc", "zookeeper_servers": ["1:2"]})
    meta = {f"zk2kafka.{k}": v for k, v in origin.metadata().items()}
    source = write_snapshot(tmp_path / "state" / "snapshots" / "zk-R1.parquet",
                            [row("billing", "orders", 0, 10), row("billing", "clicks", 0, 3),
                             row("test-1", "orders", 0, 7), row("billing", None, 0, 1)], meta)
    assert origin_of(source) == origin
    settings = load_settings({"zk_snapshot": "R1", "state_dir": str(tmp_path / "state"),
                              "groups": ["billing"], "topics": ["orders"]})
    side = chosen(settings)
    assert side == ZooKeeperSide(source, origin) and not side.live
    assert settings.no_zk_write   # implied: no ZooKeeper to write
    data = side.read(settings, StateDir(settings.state_dir), "R2", "diff", scan_live=None)
    copied = pq.read_table(data["snapshot"])
    # The selection's rows; a row with no topic kept, as a topic selection keeps it.
    assert [(r["group"], r["topic"]) for r in copied.to_pylist()] == [
        ("billing", "orders"), ("billing", None)]
    assert origin_of(Path(data["snapshot"])) == origin   # the copy says where it was read
    side_json = data["zookeeper_side"]
    assert (side_json["from"], side_json["snapshot"], side_json["read_by"]) == (
        SNAPSHOT, str(source), "scan R1")


def test_evidence_written_without_metadata_is_told_by_its_report(tmp_path):
    state = tmp_path / "state"
    source = write_snapshot(state / "snapshots" / "zk-R9.parquet", [row("g", "t", 0, 1)])
    (state / "reports" / "R9").mkdir(parents=True)
    (state / "reports" / "R9" / "summary.json").write_text(json.dumps({
        "command": "ready-for-kraft", "source": "zk:2181/consumers",
        "watched": {"to": "2026-01-01T00:00:00Z"}}))
    assert origin_of(source) == Origin(ENSEMBLE, "zk:2181/consumers", "2026-01-01T00:00:00Z",
                                       "ready-for-kraft R9")
    # A report folder names its run as well as the run id does.
    settings = load_settings({"zk_snapshot": str(state / "reports" / "R9"),
                              "state_dir": str(state)})
    assert chosen(settings).snapshot == source


def test_a_snapshot_is_read_with_the_offset_semantics_it_was_parsed_with(tmp_path):
    source = write_snapshot(tmp_path / "zk-R1.parquet", [row("g", "t", 0, 1)],
                            {"zk2kafka.run": "R1", "zk2kafka.semantics": "last"})
    assert origin_of(source).semantics == "last"
    with pytest.raises(ConfigError, match="read with --offset-semantics last; pass the same"):
        chosen(load_settings({"zk_snapshot": str(source)}))
    assert chosen(load_settings({"zk_snapshot": str(source), "offset_semantics": "last"}))


def test_what_is_not_a_snapshot_is_one_line(tmp_path):
    settings = load_settings({"zk_snapshot": "nope", "state_dir": str(tmp_path)})
    with pytest.raises(ConfigError, match=r"--zk-snapshot nope: no such file"):
        chosen(settings)
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1]}), other)
    with pytest.raises(ConfigError, match="not a zk snapshot"):
        chosen(load_settings({"zk_snapshot": str(other)}))


@pytest.mark.parametrize("flags, said", [
    ({"rewrite_zk_offsets": True}, "--rewrite-zk-offsets writes ZooKeeper"),
    ({"plan": "P"}, "--zk-snapshot and --plan go apart"),
    ({"resume": "R"}, "--zk-snapshot and --resume go apart"),
])
def test_what_writes_or_reads_zookeeper_live_is_refused(flags, said):
    with pytest.raises(ConfigError, match=said):
        load_settings({"zk_snapshot": "R1", **flags})


def test_ready_for_kraft_refuses_a_snapshot():
    with pytest.raises(ConfigError, match="ready-for-kraft reads ZooKeeper live"):
        refuse_snapshot(load_settings({"zk_snapshot": "R1"}), "ready-for-kraft")


def test_a_plan_from_a_copy_of_a_data_directory_writes_kafka_alone():
    settings = load_settings({"bootstrap_server": "k:9092"})
    side = {"from": SNAPSHOT, "kind": DATA_DIR, "zookeeper": None, "zk_root": "/kafka/consumers"}
    written, rechecked = for_writing(settings, {"zookeeper_side": side})
    assert written.no_zk_write and written.zookeeper is None
    assert written.zk_root == "/kafka/consumers"   # the plan's own root
    assert rechecked.startswith("ZooKeeper not re-checked: the snapshot was read from a copy")
    # A live plan is written as it always was.
    assert for_writing(settings, {"zookeeper_side": {"from": ENSEMBLE}}) == (settings, None)


@pytest.mark.parametrize("flags, said", [
    ({"no_zk_write": True}, "--dual-commit keeps ZooKeeper in agreement, and --no-zk-write"),
    ({"translate_via_mm2": "src", "offset_syncs_bootstrap_server": "k:9092"},
     "--dual-commit keeps ZooKeeper in agreement, and --translate-via-mm2 implies --no-zk-write"),
    ({"plan": "P", "zk_snapshot": None}, "--dual-commit and --plan go apart"),
    ({"resume": "R", "zk_snapshot": None}, "--dual-commit and --resume go apart"),
])
def test_the_dual_commit_from_a_snapshot_refuses_what_leaves_zookeeper_alone(flags, said):
    with pytest.raises(ConfigError, match=said):
        load_settings({"zk_snapshot": "R1", "dual_commit": True, **flags})


def test_the_dual_commit_from_a_snapshot_is_written_and_may_rewrite():
    settings = load_settings({"zk_snapshot": "R1", "dual_commit": True,
                              "rewrite_zk_offsets": True})
    assert not settings.no_zk_write and settings.rewrite_zk_offsets


def test_only_a_read_of_a_live_ensemble_that_named_it_serves_the_dual_commit(tmp_path):
    state = tmp_path / "state"
    identity = {"zookeeper_cluster_id": None, "zookeeper_servers": ["127.0.0.1:2181"],
                "zookeeper_chroot": ""}

    def snapshot(run: str, kind: str, stores: dict | None) -> None:
        origin = Origin(kind, "zk:2181/consumers", "2026-01-02T03:04:05Z", f"scan {run}",
                        "zk:2181" if kind == ENSEMBLE else None, "/consumers", stores)
        write_snapshot(state / "snapshots" / f"zk-{run}.parquet", [row("g", "t", 0, 1)],
                       {f"zk2kafka.{k}": v for k, v in origin.metadata().items()})

    def side(run: str, command: str = "diff", **flags):
        return chosen(load_settings({"zk_snapshot": run, "state_dir": str(state),
                                     "dual_commit": True, "zookeeper": "zk:2181", **flags}),
                      command)

    snapshot("LIVE", ENSEMBLE, identity)
    snapshot("COPY", DATA_DIR, None)
    snapshot("OLD", ENSEMBLE, None)
    assert side("LIVE").dual_commit and not side("LIVE", "verify").dual_commit
    data = side("LIVE").read(load_settings({"state_dir": str(state)}), StateDir(state), "R2",
                             "diff", scan_live=None)
    assert data["zookeeper_side"]["zk_write"].startswith("ZooKeeper is written by the dual commit")
    for run, flags, said in (
            ("COPY", {}, "read from a copy of a data directory"),
            ("OLD", {}, "recorded no identity of the ensemble it read"),
            ("LIVE", {"zookeeper": None}, "give it with --zookeeper"),
            ("LIVE", {"zk_root": "/other"}, "the snapshot read the root /consumers, and /other")):
        with pytest.raises(ConfigError, match=said):
            side(run, **flags)


def test_a_run_that_writes_zookeeper_from_a_snapshot_refuses_one_older_than_max_plan_age():
    read = {"read_at": "2026-01-02T03:04:05Z", "read_by": "scan R1"}
    at = 1767323045.0   # 2026-01-02T03:04:05Z
    assert too_old(read, 3600, now=at + 3600) is None
    assert too_old(read, 3600, now=at + 3601).startswith(
        "the snapshot was read 2h ago (at 2026-01-02T03:04:05Z by scan R1), longer than "
        "--max-plan-age 1h")
    assert "does not say when" in too_old({"read_by": "scan R1"}, 3600)
    side = {"from": SNAPSHOT, "kind": ENSEMBLE, "zookeeper": "zk:2181", "zk_root": "/consumers",
            "read_at": iso(time.time() - 60), "read_by": "scan R1"}
    settings = load_settings({"bootstrap_server": "k:9092", "zookeeper": "zk:2181"})
    written, rechecked = for_writing(settings, {"zookeeper_side": side, "dual_commit": True})
    assert not written.no_zk_write and written.zookeeper == "zk:2181"
    assert rechecked.startswith("the dual commit (--dual-commit) into ZooKeeper zk:2181")
    with pytest.raises(ConfigError, match="give the ensemble it was read from"):
        for_writing(load_settings({"bootstrap_server": "k:9092"}),
                    {"zookeeper_side": side, "dual_commit": True})
    side["read_at"] = iso(time.time() - 2 * 86400)   # --max-plan-age is 24h by default
    with pytest.raises(MigrateError, match="the plan keeps ZooKeeper in agreement"):
        for_writing(settings, {"zookeeper_side": side, "dual_commit": True})
