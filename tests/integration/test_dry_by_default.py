"""Nothing is written without `--execute`, on every writing path: migrate (fresh, --resume, --plan), rollback and sync,
each run without it, with every abbreviation of it (`--e` ... `--execut`), and with it only in the environment.

Real ZooKeeper and Kafka: an interrupted reviewed-plan run leaves both stores and the journal half-way, and each
command must leave both stores and the journal exactly as they were, and the writers' lock free.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from migrate import cli
from migrate.journal.locks import WriterLock

from support.seeding import kafka_offsets, make_topic, put, zk_tree

PREFIXES = ["--execute"[:n] for n in range(3, len("--execute"))]   # --e, --ex, ... --execut


def journal_rows(state: Path) -> dict[str, list[tuple]]:
    """Every row of the journal's tables, read without changing the file."""
    db = sqlite3.connect(f"{(state / 'journal.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        return {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
                for table in ("runs", "groups", "partitions")}
    finally:
        db.close()


@pytest.fixture
def half_way(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path, capsys):
    """A reviewed plan of three groups, and a run of it killed after its first Kafka commit."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    groups = [f"{prefix}g{i}" for i in range(3)]
    for i, group in enumerate(groups):
        for p in range(2):
            put(zk, f"/consumers/{group}/offsets/{topic}/{p}", str(10 * (i + 1) + p).encode())
    conn = ["--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server, "--state-dir", str(tmp_path)]
    assert cli.main(["diff", *conn, "--group", f"{prefix}g.*", "-q", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan_id"]
    killed = subprocess.run([sys.executable, "-m", "migrate", "migrate", *conn, "--execute", "--plan", plan,
                             "--parallelism", "1", "-q"], env={**os.environ, "ZK2KAFKA_CRASH_AT": "after-kafka-commit"},
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    (run,) = json.loads(subprocess.run([sys.executable, "-m", "migrate", "status", *conn, "--json"],
                                       capture_output=True, text=True, check=True).stdout)["runs"]
    assert kafka_offsets(kafka_admin, groups) != {g: {} for g in groups}, "the killed run wrote nothing"
    # A plan of the stores as the killed run left them (the first one is refused: its run is unfinished).
    assert cli.main(["diff", *conn, "--group", f"{prefix}g.*", "-q", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["plan_id"]
    return {"conn": conn, "groups": groups, "plan": again, "killed_plan": plan, "run": run["run"], "prefix": prefix}


def writing_commands(h: dict) -> dict[str, list[str]]:
    conn, selection = h["conn"], ["--group", f"{h['prefix']}g.*"]
    return {"migrate": ["migrate", *conn, *selection],
            "migrate --resume": ["migrate", *conn, "--resume", h["run"]],
            "migrate --plan": ["migrate", *conn, "--plan", h["plan"]],
            "rollback": ["rollback", h["run"], *conn],
            "sync": ["sync", *conn, *selection, "--stop-after", "2s", "--rescan-every", "1s"]}


def test_no_writing_command_writes_without_execute(half_way, zk, kafka_admin, tmp_path, capsys, monkeypatch):
    state = Path(half_way["conn"][-1])
    before = (zk_tree(zk), kafka_offsets(kafka_admin, half_way["groups"]), journal_rows(state))
    for mode, argv in writing_commands(half_way).items():
        for given in ([], *([p] for p in PREFIXES)):
            code = cli.main([*argv, *given, "-q", "--json"])
            captured = capsys.readouterr()
            if given:   # an abbreviation is no flag: a usage error naming the flag meant, before anything runs
                assert code == 2 and "did you mean --e" in captured.err, (mode, given, captured.err)
                assert re.search(rf"usage: zk2kafka {argv[0]} ", captured.err), captured.err
            else:
                assert code in (0, 3), (mode, code, captured.err)
                assert json.loads(captured.out)["dry_run"] is True, mode
            now = (zk_tree(zk), kafka_offsets(kafka_admin, half_way["groups"]), journal_rows(state))
            assert now == before, f"{mode} {given} changed a store or the journal"
    # The plan of the killed run is refused, with nothing written: its run is to be resumed.
    assert cli.main(["migrate", *half_way["conn"], "--plan", half_way["killed_plan"], "-q"]) == 1
    where = " " + " ".join(half_way["conn"])   # the location flags the command was given, repeated
    assert f"`zk2kafka migrate{where} --execute --resume {half_way['run']}` finishes them" in capsys.readouterr().err
    assert (zk_tree(zk), kafka_offsets(kafka_admin, half_way["groups"]), journal_rows(state)) == before
    # --execute from the environment is not --execute.
    monkeypatch.setenv("ZK2KAFKA_EXECUTE", "1")
    assert cli.main([*writing_commands(half_way)["migrate --plan"], "-q", "--json"]) in (0, 3)
    assert json.loads(capsys.readouterr().out)["dry_run"] is True
    assert (zk_tree(zk), kafka_offsets(kafka_admin, half_way["groups"]), journal_rows(state)) == before


def test_a_resume_dry_run_takes_no_lock_and_says_what_the_resume_would_write(half_way, zk, kafka_admin, capsys):
    state = Path(half_way["conn"][-1])
    before = (zk_tree(zk), kafka_offsets(kafka_admin, half_way["groups"]), journal_rows(state))
    # Another writer holds the state dir: a dry run only reads, so it runs all the same.
    lock = WriterLock.take(state, "another writer")
    try:
        code = cli.main(["migrate", *half_way["conn"], "--resume", half_way["run"], "-q"])
    finally:
        lock.release()
    out = capsys.readouterr().out
    assert code == 0, out
    assert re.search(rf"^resume of {half_way['run']} \(interrupted\): would write 6 offsets in 3 group\(s\); "
                     r"0 group\(s\) verified already", out, re.MULTILINE), out
    where = " " + " ".join(half_way["conn"])   # the location flags the command was given, repeated
    assert f"dry run: nothing was written; `zk2kafka migrate{where} --execute --resume {half_way['run']}` resumes it" \
        in out
    assert (zk_tree(zk), kafka_offsets(kafka_admin, half_way["groups"]), journal_rows(state)) == before

    # The resume itself, without the selection: it takes the run's own.
    code = cli.main(["migrate", *half_way["conn"], "--execute", "--resume", half_way["run"], "-q", "--json"])
    done = json.loads(capsys.readouterr().out)
    assert code == 0 and done["state"] == "done" and done["groups"]["verified"] == 3, done
