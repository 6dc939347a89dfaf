"""The files that run sync and renew as services (docker/zk2kafka-sync.service,
docker/zk2kafka-renew.service, compose's zk2kafka-sync and zk2kafka-renew) say what the runbooks
say: restart on failure, the one state directory kept across restarts, the metrics endpoint, and a
command line the real CLI parses as a writing sync, or a renew that keeps running; the settings
the real CLI takes."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

import pytest
import yaml

from migrate import cli
from migrate.options import OPTIONS
from migrate.settings import load_settings

ROOT = Path(__file__).parents[2]
UNITS = {"sync": ROOT / "docker" / "zk2kafka-sync.service",
         "renew": ROOT / "docker" / "zk2kafka-renew.service"}
COMPOSE = ROOT / "docker" / "compose.yaml"


def parsed(argv: list[str], command: str):
    namespace = cli.build_parser().parse_args(argv)
    assert namespace.command == command and namespace.execute, argv
    if command == "renew":   # renews every period, as a service; floors and all, as settings read it
        flags = {k: v for k, v in vars(namespace).items() if k in {o.name for o in OPTIONS}}
        assert load_settings(flags, environ={}).renew_every >= 60
    return namespace


def unit(command: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str   # systemd keys are case-sensitive
    parser.read_string(UNITS[command].read_text())
    return parser


@pytest.mark.parametrize("command", sorted(UNITS))
def test_the_unit_restarts_the_service_on_failure_and_keeps_its_state(command):
    service = unit(command)["Service"]
    assert service["Restart"] == "on-failure"
    executable, *argv = shlex.split(service["ExecStart"])
    assert executable.endswith("/zk2kafka")
    namespace = parsed(argv, command)
    assert namespace.metrics_address
    state = dict(line.split("=", 1) for line in service.get("Environment", "").split())
    assert state["ZK2KAFKA_STATE_DIR"] == f"/var/lib/{service['StateDirectory']}"
    assert service["KillSignal"] == "SIGTERM"   # the service's clean stop
    assert "StartLimitBurst" in unit(command)["Unit"]   # [Service] would ignore it


def test_renew_keeps_sync_s_state_directory_on_another_port():
    # The change's journal says what zk2kafka wrote: renew reads the one sync wrote.
    sync, renew = (unit(c)["Service"] for c in ("sync", "renew"))
    assert sync["StateDirectory"] == renew["StateDirectory"]
    ports = {parsed(shlex.split(s["ExecStart"])[1:], c).metrics_address
             for c, s in (("sync", sync), ("renew", renew))}
    assert len(ports) == 2


@pytest.mark.parametrize("command", sorted(UNITS))
def test_the_units_variables_are_the_clis(command):
    known = {o.env_var for o in OPTIONS if o.env_var}
    used = {word.split("=")[0] for line in UNITS[command].read_text().splitlines()
            for word in line.lstrip("# ").split() if word.startswith("ZK2KAFKA_") and "=" in word}
    assert used and used <= known, sorted(used - known)


@pytest.mark.parametrize("command, profile", [("sync", "sync"), ("renew", "renew")])
def test_the_compose_service_runs_a_writing_service_with_health(command, profile):
    service = yaml.safe_load(COMPOSE.read_text())["services"][f"zk2kafka-{command}"]
    assert service["restart"] == "on-failure"
    assert service["profiles"] == [profile]   # a plain `up` starts no writer
    namespace = parsed([str(c) for c in service["command"]], command)
    port = namespace.metrics_address.rpartition(":")[2]
    assert any(p.endswith(f":{port}") for p in service["ports"])
    assert f"127.0.0.1:{port}/healthz" in " ".join(service["healthcheck"]["test"])
    tool = yaml.safe_load(COMPOSE.read_text())["services"]["zk2kafka"]
    assert service["volumes"] == tool["volumes"]   # one journal for the whole change
    if command == "renew":   # after ZooKeeper: it is given none
        assert "ZK2KAFKA_ZOOKEEPER" not in service["environment"]
        assert "zookeeper" not in service["depends_on"]
