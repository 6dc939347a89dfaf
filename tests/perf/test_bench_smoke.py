"""The benchmarks stay runnable: each runs once on a tiny tree (figures are not asserted, only correctness)."""

from __future__ import annotations

import json
import os

import pytest


import bench_offsets_log
import bench_diff
import bench_migrate
import bench_offset_codec
import bench_scale
import bench_scan
import bench_sync
import jvm_threads

from migrate.diff import schema as s


def test_scan_benchmark_runs_and_counts_right(zk_chroot, capsys):
    results = bench_scan.main(["--zookeeper", zk_chroot, "--groups", "3", "--topics", "2", "--partitions", "5",
                               "--readers", "1", "2"])
    assert [r["method"] for r in results] == ["naive kazoo walk (sequential get_children + get)",
                                              "zk2kafka scan --zk-readers 1", "zk2kafka scan --zk-readers 2"]
    assert "| method | wall time | znodes/s | vs naive | peak RSS |" in capsys.readouterr().out


def test_diff_benchmark_runs_and_plans_every_status(tmp_path, capsys):
    out = tmp_path / "diff.json"
    figures = bench_diff.main(["--offsets", "2000", "--partitions", "20", "--master", "local[2]",
                               "--json", str(out)])
    assert figures["offsets"] == 2000 and figures["groups"] == 100
    assert figures["plan_rows"] == 2000 + 10  # one KAFKA_ONLY partition for each of the 10 groups known to Kafka
    assert set(figures["counts"]) == set(s.STATUSES) - {s.UNTRANSLATABLE}   # --translate-via-mm2 only
    assert figures["counts"][s.MIGRATE] > figures["plan_rows"] // 2
    assert figures["jvm_peak_rss_mib"] > 0 and figures["driver_peak_rss_mib"] > 0
    assert json.loads(out.read_text()) == figures
    assert "| peak RSS, Spark JVM |" in capsys.readouterr().out


def test_migrate_benchmark_commits_and_verifies(cluster, zk_chroot, kafka_admin, tmp_path, capsys):
    out = tmp_path / "migrate.json"
    # Pinned to the cores it has already, on both sides: every pinning path runs, and nothing moves.
    cores = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    figures = bench_migrate.main(["--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
                                  "--groups", "4", "--partitions", "2", "--topics", "2", "--tool-sample", "1",
                                  "--naive-sample", "2", "--skip-zk2kafka", "--pin", f"{cores}:{cores}",
                                  "--json", str(out)])
    assert figures["offsets"] == 8
    assert figures["pin"] == {"spec": f"{cores}:{cores}", "stores": sorted(os.sched_getaffinity(0)),
                              "client": sorted(os.sched_getaffinity(0))}
    loop, java, tool, naive = figures["methods"]
    assert (loop["key"], java["key"], tool["key"], naive["key"]) == ("loop", "java_admin", "tool", "naive")
    for method, timed in ((loop, 4), (java, 4), (tool, 1), (naive, 2)):
        assert method["error"] is None and method["ok"] and method["extrapolated"] == (timed < 4)
        assert method["timed_groups"] == method["verified_groups"] == method["verified_ok"] == timed
        assert 0 < method["per_group_s"] < 60 and method["offsets_per_s"] > 0
        assert abs(method["all_groups_s"] - 4 * method["per_group_s"]) < 1e-9
    # The Java Admin's seconds are its own window, inside the child's wall time.
    assert 0 < java["seconds"] < java["child_wall_s"] and java["exit_code"] == 0
    assert tool["vs_tool"] == naive["vs_naive"] == loop["vs_loop"] == java["vs_java_admin"] == 1.0
    assert tool["vs_naive"] * naive["vs_tool"] == pytest.approx(1)
    assert loop["vs_tool"] * tool["vs_loop"] == pytest.approx(1)
    assert loop["vs_java_admin"] == pytest.approx(java["seconds"] / loop["seconds"])
    # Read back independently: the tool's group and the others' second groups hold the planned offsets.
    layout = bench_migrate.Layout(figures["run"], 2, 2, 5)
    for prefix, i in ((f"{figures['run']}-tool-", 0), (f"{figures['run']}-naive-", 1),
                      (f"{figures['run']}-loop-", 1), (f"{figures['run']}-java-", 1)):
        group = layout.group(prefix, i)
        committed = kafka_admin.list_group_offsets({group: None})[group]
        assert {tp: om.offset for tp, om in committed.items()} == layout.offsets(i)
    assert json.loads(out.read_text()) == figures
    printed = capsys.readouterr().out
    assert "| vs loop | vs Java Admin | vs tool | vs naive | verified |" in printed
    assert "pinned: ZooKeeper, the broker and the benchmark on core" in printed
    assert "python tests/perf/bench_migrate.py --zookeeper" in printed


