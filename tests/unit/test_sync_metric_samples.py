"""The per-group series are built without add_metric (a quarter of a scrape of 10,000 groups): the samples are
the ones add_metric makes, so /metrics and the shards' merged series stay the same, in both exposition formats."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from migrate.sync.metrics import STATES, SyncMetrics, state_of
from migrate.sync.state import GroupState

GROUPS = {"b-group": GroupState(lag=(2, 40), last_mirrored=1.7e9 + 0.25, offsets_mirrored=12),
          'we"ird\\na\nme é': GroupState(stopped="taken over", stop_reason="taken_over"),
          "a-ready": GroupState(ready=True, offsets_mirrored=2**40)}


def by_add_metric() -> list:
    state = GaugeMetricFamily("zk2kafka_sync_group_state", "", labels=["group", "state"])
    last = GaugeMetricFamily("zk2kafka_sync_group_last_mirrored_timestamp_seconds", "", labels=["group"])
    mirrored = CounterMetricFamily("zk2kafka_sync_group_offsets_mirrored", "", labels=["group"])
    rows = GaugeMetricFamily("zk2kafka_sync_group_lag_partitions", "", labels=["group"])
    sums = GaugeMetricFamily("zk2kafka_sync_group_lag_offsets", "", labels=["group"])
    for name in sorted(GROUPS):
        group = GROUPS[name]
        for s in STATES:
            state.add_metric([name, s], 1 if s == state_of(group) else 0)
        last.add_metric([name], group.last_mirrored)
        mirrored.add_metric([name], group.offsets_mirrored)
        differ, total = group.lag if group.stopped is None else (0, 0)
        rows.add_metric([name], differ)
        sums.add_metric([name], total)
    return [state, last, mirrored, rows, sums]


def test_the_per_group_samples_are_add_metrics():
    families = {f.name: f for f in SyncMetrics(lambda: GROUPS).registry.collect()}
    for expected in by_add_metric():
        got = families[expected.name]
        assert got.samples == expected.samples and got.type == expected.type

    class Only:
        def __init__(self, families):
            self.families = families

        def collect(self):
            return self.families

    mine = [families[f.name] for f in by_add_metric()]
    for encode in (generate_latest, generate_openmetrics):
        assert [line for line in encode(Only(mine)).splitlines() if not line.startswith(b"#")] == \
            [line for line in encode(Only(by_add_metric())).splitlines() if not line.startswith(b"#")]
