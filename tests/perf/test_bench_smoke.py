"""The benchmarks stay runnable: each runs once on a tiny tree (figures are not asserted, only correctness)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_diff  # noqa: E402
import bench_scan  # noqa: E402

from migrate.diff import schema as s  # noqa: E402


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
    assert set(figures["counts"]) == set(s.STATUSES)
    assert figures["counts"][s.MIGRATE] > figures["plan_rows"] // 2
    assert figures["jvm_peak_rss_mib"] > 0 and figures["driver_peak_rss_mib"] > 0
    assert json.loads(out.read_text()) == figures
    assert "| peak RSS, Spark JVM |" in capsys.readouterr().out
