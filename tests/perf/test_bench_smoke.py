"""The benchmarks stay runnable: each runs once on a tiny tree (figures are not asserted, only correctness)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_scan  # noqa: E402


def test_scan_benchmark_runs_and_counts_right(zk_chroot, capsys):
    results = bench_scan.main(["--zookeeper", zk_chroot, "--groups", "3", "--topics", "2", "--partitions", "5",
                               "--readers", "1", "2"])
    assert [r["method"] for r in results] == ["naive kazoo walk (sequential get_children + get)",
                                              "zk2kafka scan --zk-readers 1", "zk2kafka scan --zk-readers 2"]
    assert "| method | wall time | znodes/s | vs naive | peak RSS |" in capsys.readouterr().out
