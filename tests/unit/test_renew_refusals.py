"""What `renew` and `rollback` refuse before any store is reached, each in one line naming what is
wrong, and creating nothing: a state dir that does not exist (a mistyped --state-dir), a state
dir with no journal, a rollback of a renew run (a renewal moves no offset), and --metrics-address
for a renewal that does not keep running. Kafka is never reached: its address answers nothing."""

from __future__ import annotations

import pytest

from migrate import cli
from migrate.journal.journal import Journal

NOWHERE = "127.0.0.1:1"   # refuses every connection


def run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(["renew", "--bootstrap-server", NOWHERE, *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("execute", [[], ["--execute"]])
def test_a_state_dir_that_does_not_exist_is_an_error_naming_it_and_nothing_is_created(capsys, tmp_path, execute):
    typo = tmp_path / "chg-1243"
    code, said = run(capsys, *execute, "--state-dir", str(typo))
    assert code == 2, said
    assert said.strip() == (f"zk2kafka: error: renew: --state-dir {typo}: no such directory: renew reads the "
                            "journal of the migrate and sync runs in the change's state dir; nothing was created")
    assert list(tmp_path.iterdir()) == []


def test_the_state_dir_from_the_environment_is_named_as_such(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ZK2KAFKA_STATE_DIR", str(tmp_path / "typo"))
    code, said = run(capsys, "--execute")
    assert code == 2 and f"--state-dir {tmp_path / 'typo'} (environment ZK2KAFKA_STATE_DIR): no such" in said


@pytest.mark.parametrize("execute", [[], ["--execute"]])
def test_a_state_dir_without_a_journal_has_nothing_to_renew_and_gets_none(capsys, tmp_path, execute):
    code, said = run(capsys, *execute, "--state-dir", str(tmp_path))
    assert code == 1 and "holds no offset a migrate or sync run wrote" in said, said
    assert list(tmp_path.iterdir()) == []   # no journal, no lock


@pytest.mark.parametrize("argv", [["--metrics-address", "127.0.0.1:0"],
                                  ["--execute", "--metrics-address", "127.0.0.1:0"]])
def test_metrics_are_served_only_by_a_renewal_that_keeps_running(capsys, tmp_path, argv):
    code, said = run(capsys, *argv, "--state-dir", str(tmp_path))
    assert code == 2 and ("--metrics-address serves a renewal that keeps running: give it with --execute and "
                          "--renew-every") in said, said
    assert list(tmp_path.iterdir()) == []


def test_a_metrics_address_from_the_environment_is_left_unserved_by_a_renewal_that_ends(capsys, tmp_path,
                                                                                        monkeypatch):
    # A shell set up for the service runs a dry run all the same.
    monkeypatch.setenv("ZK2KAFKA_METRICS_ADDRESS", "127.0.0.1:0")
    code, said = run(capsys, "--state-dir", str(tmp_path))
    assert code == 1 and "holds no offset a migrate or sync run wrote" in said, said


def test_a_malformed_metrics_address_is_said_before_anything_else(capsys, tmp_path):
    code, said = run(capsys, "--execute", "--renew-every", "42h", "--metrics-address", "127.0.0.1:99999",
                     "--state-dir", str(tmp_path / "typo"))
    assert code == 2 and "--metrics-address: expected HOST:PORT" in said, said


@pytest.mark.parametrize("execute", [[], ["--execute"]])
def test_rollback_of_a_renew_run_says_a_renewal_has_nothing_to_roll_back(capsys, tmp_path, execute):
    with Journal.open(tmp_path) as journal:
        journal.create_run("20261128T003327Z-7e51", "renew", "", {"no_zk_write": True}, {})
    code = cli.main(["rollback", "20261128T003327Z-7e51", *execute, "--bootstrap-server", NOWHERE,
                     "--state-dir", str(tmp_path)])
    said = capsys.readouterr().err
    assert code == 1
    # The printed `zk2kafka status` repeats where the state dir is, as all advice does.
    assert said.strip() == ("zk2kafka: error: rollback: 20261128T003327Z-7e51 is a renew run: a renewal "
                            "re-commits each offset as Kafka holds it and moves none, so it has nothing to roll "
                            "back; what moved the offsets is the migrate or sync run that wrote them (`zk2kafka "
                            f"status --bootstrap-server {NOWHERE} --state-dir {tmp_path}` lists the runs)")
    other = cli.main(["rollback", "20261128T003327Z-0000", "--state-dir", str(tmp_path)])
    assert other == 1 and "no migrate or sync run 20261128T003327Z-0000" in capsys.readouterr().err
