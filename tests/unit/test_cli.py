"""The CLI is a thin shell: every command is registered, errors become exit codes, nothing pretends to work."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from migrate import cli, commands
from migrate.durations import exact_duration
from migrate.errors import ConfigError, NothingFound
from migrate.options import OPTIONS

DESIGN_COMMANDS = {"scan", "diff", "migrate", "verify", "sync", "renew", "ready-for-kraft", "rollback", "status",
                   "sandbox"}


def test_every_command_of_the_design_is_registered():
    assert set(cli.COMMANDS) == DESIGN_COMMANDS


@pytest.mark.parametrize("command", sorted(DESIGN_COMMANDS))
def test_help_of_each_command_lists_its_options(command, capsys):
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--zookeeper", "--bootstrap-server", "--command-config", "--state-dir", "exit codes"):
        assert flag in out
    if command == "migrate":
        for flag in ("--execute", "--resume", "--on-conflict", "--out-of-range", "--metadata", "--no-zk-write"):
            assert flag in out
    if command == "sync":
        for flag in ("--execute", "--rescan-every", "--renew-every", "--stop-after"):
            assert flag in out
    assert "ZK2KAFKA_ZOOKEEPER" in out


def test_sync_needs_both_stores_and_takes_durations(capsys, tmp_path):
    assert cli.main(["sync", "--state-dir", str(tmp_path)]) == 2
    assert "--zookeeper is required" in capsys.readouterr().err
    assert cli.main(["sync", "--zookeeper", "127.0.0.1:1", "--bootstrap-server", "127.0.0.1:1",
                     "--renew-every", "soon", "--state-dir", str(tmp_path)]) == 2
    assert ("zk2kafka sync: error: argument --renew-every: expected a duration of 1ms or more, like 500ms, 1.5s, "
            "30s, 5m, 6h or 1d (a bare number is seconds), got 'soon'") in capsys.readouterr().err


@pytest.mark.parametrize("flag", sorted(cli.DURATION_FLAGS))
@pytest.mark.parametrize("value", ["-5s", "0", "0s", "-0.5", "-.5m", "soon", "5y", "1e400", "1.5.s"])
def test_every_duration_flag_refuses_a_bad_duration_with_one_clear_usage_error(capsys, tmp_path, flag, value):
    # -5s is a duration refused, not argparse's "expected one argument" (a value taken for a flag).
    command = next(o.commands[0] for o in OPTIONS if o.cli_flag == flag)
    assert cli.main([command, flag, value, "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"error: argument {flag}: expected a duration of 1ms or more, like 500ms, 1.5s" in err
    assert f"got {value!r}" in err and "expected one argument" not in err


@pytest.mark.parametrize("argv, floor, why", [
    *[([o.commands[-1], o.cli_flag, "42ms"], o.floor, o.floor_why) for o in OPTIONS if o.floor is not None],
    (["sandbox", "v0-client", "start", "--group", "g", "--topic", "t", "--every", "42ms"], 0.1,
     "more often than ten times a second it only loads the sandbox")])
def test_a_pacing_duration_below_its_floor_is_one_usage_error_saying_the_floor_and_why(capsys, tmp_path, argv,
                                                                                       floor, why):
    # 42ms typed for 42m: refused before anything is reached, with the least it takes and why.
    assert cli.main([*argv, "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    flag = argv[-2]
    assert f"error: argument {flag}: expected {exact_duration(floor)} or more, got '42ms': " in err, err
    assert why in err and "Traceback" not in err and len(err.strip().splitlines()) == 2, err
    assert list(tmp_path.iterdir()) == []   # nothing created


@pytest.mark.parametrize("address, says", [("127.0.0.1:99999", "expected HOST:PORT"), ("in-use", "cannot listen")])
def test_a_metrics_address_is_checked_before_any_store_is_waited_for(capsys, tmp_path, address, says):
    # ZooKeeper refuses every connection: sync would wait its 15 s for it before anything else.
    with socket.create_server(("127.0.0.1", 0)) as taken:
        if address == "in-use":
            address = f"127.0.0.1:{taken.getsockname()[1]}"
        begun = time.monotonic()
        code = cli.main(["sync", "--execute", "--zookeeper", "127.0.0.1:1", "--bootstrap-server", "127.0.0.1:1",
                         "--metrics-address", address, "--state-dir", str(tmp_path)])
    assert time.monotonic() - begun < 5
    err = capsys.readouterr().err
    assert code == 2 and "--metrics-address" in err and says in err, err
    assert not (tmp_path / "journal.sqlite").exists() and not (tmp_path / "journal.lock").exists()


def test_a_flag_after_a_duration_flag_is_still_a_flag(capsys, tmp_path):
    # Only a value that reads as a signed number is joined to the duration flag before it.
    assert cli.main(["ready-for-kraft", "--quiet-for", "--json", "--state-dir", str(tmp_path)]) == 2
    assert "argument --quiet-for: expected one argument" in capsys.readouterr().err


def test_missing_required_option_names_flag_and_variable(capsys, tmp_path):
    assert cli.main(["scan", "--state-dir", str(tmp_path)]) == 2
    assert "--zookeeper is required for this command or set ZK2KAFKA_ZOOKEEPER" in capsys.readouterr().err


def test_usage_error_exits_2(capsys):
    assert cli.main(["scan", "--no-such-flag"]) == 2
    assert cli.main([]) == 2
    assert "usage:" in capsys.readouterr().err


def test_configuration_error_exits_2_with_one_line(capsys):
    assert cli.main(["scan", "--zk-root", "relative"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--zk-root must be an absolute" in err


def test_environment_feeds_options(monkeypatch, capsys):
    monkeypatch.setenv("ZK2KAFKA_BOOTSTRAP_SERVER", "not-a-host-port")
    assert cli.main(["diff"]) == 2
    assert "'not-a-host-port' is not host:port" in capsys.readouterr().err


@pytest.mark.parametrize("error, code", [
    (NothingFound("verify", "zk:2181/consumers", "every group", exit_code=3), 3), (ConfigError("bad"), 2),
                                         (KeyboardInterrupt(), 130), (RuntimeError("boom"), 1),
])
def test_one_place_maps_errors_to_exit_codes(monkeypatch, error, code, capsys):
    def fail(*_args):
        raise error
    monkeypatch.setattr(commands, "run", fail)
    assert cli.main(["verify"]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("zk2kafka: ")


def test_debug_shows_the_traceback(monkeypatch, capsys):
    def fail(*_args):
        raise RuntimeError("boom")
    monkeypatch.setattr(commands, "run", fail)
    assert cli.main(["verify", "--debug"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "unexpected RuntimeError: boom" in err


def test_results_go_to_stdout_as_text_or_json(monkeypatch, capsys):
    monkeypatch.setattr(commands, "run", lambda *_: commands.Result("run=r1 report=x", {"run": "r1"}))
    assert cli.main(["scan"]) == 0
    assert capsys.readouterr().out == "run=r1 report=x\n"
    assert cli.main(["scan", "--json"]) == 0
    assert capsys.readouterr().out.strip() == '{\n  "run": "r1"\n}'


def test_python_dash_m_runs_the_same_cli():
    done = subprocess.run([sys.executable, "-m", "migrate", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("zk2kafka ")


def test_global_options_are_taken_before_the_command_as_after_it():
    parser = cli.build_parser()
    before = vars(parser.parse_args(["--zookeeper", "zk:2181/kafka", "--group", "billing", "-q", "scan"]))
    after = vars(parser.parse_args(["scan", "--zookeeper", "zk:2181/kafka", "--group", "billing", "-q"]))
    assert before == after == {"command": "scan", "zookeeper": "zk:2181/kafka", "groups": ["billing"],
                               "quiet": True}
    # Given on both sides, the one after the command wins; command options before the command are refused.
    both = vars(parser.parse_args(["--state-dir", "a", "diff", "--state-dir", "b"]))
    assert both["state_dir"] == "b"
    with pytest.raises(SystemExit):
        parser.parse_args(["--execute", "migrate"])


def test_global_option_before_the_command_reaches_the_settings(capsys):
    assert cli.main(["--bootstrap-server", "not-a-host-port", "diff"]) == 2
    assert "'not-a-host-port' is not host:port" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["migrate", *prefix] for prefix in (["--e"], ["--ex"], ["--exe"], ["--exec"], ["--execu"], ["--execut"])
] + [["rollback", "R", "--exec"], ["sync", "--exec"], ["--exec", "migrate"], ["migrate", "--res", "R"],
     ["migrate", "--pla", "P"], ["verify", "--ru", "R"], ["migrate", "--state", "d"]])
def test_no_flag_is_taken_abbreviated(argv, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err and "did you mean --" in err


def test_every_parser_refuses_abbreviations():
    parser = cli.build_parser()
    assert not parser.allow_abbrev and parser.commands
    assert all(not sub.allow_abbrev for sub in parser.commands.values())


def test_an_unknown_flag_is_refused_with_the_commands_usage_and_the_flag_meant(capsys):
    assert cli.main(["migrate", "--exeucte", "--group", "g"]) == 2
    usage, error = capsys.readouterr().err.splitlines()
    assert usage.startswith("usage: zk2kafka migrate ")
    assert error == "zk2kafka migrate: error: unrecognized arguments: --exeucte (did you mean --execute?)"
    assert cli.main(["rollback", "R", "--dry-run"]) == 2
    assert "(without --execute every command is a dry run)" in capsys.readouterr().err


def test_an_unknown_config_key_is_refused_with_the_commands_usage(tmp_path, capsys):
    config = tmp_path / "change.toml"
    config.write_text('bootstrap_servers = "kafka:9092"\n')
    assert cli.main(["diff", "--config", str(config)]) == 2
    usage, error = capsys.readouterr().err.splitlines()
    assert usage.startswith("usage: zk2kafka diff ")
    assert "unknown option 'bootstrap_servers' (did you mean 'bootstrap-server'?); known: " in error


@pytest.mark.parametrize("command", ["migrate", "sync", "rollback", "verify"])
def test_help_shows_the_commands_own_options_before_the_global_ones(command, capsys):
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.index(f"{command} options:") < out.index("global options:")


def test_help_shows_durations_as_the_flag_takes_them(capsys):
    assert cli.main(["migrate", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: 24h)" in out and "86400" not in out
