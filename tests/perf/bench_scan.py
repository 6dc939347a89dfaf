"""Benchmark: `zk2kafka scan` against a naive sequential kazoo walk, in the same run, on a real ZooKeeper.

    python tests/perf/bench_scan.py                      # 100 groups x 10 topics x 100 partitions
    python tests/perf/bench_scan.py --groups 1000 --topics 10 --partitions 100 --readers 2   # 1,000,000

Starts its own sandbox unless --zookeeper is given; prints a Markdown table, as docs/performance.md shows it.
Peak memory is the maximum RSS of the `zk2kafka scan` process tree (getrusage of the children).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

ROOT = Path(__file__).resolve().parents[2]


def build_tree(hosts: str, groups: int, topics: int, partitions: int) -> int:
    """Create groups x topics x partitions offset znodes with multi-ops; returns how many."""
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    try:
        zk.ensure_path("/consumers")
        pending = []
        for g in range(groups):
            zk.create(f"/consumers/bench-{g:05d}")
            zk.create(f"/consumers/bench-{g:05d}/offsets")
            for t in range(topics):
                tx = zk.transaction()
                tx.create(f"/consumers/bench-{g:05d}/offsets/topic-{t:03d}")
                for p in range(partitions):
                    tx.create(f"/consumers/bench-{g:05d}/offsets/topic-{t:03d}/{p}", str(1000 + p).encode())
                pending.append(tx.commit_async())
                if len(pending) >= 64:
                    [r.get() for r in pending]
                    pending.clear()
        [r.get() for r in pending]
    finally:
        zk.stop()
        zk.close()
    return groups * topics * partitions


def naive_walk(hosts: str) -> int:
    """The baseline: get_children and get, one request at a time."""
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    n = 0
    try:
        for g in zk.get_children("/consumers"):
            for t in zk.get_children(f"/consumers/{g}/offsets"):
                for p in zk.get_children(f"/consumers/{g}/offsets/{t}"):
                    int(zk.get(f"/consumers/{g}/offsets/{t}/{p}")[0])
                    n += 1
    finally:
        zk.stop()
        zk.close()
    return n


def run_scan(hosts: str, state: str, readers: int) -> tuple[dict, float, int]:
    """Run the real CLI in a child process: (its JSON result, wall seconds, peak RSS in MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "migrate", "scan", "--zookeeper", hosts, "--state-dir", state,
                           "--zk-readers", str(readers), "--json", "-q"],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB; the largest child so far
    return json.loads(done.stdout), seconds, max(peak, before) // 1024


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zookeeper", help="an existing ZooKeeper (with chroot) instead of a fresh sandbox")
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--readers", type=int, nargs="*", default=[1, 2, 4], help="--zk-readers values to time")
    ap.add_argument("--skip-naive", action="store_true", help="do not time the naive walk (for huge trees)")
    args = ap.parse_args(argv)

    cluster = None
    if args.zookeeper is None:
        from migrate.sandbox.cluster import LocalCluster

        cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="zk2kafka-bench-")),
                               Path(os.environ.get("ZK2KAFKA_CACHE_DIR", "~/.cache/zk2kafka")).expanduser(),
                               zk_heap="3g")
        hosts = cluster.start_zookeeper()
    else:
        hosts = args.zookeeper
    results = []
    try:
        t0 = time.perf_counter()
        total = build_tree(hosts, args.groups, args.topics, args.partitions)
        print(f"built {total:,} offset znodes in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        if not args.skip_naive:
            t0 = time.perf_counter()
            assert naive_walk(hosts) == total
            seconds = time.perf_counter() - t0
            results.append({"method": "naive kazoo walk (sequential get_children + get)", "seconds": seconds,
                            "per_second": total / seconds, "peak_mib": None})
        with tempfile.TemporaryDirectory() as state:
            for readers in args.readers:
                result, seconds, peak = run_scan(hosts, state, readers)
                assert result["offsets"] == total, result
                results.append({"method": f"zk2kafka scan --zk-readers {readers}", "seconds": seconds,
                                "per_second": total / seconds, "peak_mib": peak})
    finally:
        if cluster is not None:
            cluster.stop()
    base = results[0]["per_second"] if not args.skip_naive else None
    print(f"\n{total:,} offsets ({args.groups} groups x {args.topics} topics x {args.partitions} partitions), "
          f"{os.cpu_count()} cores\n")
    print("| method | wall time | znodes/s | vs naive | peak RSS |\n| --- | ---: | ---: | ---: | ---: |")
    for r in results:
        ratio = f"{r['per_second'] / base:.1f}x" if base else "-"
        peak = f"{r['peak_mib']} MiB" if r["peak_mib"] is not None else "-"
        print(f"| {r['method']} | {r['seconds']:.1f} s | {r['per_second']:,.0f} | {ratio} | {peak} |")
    return results


if __name__ == "__main__":
    main()
