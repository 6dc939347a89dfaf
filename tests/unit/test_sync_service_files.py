"""The files that run sync as a service (docker/zk2kafka-sync.service, compose's zk2kafka-sync) say
what runbooks/cutover-rolling.md says: restart on failure, a state directory kept across restarts,
the metrics endpoint, and a command line the real CLI parses as a writing sync."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

import yaml

from migrate import cli
from migrate.options import OPTIONS

ROOT = Path(__file__).parents[2]
UNIT = ROOT / "docker" / "zk2kafka-sync.service"
COMPOSE = ROOT / "docker" / "compose.yaml"


def parsed(argv: list[str]):
    namespace = cli.build_parser().parse_args(argv)
    assert namespace.command == "sync" and namespace.execute, argv
    return namespace


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str   # systemd keys are case-sensitive
    parser.read_string(UNIT.read_text())
    return parser


def test_the_unit_restarts_sync_on_failure_and_keeps_its_state():
    service = unit()["Service"]
    assert service["Restart"] == "on-failure"
    executable, *argv = shlex.split(service["ExecStart"])
    assert executable.endswith("/zk2kafka")
    namespace = parsed(argv)
    assert namespace.metrics_address
    state = dict(line.split("=", 1) for line in service.get("Environment", "").split())
    assert state["ZK2KAFKA_STATE_DIR"] == f"/var/lib/{service['StateDirectory']}"
    assert service["KillSignal"] == "SIGTERM"   # sync's clean stop
    assert "StartLimitBurst" in unit()["Unit"]   # [Service] would ignore it


def test_the_units_variables_are_the_clis():
    known = {o.env_var for o in OPTIONS if o.env_var}
    used = {word.split("=")[0] for line in UNIT.read_text().splitlines()
            for word in line.lstrip("# ").split() if word.startswith("ZK2KAFKA_") and "=" in word}
    assert used and used <= known, sorted(used - known)


def test_the_compose_service_runs_a_writing_sync_with_health():
    service = yaml.safe_load(COMPOSE.read_text())["services"]["zk2kafka-sync"]
    assert service["restart"] == "on-failure"
    assert service["profiles"] == ["sync"]   # a plain `up` starts no writer
    namespace = parsed([str(c) for c in service["command"]])
    port = namespace.metrics_address.rpartition(":")[2]
    assert any(p.endswith(f":{port}") for p in service["ports"])
    assert f"127.0.0.1:{port}/healthz" in " ".join(service["healthcheck"]["test"])
    tool = yaml.safe_load(COMPOSE.read_text())["services"]["zk2kafka"]
    assert service["volumes"] == tool["volumes"]   # one journal for the whole change
