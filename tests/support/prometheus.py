"""A real Prometheus for the tests (Debian's `prometheus` package: /usr/bin/prometheus and promtool),
on loopback, with a config and rules of the test's; read through its HTTP API.

The rules and the dashboard the tests check are docker/monitoring/'s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from support.cli import ROOT
from support.wait import free_port, wait_for

MONITORING = ROOT / "docker" / "monitoring"
RULES = MONITORING / "zk2kafka-sync.rules.yml"
PROMTOOL_TESTS = MONITORING / "tests" / "zk2kafka-sync.test.yml"
JOB = "zk2kafka-sync"
# renew's, after ZooKeeper: its own job, rules and promtool tests.
RENEW_RULES = MONITORING / "zk2kafka-renew.rules.yml"
RENEW_PROMTOOL_TESTS = MONITORING / "tests" / "zk2kafka-renew.test.yml"
RENEW_JOB = "zk2kafka-renew"
# Each rules file and its promtool tests.
RULE_FILES = {RULES: PROMTOOL_TESTS, RENEW_RULES: RENEW_PROMTOOL_TESTS}


def require(tool: str) -> str:
    """The binary, or skip; on CI its absence is a failure, not a skip."""
    found = shutil.which(tool)
    if found is None:
        message = f"{tool} is not installed (apt-get install prometheus)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def rules(path: Path = RULES) -> dict:
    return yaml.safe_load(path.read_text())


def alert_rules(path: Path = RULES) -> list[dict]:
    return [r for g in rules(path)["groups"] for r in g["rules"] if "alert" in r]


def without_annotations(doc: dict) -> dict:
    """The rules with no annotations: promtool's unit tests compare annotations whole."""
    return {"groups": [{**g, "rules": [{k: v for k, v in r.items() if k != "annotations"}
                                       for r in g["rules"]]} for g in doc["groups"]]}


def promtool_test(doc: dict, folder: Path, path: Path = RULES) -> subprocess.CompletedProcess:
    """`promtool test rules` of docker/monitoring/tests/ against the rules `doc` of the rules
    file `path`."""
    tests = RULE_FILES[path]
    (folder / path.name).write_text(yaml.safe_dump(without_annotations(doc), sort_keys=False))
    shutil.copy(tests, folder / tests.name)
    return subprocess.run([require("promtool"), "test", "rules", tests.name], cwd=folder,
                          capture_output=True, text=True, timeout=300)


def with_short_for(doc: dict, seconds: int) -> dict:
    """The rules with every `for:` of `seconds`: an alert goes pending at once, firing soon after,
    so a test sees each go through both states in seconds rather than minutes or days."""
    return {"groups": [{**g, "rules": [{**r, "for": f"{seconds}s"} if "for" in r or "alert" in r
                                       else r for r in g["rules"]]} for g in doc["groups"]]}


class Prometheus:
    """`prometheus` on 127.0.0.1 scraping `targets` as `job` (zk2kafka-sync) every `scrape`
    seconds (a scrape may wait for the service's Kafka probe: more than a second on a slow host)
    and evaluating `doc`'s rules every second, its TSDB under `home`."""

    def __init__(self, home: Path, targets: list[str], doc: dict, scrape: int = 2,
                 job: str = JOB):
        home.mkdir(parents=True, exist_ok=True)
        (home / "rules.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
        config = {"global": {"scrape_interval": f"{scrape}s", "evaluation_interval": "1s",
                             "scrape_timeout": f"{scrape}s"},
                  "rule_files": [str(home / "rules.yml")],
                  "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}]}
        (home / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        self.address = f"127.0.0.1:{free_port()}"
        self.log = home / "prometheus.log"
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                [require("prometheus"), f"--config.file={home / 'prometheus.yml'}",
                 f"--storage.tsdb.path={home / 'data'}", f"--web.listen-address={self.address}",
                 "--web.enable-lifecycle"], stdout=out, stderr=subprocess.STDOUT)
        wait_for("Prometheus ready", lambda: self._ready(), timeout=60)

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"prometheus exited: {self.log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://{self.address}/-/ready", timeout=5) as answer:
                return answer.status == 200
        except OSError:
            return False

    def api(self, path: str, **params: str) -> dict | list:
        url = f"http://{self.address}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """An instant query's result: [{metric: {...}, value: [time, "value"]}]."""
        data = self.api("query", query=expr)
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def query_range(self, expr: str, seconds: int) -> list[dict]:
        now = time.time()
        return self.api("query_range", query=expr, start=str(now - seconds), end=str(now),
                        step="1")["result"]

    def alerts(self) -> list[dict]:
        """The alerts pending or firing now: [{labels, annotations, state, ...}]."""
        return self.api("alerts")["alerts"]

    def alert(self, name: str, states=("pending", "firing"), **labels: str) -> dict | None:
        """The alert `name` whose labels include `labels`, in one of `states`, or None."""
        for alert in self.alerts():
            if (alert["labels"].get("alertname") == name and alert["state"] in states
                    and all(alert["labels"].get(k) == v for k, v in labels.items())):
                return alert
        return None

    def wait_alert(self, name: str, states=("pending", "firing"), timeout: float = 60,
                   **labels: str) -> dict:
        return wait_for(f"alert {name} {labels} {'/'.join(states)}",
                        lambda: self.alert(name, states, **labels), timeout=timeout)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
