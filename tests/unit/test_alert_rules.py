"""docker/monitoring/: the alert and recording rules pass `promtool check rules`, and its unit tests
(`promtool test rules`: each alert fires, resolves, and stays quiet while all is well), which fail
when the rules lose their `for:` windows; the PrometheusRule and the dashboard are what render.py
renders; every alert names its severity and its runbook section in docs/sync.md; and every series
the rules and the dashboard read is one sync exports, so a metric renamed or removed in sync fails
here. tests/integration/test_sync_alerts.py runs the same rules in a real Prometheus.
"""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from migrate.sync.expiry_clock import Expiry, ExpiryClock
from migrate.sync.metrics import STOP_REASONS, DryRun, SyncMetrics
from migrate.endpoint import HealthSeries
from migrate.renew.service import CHECKS as RENEW_CHECKS
from migrate.renew.service import RenewMetrics
from migrate.sync.service import CHECKS
from migrate.sync.state import GroupState
from migrate.sync.watch import ZkOffset

from support.prometheus import (MONITORING, RENEW_RULES, RULE_FILES, RULES, alert_rules, promtool_test,
                                require, rules)

ROOT = Path(__file__).resolve().parents[2]
RENDER = MONITORING / "render.py"
SYNC_DOC = ROOT / "docs" / "sync.md"
SERIES = re.compile(r"\bzk2kafka_sync_\w+")
RENEW_SERIES = re.compile(r"\bzk2kafka_renew_\w+")
# Each rules file, its PrometheusRule, and an alert its promtool tests see pending before firing.
SHIPPED = {RULES: (MONITORING / "zk2kafka-sync.prometheusrule.yaml", "ZK2KafkaMirroringBehind"),
           RENEW_RULES: (MONITORING / "zk2kafka-renew.prometheusrule.yaml", "ZK2KafkaRenewalFailing")}


def render():
    return runpy.run_path(str(RENDER))