def test_offsets_log_benchmark_reads_every_groups_evidence(cluster, zk_chroot, tmp_path, capsys):
    out = tmp_path / "log.json"
    figures = bench_offsets_log.main(["--bootstrap-server", cluster.bootstrap_server, "--zookeeper", zk_chroot,
                                      "--groups", "12", "--partitions", "3", "--rounds", "2", "--members", "2",
                                      "--transactions", "2", "--zk-partitions", "2", "--skip-consumer",
                                      "--readers", "1", "--console-idle", "5", "--json", str(out)])
    assert figures["ok"], figures
    log, console, gate, snapshot = figures["methods"]
    assert log["runs"][0]["groups_whole"] == 12 and log["runs"][0]["member_commits"] == 2 * 3
    # The session's cluster holds other tests' records too: the topic's records are counted whole.
    assert figures["topic_records"] >= 12 * 3 * 2 and console["runs"][0]["records_seen"] > 0
    assert gate["runs"][0]["offsets"] == 12 * 2 and gate["runs"][0]["taken_over"] == 2 * 2
    assert snapshot["runs"][0]["commit_rows"] == 12 * 3
    for method in (log, console, gate, snapshot):
        assert method["ok"] and 0 < method["min_s"] <= method["median_s"] <= method["max_s"]
        assert method["peak_rss_mib"] > 0
    assert figures["loop_before_s"] > 0 and figures["loop_after_s"] > 0
    assert json.loads(out.read_text()) == figures
    assert "| records/s (median) | peak RSS |" in capsys.readouterr().out


def _scale_checks(figures: dict, offsets: int) -> None:
    scan, diff, migrate, verify = figures["steps"]
    assert figures["ok"] and figures["offsets"] == offsets
    assert [r["exit_code"] for r in figures["steps"]] == [0, 0, 0, 0]
    assert migrate["written"] == offsets and migrate["state"] == "done" and verify["verified"]
    assert diff["jvm_peak_mib"] > 0 and migrate["python_peak_mib"] > 0


def test_scale_benchmark_runs_every_step(cluster, zk_chroot, tmp_path, capsys):
    out = tmp_path / "scale.json"
    figures = bench_scale.main(["--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
                                "--groups", "30", "--partitions", "4", "--topics", "2", "--json", str(out)])
    _scale_checks(figures, 120)
    assert json.loads(out.read_text()) == figures
    assert "| `zk2kafka verify --run` |" in capsys.readouterr().out


@pytest.mark.parametrize("version", [2, 3, 6, 8])
def test_offset_codec_benchmark_times_both_paths_to_the_same_answers(version, capsys):
    figures = bench_offset_codec.main(["--version", str(version), "--rounds", "20", "--repeat", "1",
                                       "--partitions", "3"])   # it asserts the two paths agree first
    assert all(figures[f"{side} {api}"] > 0 for side in ("kafka-python", "codec") for api in ("OffsetCommit",
                                                                                               "OffsetFetch"))
    assert "| codec OffsetFetch |" in capsys.readouterr().out


def test_sync_benchmark_times_every_change_it_sent(cluster, zk_chroot, tmp_path, capsys):
    out = tmp_path / "sync.json"
    cores = ",".join(map(str, sorted(os.sched_getaffinity(0))))   # every pinning path, nothing moves
    figures = bench_sync.main(["--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
                               "--groups", "20", "--partitions", "2", "--topics", "2", "--rate", "40", "80",
                               "--minutes", "0.1", "--drain", "20", "--pin", f"{cores}:{cores}",
                               "--json", str(out)])
    assert figures["ok"] and figures["first_mirror_s"] > 0
    assert [s["rate"] for s in figures["streams"]] == [40, 80]
    for stream in figures["streams"]:
        assert stream["missed"] == 0 and stream["zk_writes_failed"] == 0
        assert stream["changes"] >= stream["rate"] * 6 * 0.9   # 6 s of it, less the pacing's slack
        assert 0 <= stream["p50_s"] <= stream["p99_s"] <= stream["max_s"] < 20
        assert stream["rss_peak_mib"] >= stream["rss_start_mib"] > 0
        # sync's CPU until Kafka held the stream's last change, per change; and how it batched them
        assert stream["drain_s"] >= 0 and stream["sync_cpu_s"] > 0 and stream["cpu_ms_per_change"] > 0
        assert 0 < stream["sync_commits"] <= stream["changes"] and stream["sync_rearm_batches"] > 0
    assert json.loads(out.read_text()) == figures
    printed = capsys.readouterr().out
    assert "| changes/s asked | achieved |" in printed and "| sync CPU per change |" in printed


@pytest.mark.slow
def test_a_million_offsets_end_to_end_in_flat_memory():
    """docs/performance.md's million offsets: `make test-long` (or `python tests/perf/bench_scale.py`), own sandbox."""
    figures = bench_scale.main([])
    _scale_checks(figures, 1_000_000)
    migrate = figures["steps"][2]
    # The writer holds a batch of groups at a time, not the run: its memory must not grow with the offsets.
    assert migrate["python_write_peak_mib"] - migrate["python_at_write_start_mib"] < 200, migrate
    # No step holds the plan or a snapshot whole (it took 1 KiB an offset when the diff collected the plan).
    assert all(step["python_peak_mib"] < 512 for step in figures["steps"]), figures["steps"]


def test_the_stores_threads_sampler_names_the_broker_and_zookeeper(cluster, capsys, monkeypatch):
    jvm_threads.main(["--every", "0.3", "--for", "0.5"])
    printed = capsys.readouterr().out
    assert "cores: cpu0 " in printed
    assert " broker: " in printed and " zookeeper: " in printed and "% of a core" in printed, printed
    assert ("young GC" in printed) == (jvm_threads.JSTAT is not None)
    monkeypatch.setattr(jvm_threads, "JSTAT", None)   # a JRE alone: no GC counters, the rest as before
    jvm_threads.main(["--every", "0.3", "--for", "0.5"])
    printed = capsys.readouterr().out
    assert " broker: " in printed and "young GC" not in printed, printed
