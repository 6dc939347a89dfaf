"""Render what docker/monitoring/ ships from its sources:

- zk2kafka-sync.dashboard.json, the Grafana dashboard of a cutover, built here with Grafana's
  own typed builders (the `grafana-foundation-sdk` package, in the dev extras), so that its shape is
  the schema's by construction;
- zk2kafka-sync.prometheusrule.yaml and zk2kafka-renew.prometheusrule.yaml, the rules of
  zk2kafka-sync.rules.yml and zk2kafka-renew.rules.yml as Kubernetes PrometheusRules for the
  Prometheus Operator.

    .venv/bin/python docker/monitoring/render.py           # write both
    .venv/bin/python docker/monitoring/render.py --check   # exit 1 if either is stale

tests/unit/test_alert_rules.py fails when either file differs from what this renders, and
tests/integration/test_sync_alerts.py evaluates every query of the dashboard (`queries()`)
against a real Prometheus scraping a real sync.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from grafana_foundation_sdk.builders import dashboard as d
from grafana_foundation_sdk.builders import prometheus, stat, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

HERE = Path(__file__).resolve().parent
RULES = HERE / "zk2kafka-sync.rules.yml"
DASHBOARD = HERE / "zk2kafka-sync.dashboard.json"
PROMETHEUS_RULE = HERE / "zk2kafka-sync.prometheusrule.yaml"
RENEW_RULES = HERE / "zk2kafka-renew.rules.yml"
RENEW_PROMETHEUS_RULE = HERE / "zk2kafka-renew.prometheusrule.yaml"
UID = "zk2kafka-sync"
DATASOURCE = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")

# (title, [(expr, legend)], unit) of each time series panel, in the dashboard's order.
SERIES = [
    ("Groups by state", [("sum by (state) (zk2kafka_sync_groups)", "{{state}}")], "none"),
    ("Ready against switched", [
        ('sum(zk2kafka_sync_groups{state="ready"})', "ready, not switched"),
        ('sum(zk2kafka:sync_groups_stopped:by_reason{reason="kafka_members"})', "switched")],
     "none"),
    ("Lag: ZooKeeper moved, Kafka not yet", [
        ("zk2kafka:sync_lag_partitions:sum", "partitions"),
        ("sum(zk2kafka_sync_lag_offsets)", "offsets")], "none"),
    ("Stopped groups by reason", [
        ("zk2kafka:sync_groups_stopped:by_reason", "{{reason}}")], "none"),
    ("Offsets mirrored and commits, per second", [
        ("sum(rate(zk2kafka_sync_offsets_mirrored_total[5m]))", "offsets mirrored"),
        ("sum(rate(zk2kafka_sync_commits_total[5m]))", "commits")], "ops"),
    # No error yet is no series: 0 instead of an empty panel.
    ("Commit errors, per second", [
        ("zk2kafka:sync_commit_errors:rate5m or on() vector(0)", "{{error}}")], "ops"),
    ("/healthz checks (1: passing)", [
        ("zk2kafka_sync_health_check_ok", "{{check}}")], "none"),
    ("ZooKeeper sessions lost and re-scan time", [
        ("increase(zk2kafka_sync_zookeeper_sessions_lost_total[1h])", "sessions lost, last hour"),
        ("rate(zk2kafka_sync_rescan_duration_seconds_sum[5m])"
         " / rate(zk2kafka_sync_rescan_duration_seconds_count[5m])", "seconds a re-scan")],
     "none"),
]
# (title, expr) of each stat at the top.
STATS = [
    ("Mirroring", 'sum(zk2kafka_sync_groups{state="mirroring"})'),
    ("Ready to switch", 'sum(zk2kafka_sync_groups{state="ready"})'),
    ("Switched", 'sum(zk2kafka:sync_groups_stopped:by_reason{reason="kafka_members"})'),
    ("Stopped for another reason",
     'sum(zk2kafka:sync_groups_stopped:by_reason{reason!="kafka_members"})'),
]
# (column, expr) of the per-group table: instant queries, merged on the group.
GROUP_TABLE = [
    ("state", "max by (group, state) (zk2kafka_sync_group_state == 1)"),
    ("lag (partitions)", "max by (group) (zk2kafka_sync_group_lag_partitions)"),
    ("offsets mirrored", "max by (group) (zk2kafka_sync_group_offsets_mirrored_total)"),
    ("seconds since last mirrored",
     "max by (group) (time() - (zk2kafka_sync_group_last_mirrored_timestamp_seconds > 0))"),
    ("seconds until Kafka deletes its offsets",
     "max by (group) (zk2kafka:sync_group_offsets_expire:seconds_left)"),
]


def queries() -> list[str]:
    """Every PromQL expression of the dashboard."""
    return ([e for _, e in STATS] + [e for _, targets, _ in SERIES for e, _ in targets]
            + [e for _, e in GROUP_TABLE])


def _ref(i: int) -> str:
    return chr(ord("A") + i)


def build() -> dict:
    board = (d.Dashboard("zk2kafka sync: the cutover")
             .uid(UID)
             .tags(["zk2kafka", "kafka", "zookeeper"])
             .description("A rolling cutover's progress as `zk2kafka sync --metrics-address`"
                          " exports it (docs/sync.md, \"Watching it\").")
             .time("now-6h", "now")
             .refresh("1m")
             .tooltip(dm.DashboardCursorSync.CROSSHAIR)
             .with_variable(d.DatasourceVariable("datasource").label("Prometheus")
                            .type("prometheus")))
    for title, expr in STATS:
        board = board.with_panel(
            stat.Panel().title(title).datasource(DATASOURCE).height(4).span(6)
            .with_target(prometheus.Dataquery().expr(expr).instant().ref_id("A")))
    for title, targets, unit in SERIES:
        panel = (timeseries.Panel().title(title).datasource(DATASOURCE).height(8).span(12)
                 .unit(unit).min(0))
        for i, (expr, legend) in enumerate(targets):
            panel = panel.with_target(prometheus.Dataquery().expr(expr).legend_format(legend)
                                      .range().ref_id(_ref(i)))
        board = board.with_panel(panel)
    groups = (table.Panel().title("Groups").datasource(DATASOURCE).height(12).span(24)
              .description("One row a group (dropped by --no-group-metrics); the state, lag,"
                           " offsets mirrored, time since Kafka last took a change, and for a"
                           " group Kafka holds with no member, time until it deletes its"
                           " offsets.")
              .with_transformation(dm.DataTransformerConfig(id_val="merge", options={}))
              .with_transformation(dm.DataTransformerConfig(
                  id_val="organize",
                  options={"excludeByName": {"Time": True, "Value #A": True},
                           "renameByName": {f"Value #{_ref(i)}": column
                                            for i, (column, _) in enumerate(GROUP_TABLE)}})))
    for i, (_, expr) in enumerate(GROUP_TABLE):
        groups = groups.with_target(prometheus.Dataquery().expr(expr).instant()
                                    .format(PromQueryFormat.TABLE).ref_id(_ref(i)))
    board = board.with_panel(groups)
    return json.loads(json.dumps(board.build(), cls=JSONEncoder))


def prometheus_rule(path: Path = RULES) -> dict:
    """A rules file as a PrometheusRule (monitoring.coreos.com/v1), named as the file."""
    rules = yaml.safe_load(path.read_text())
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": path.name.removesuffix(".rules.yml"),
                         "labels": {"app.kubernetes.io/name": "zk2kafka"}},
            "spec": rules}


def rendered() -> dict[Path, str]:
    def header(path: Path) -> str:
        return (f"# Rendered by docker/monitoring/render.py from {path.name}: edit that"
                " file, then run\n# `.venv/bin/python docker/monitoring/render.py`.\n")

    return {DASHBOARD: json.dumps(build(), indent=2, sort_keys=True) + "\n",
            **{rule: header(path) + yaml.safe_dump(prometheus_rule(path), sort_keys=False,
                                                   width=100)
               for path, rule in ((RULES, PROMETHEUS_RULE),
                                  (RENEW_RULES, RENEW_PROMETHEUS_RULE))}}


def main(argv: list[str]) -> int:
    stale = [path for path, text in rendered().items()
             if not path.exists() or path.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path.name} is stale: run docker/monitoring/render.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in rendered().items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