@pytest.mark.parametrize("path", sorted(SHIPPED), ids=lambda p: p.name)
def test_promtool_checks_the_rules_and_the_prometheus_rule(tmp_path, path):
    promtool = require("promtool")
    spec = yaml.safe_load(SHIPPED[path][0].read_text())["spec"]
    (tmp_path / "operator.yml").write_text(yaml.safe_dump(spec))
    for checked in (path, tmp_path / "operator.yml"):
        done = subprocess.run([promtool, "check", "rules", str(checked)], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", sorted(SHIPPED), ids=lambda p: p.name)
def test_promtool_unit_tests_pass(tmp_path, path):
    done = promtool_test(rules(path), tmp_path, path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize("path", sorted(SHIPPED), ids=lambda p: p.name)
def test_the_promtool_unit_tests_fail_when_an_alert_loses_its_window(tmp_path, path):
    # The same tests against rules that alert at once: the pending and quiet cases must fail.
    doc = rules(path)
    for group in doc["groups"]:
        for rule in group["rules"]:
            rule.pop("for", None)
    done = promtool_test(doc, tmp_path, path)
    assert done.returncode != 0
    assert SHIPPED[path][1] in done.stdout + done.stderr


@pytest.mark.parametrize("path", sorted(SHIPPED), ids=lambda p: p.name)
def test_every_alert_is_tested_by_promtool(path):
    tested = set(re.findall(r"alertname: (\w+)", RULE_FILES[path].read_text()))
    assert {r["alert"] for r in alert_rules(path)} <= tested


def test_the_rendered_files_are_current():
    done = subprocess.run([sys.executable, str(RENDER), "--check"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("path", sorted(SHIPPED), ids=lambda p: p.name)
def test_the_prometheus_rule_holds_the_same_rules(path):
    rendered = yaml.safe_load(SHIPPED[path][0].read_text())
    assert rendered["kind"] == "PrometheusRule"
    assert rendered["apiVersion"] == "monitoring.coreos.com/v1"
    assert rendered["metadata"]["name"] == path.name.removesuffix(".rules.yml")
    assert rendered["spec"] == rules(path)


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


@pytest.mark.parametrize("path", sorted(SHIPPED), ids=lambda p: p.name)
def test_every_alert_has_a_severity_a_summary_and_its_own_runbook_section(path):
    anchors = _anchors(SYNC_DOC)
    for rule in alert_rules(path):
        name = rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        notes = rule["annotations"]
        assert notes["summary"] and notes["description"], name
        page, _, anchor = notes["runbook_url"].partition("#")
        assert page == "docs/sync.md" and anchor == name.lower(), notes["runbook_url"]
        assert anchor in anchors, f"{name}: docs/sync.md has no section #{anchor}"


def test_the_stopped_alert_covers_every_reason_but_a_switch_and_the_runbook_names_each():
    stopped = next(r for r in alert_rules() if r["alert"] == "ZK2KafkaGroupsStopped")
    assert 'reason!="kafka_members"' in stopped["expr"]
    section = SYNC_DOC.read_text().partition("#### ZK2KafkaGroupsStopped")[2].partition("####")[0]
    missing = [reason for reason in STOP_REASONS if f"`{reason}`" not in section]
    assert not missing, f"the ZK2KafkaGroupsStopped section does not explain: {missing}"


def exported() -> set[str]:
    """Every sample name sync's /metrics serves, from its real collectors over groups in every
    state, with each labelled counter counted once."""
    groups = {}
    for name, state in (("mirroring", {}), ("ready", {"ready": True}),
                        ("stopped", {"stopped": "why", "stop_reason": "taken_over"})):
        group = GroupState(**state)
        group.offsets[("orders", 0)] = ZkOffset(10, "/consumers/g/offsets/orders/0", 1, "offsets")
        groups[name] = group
    metrics = SyncMetrics(lambda: groups)
    metrics.commit_errors.labels("KafkaTimeoutError").inc()
    metrics.outages.labels("ConnectionLoss").inc()
    metrics.sessions_lost.inc()

    class Healthy:
        def checks(self):
            return dict.fromkeys(CHECKS)

    metrics.registry.register(HealthSeries(Healthy()))
    metrics.registry.register(DryRun(False))
    clock = ExpiryClock(None, lambda: groups, str, str, per_group=True)
    clock.halt.set()   # its reading thread ends at once: the last read is set here
    clock.last = Expiry({"ready": 1.0e9})
    metrics.registry.register(clock)
    text = generate_latest(metrics.registry).decode()
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples}


def test_every_series_the_rules_and_the_dashboard_read_is_one_sync_exports():
    read = set(SERIES.findall(RULES.read_text()))
    read |= {name for expr in render()["queries"]() for name in SERIES.findall(expr)}
    served = exported()
    assert read - served == set(), f"read but not exported by sync: {sorted(read - served)}"
    # What a rename looks like to this test: the old name is no longer served.
    assert "zk2kafka_sync_lag_partitions" in served and "zk2kafka_sync_lag_rows" not in served


def test_every_series_renew_s_rules_read_is_one_renew_exports():
    metrics = RenewMetrics(42 * 3600.0, 3)
    metrics.renewed(2, 1, 2)
    metrics.failed()

    class Healthy:
        def checks(self):
            return dict.fromkeys(RENEW_CHECKS)

    metrics.registry.register(HealthSeries(Healthy(), "renew"))
    text = generate_latest(metrics.registry).decode()
    served = {s.name for family in text_string_to_metric_families(text) for s in family.samples}
    read = set(RENEW_SERIES.findall(RENEW_RULES.read_text()))
    assert read and read - served == set(), f"read but not exported by renew: {sorted(read - served)}"
    assert ("zk2kafka_renew_health_check_ok" in served and "zk2kafka_renew_every_seconds" in served
            and "zk2kafka_renew_passes_total" in served)


def test_every_recording_rule_is_read_by_an_alert_and_the_dashboard():
    records = [r["record"] for g in rules()["groups"] for r in g["rules"] if "record" in r]
    alerts = " ".join(r["expr"] for r in alert_rules())
    queries = " ".join(render()["queries"]())
    for record in records:
        assert record in alerts, f"{record}: no alert reads it"
        assert record in queries, f"{record}: no panel reads it"


def test_the_dashboard_is_built_by_the_typed_library_and_reads_the_rules_records():
    board = render()["build"]()
    assert board["uid"] == "zk2kafka-sync"
    assert board["templating"]["list"][0]["type"] == "datasource"
    titles = [p["title"] for p in board["panels"]]
    for wanted in ("Groups by state", "Ready against switched", "Stopped groups by reason",
                   "Groups"):
        assert wanted in titles
    for panel in board["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]



# The plain configs, for a Prometheus without compose: each with its rules file and the unit file whose
# --metrics-address it scrapes.
PLAIN = {"prometheus.yml": (RULES, "zk2kafka-sync"), "prometheus-renew.yml": (RENEW_RULES, "zk2kafka-renew")}


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_the_plain_prometheus_config_checks_as_shipped_and_scrapes_as_the_rules_expect(tmp_path, name):
    # As a reader runs it: promtool on the shipped file, from another folder; then a copy of the two files.
    shipped = MONITORING / name
    rules_file, job = PLAIN[name]
    for config in (shipped, _copied(tmp_path, shipped, rules_file)):
        done = subprocess.run([require("promtool"), "check", "config", str(config)], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"SUCCESS: {rules_file.name}" in done.stdout or "SUCCESS: 1 rule files found" in done.stdout
    config = yaml.safe_load(shipped.read_text())
    assert config["rule_files"] == [rules_file.name]   # next to the config, wherever it is copied
    # The rules' windows assume a scrape and an evaluation every 15 s (Prometheus's default is a minute), and
    # a scrape waits up to 5 s for the service's Kafka probe.
    assert config["global"]["scrape_interval"] == config["global"]["evaluation_interval"] == "15s"
    assert int(config["global"]["scrape_timeout"].removesuffix("s")) > 5
    (scrape,) = config["scrape_configs"]
    assert scrape["job_name"] == job
    unit = (ROOT / "docker" / f"{job}.service").read_text()
    address = re.search(r"--metrics-address (\S+)", unit)[1]
    assert scrape["static_configs"][0]["targets"] == [address]


def _copied(folder: Path, config: Path, rules_file: Path) -> Path:
    copy = folder / "copy"
    copy.mkdir()
    for path in (config, rules_file):
        (copy / path.name).write_text(path.read_text())
    return copy / config.name


@pytest.mark.parametrize("service, prometheus_service, rules_file", [
    ("zk2kafka-sync", "prometheus", RULES), ("zk2kafka-renew", "prometheus-renew", RENEW_RULES)])
def test_compose_s_prometheus_scrapes_its_service_and_loads_its_rules(tmp_path, service, prometheus_service,
                                                                       rules_file):
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())["services"]
    watched, prometheus = compose[service], compose[prometheus_service]
    assert prometheus["profiles"] == watched["profiles"], "up with the service, never without"
    mounts = {target: source for source, target, *_ in (v.split(":") for v in prometheus["volumes"])}
    config = yaml.safe_load((ROOT / "docker" / mounts["/etc/prometheus/prometheus.yml"]).read_text())
    rules_in = config["rule_files"]
    assert [(ROOT / "docker" / mounts[r]).resolve() for r in rules_in] == [rules_file]
    job = config["scrape_configs"][0]
    address = watched["command"][watched["command"].index("--metrics-address") + 1]
    assert job["job_name"] == service
    assert job["static_configs"][0]["targets"] == [f"{service}:{address.rpartition(':')[2]}"]
    assert config["global"]["scrape_interval"] == "15s" and config["global"]["scrape_timeout"] == "10s"
    # promtool reads the config with the rules where the container has them.
    (tmp_path / "rules.yml").write_text(rules_file.read_text())
    config["rule_files"] = [str(tmp_path / "rules.yml")]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    done = subprocess.run([require("promtool"), "check", "config", str(tmp_path / "prometheus.yml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_provisions_grafana_with_the_dashboard_beside_sync():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())["services"]
    grafana = compose["grafana"]
    assert grafana["profiles"] == compose["zk2kafka-sync"]["profiles"], "up with sync, never without"
    mounts = {target: source for source, target, *_ in (v.split(":") for v in grafana["volumes"])}
    provider = yaml.safe_load((ROOT / "docker" / mounts[
        "/etc/grafana/provisioning/dashboards/zk2kafka.yml"]).read_text())["providers"][0]
    boards = [s for t, s in mounts.items() if t.startswith(provider["options"]["path"] + "/")]
    assert [(ROOT / "docker" / s).resolve() for s in boards] == [MONITORING /
                                                                 "zk2kafka-sync.dashboard.json"]
    source = yaml.safe_load((ROOT / "docker" / mounts[
        "/etc/grafana/provisioning/datasources/zk2kafka.yml"]).read_text())["datasources"][0]
    assert source["type"] == "prometheus" and source["isDefault"]
    assert source["url"] == "http://prometheus:9090"
