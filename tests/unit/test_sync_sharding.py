"""The pure parts of `sync --writers N` and of sliced re-scans: which shard follows a group, the
shards' series and figures merged as one sync's, and which groups a re-scan reads when. The
processes themselves run on the sandbox (tests/integration/test_sync_shards.py,
tests/integration/test_sync_metrics.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from migrate.sync.follower_shards import Merged, merged_status, shard_of
from migrate.sync.state import Sweep, status_line


def test_a_group_keeps_its_shard_in_every_process():
    # Not Python's own hash of a str, which is salted per process.
    names = [f"group-{i}" for i in range(50)]
    here = [shard_of(g, 3) for g in names]
    code = ("from migrate.sync.follower_shards import shard_of;"
            f"print([shard_of(g, 3) for g in {names!r}])")
    for seed in ("1", "2"):
        there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        assert there.strip() == str(here)
    assert set(here) == {0, 1, 2}


def shard(mirrored: float, groups: dict[str, int], rescan: list[float]) -> list:
    """One shard's collected families: a counter, a histogram, a per-group gauge."""
    registry = CollectorRegistry()
    Counter("zk2kafka_sync_offsets_mirrored", "", registry=registry).inc(mirrored)
    histogram = Histogram("zk2kafka_sync_rescan_duration_seconds", "", buckets=(1.0, 10.0),
                          registry=registry)
    for seconds in rescan:
        histogram.observe(seconds)
    families = list(registry.collect())
    state = GaugeMetricFamily("zk2kafka_sync_group_lag_offsets", "", labels=["group"])
    for group, lag in groups.items():
        state.add_metric([group], lag)
    return [*families, state]


def samples(collector) -> dict[tuple, float]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_the_shards_series_merge_as_one_syncs():
    one = shard(3, {"a": 5}, [0.5, 20.0])
    two = shard(4, {"b": 7}, [2.0])
    merged = samples(Merged(lambda: [one, two]))
    assert merged[("zk2kafka_sync_offsets_mirrored_total", ())] == 7
    assert merged[("zk2kafka_sync_group_lag_offsets", (("group", "a"),))] == 5
    assert merged[("zk2kafka_sync_group_lag_offsets", (("group", "b"),))] == 7
    bucket = "zk2kafka_sync_rescan_duration_seconds_bucket"
    assert merged[(bucket, (("le", "1.0"),))] == 1
    assert merged[(bucket, (("le", "10.0"),))] == 2
    assert merged[(bucket, (("le", "+Inf"),))] == 3
    assert merged[("zk2kafka_sync_rescan_duration_seconds_count", ())] == 3
    assert merged[("zk2kafka_sync_rescan_duration_seconds_sum", ())] == 22.5
    created = [v for (name, _), v in merged.items() if name.endswith("_created")]
    assert created and all(v < 1e10 for v in created)   # the earliest time, not a sum


def test_no_shard_reported_yet_serves_no_series():
    assert samples(Merged(lambda: [])) == {}


def status(**fields) -> dict:
    return {"commits": 0, "offsets_mirrored": 0, "renewals": 0, "errors": 0, "rescans": 0,
            "last_change": None, "last_change_at": None, "groups_synced": [],
            "groups_ready": [], "groups_unmirrored": {}, "groups_stopped": {}, **fields}


def test_the_shards_figures_merge_as_one_syncs():
    one = status(commits=2, offsets_mirrored=5, rescans=3, groups_synced=["b", "c"],
                 groups_ready=["c"], last_change="b t-0 -> 5", last_change_at="2026-11-24T06:00:05Z",
                 groups_unmirrored={"b": {"t-1": "MALFORMED: x"}})
    two = status(commits=1, offsets_mirrored=1, rescans=2, groups_synced=["a"],
                 last_change="a t-0 -> 9", last_change_at="2026-11-24T06:00:09Z",
                 groups_stopped={"d": "taken over"})
    merged = merged_status([one, two], 2, 0.0)
    assert (merged["commits"], merged["offsets_mirrored"]) == (3, 6)
    assert merged["rescans"] == 2   # every shard finished two
    assert merged["groups_synced"] == ["a", "b", "c"]
    assert merged["groups_ready"] == ["c"]
    assert merged["groups_stopped"] == {"d": "taken over"}
    assert merged["last_change"] == "a t-0 -> 9"
    assert merged_status([one], 2, 0.0)["rescans"] == 0   # a shard not heard from yet
    line = status_line(merged)
    assert line.startswith("sync: 3 group(s) synced, 6 offset change(s) mirrored in 3 commit(s)")
    assert "1 row(s) it cannot mirror; stopped 1: d (taken over)" in line


def test_a_rescan_reads_its_groups_as_their_turn_comes():
    sweep = Sweep([f"g{i}" for i in range(10)], started=100.0, spread=10.0)
    assert sweep.due(100.0) == []
    assert sweep.due(102.5) == ["g0", "g1", "g2"]   # a quarter of the way: ceil(2.5)
    sweep.done = 3
    assert sweep.due(102.5) == []
    assert sweep.due(150.0) == [f"g{i}" for i in range(3, 10)]   # late: all that is left


def test_the_first_rescan_reads_every_group_at_once():
    assert Sweep(["a", "b"], started=100.0, spread=0.0).due(100.0) == ["a", "b"]
