"""`scan --zookeeper-data`'s pure parts: its options, which files make a whole tree, the folder it
takes, its lines on the terminal; and the sandbox modules it starts ZooKeeper with depend on no
stage. The servers themselves: tests/integration/test_zookeeper_data.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.errors import ConfigError, NothingFound
from migrate.report import text
from migrate.settings import load_settings
from migrate.zk.datadir import (NOTHING_IN_DATA_DIR, DataDirUnreadable, check_history,
                                nothing_found_hint, replayed, version2, zxid_files)

from support.cli import zk2kafka

ROOT = Path(__file__).resolve().parents[2]


def test_a_live_ensemble_and_a_data_directory_go_apart(tmp_path):
    with pytest.raises(ConfigError, match="--zookeeper and --zookeeper-data go apart"):
        load_settings({"zookeeper_data": str(tmp_path), "zookeeper": "zk:2181"}, environ={})
    with pytest.raises(ConfigError, match="--zookeeper-data-log goes with --zookeeper-data"):
        load_settings({"zookeeper_data_log": str(tmp_path)}, environ={})
    # From the environment too: an exported sandbox connect string is not silently dropped.
    with pytest.raises(ConfigError, match="either may come from ZK2KAFKA_ZOOKEEPER, "):
        load_settings({"zookeeper_data": str(tmp_path)}, environ={"ZK2KAFKA_ZOOKEEPER": "zk:2181"})
    s = load_settings({"zookeeper_data": "~/zk", "zookeeper_data_log": str(tmp_path)}, environ={})
    assert s.zookeeper_data == Path("~/zk").expanduser() and s.zookeeper_data_log == tmp_path

    run = zk2kafka("scan", "--zookeeper", "zk:2181", "--zookeeper-data", str(tmp_path),
                   "--state-dir", str(tmp_path / "state"))
    assert run.code == 2 and run.out == ""
    assert run.err.strip().count("\n") == 0 and "go apart" in run.err


def test_the_option_is_scans_alone(tmp_path):
    run = zk2kafka("diff", "--zookeeper-data", str(tmp_path))
    assert run.code == 2 and "--zookeeper-data" in run.err


def test_not_a_data_directory_is_one_line_exit_1(tmp_path):
    (tmp_path / "zoo.cfg").write_text("dataDir=/elsewhere\n")
    run = zk2kafka("scan", "--zookeeper-data", str(tmp_path), "--state-dir", str(tmp_path / "s"))
    assert run.code == 1 and run.out == ""
    assert run.err.strip() == (f"zk2kafka: error: --zookeeper-data {tmp_path}: no version-2/ "
                               "folder in it: not a ZooKeeper dataDir (the folder dataDir= names "
                               "in the server's zoo.cfg)")
    missing = tmp_path / "nowhere"
    with pytest.raises(DataDirUnreadable, match="no such directory"):
        version2(missing)


def test_the_folder_taken_is_version_2_beside_or_itself(tmp_path):
    files = tmp_path / "version-2"
    files.mkdir()
    for name in ("snapshot.0", "snapshot.1a.gz", "snapshot.2b.snappy", "log.1", "log.1b",
                 "acceptedEpoch", "currentEpoch", "snapshot.x", "log.2.tmp"):
        (files / name).write_bytes(b"")
    assert version2(tmp_path) == files and version2(files) == files
    assert zxid_files(files, "snapshot") == {"snapshot.0": 0, "snapshot.1a.gz": 0x1a,
                                             "snapshot.2b.snappy": 0x2b}
    assert zxid_files(files, "log") == {"log.1": 1, "log.1b": 0x1b}


@pytest.mark.parametrize("snapshots, logs, refused", [
    ({}, {}, "no snapshot.* or log.* files"),
    # Logs alone from ZooKeeper's first transaction, standalone or an ensemble's first epoch.
    ({}, {"log.1": 1, "log.20": 0x20}, None),
    ({}, {"log.100000001": 0x100000001}, None),
    ({}, {"log.20": 0x20}, "the first transaction log (log.20) does not start"),
    # The logs ZooKeeper replays onto the newest snapshot start at or before its next zxid.
    ({"snapshot.0": 0, "snapshot.30": 0x30}, {"log.1": 1, "log.31": 0x31}, None),
    ({"snapshot.30": 0x30}, {"log.25": 0x25}, None),
    ({"snapshot.30": 0x30}, {"log.40": 0x40}, "the transaction logs start at log.40, after the "
                                              "newest snapshot (0x30)"),
    # An ensemble: a new epoch's first transaction follows any snapshot of an earlier epoch.
    ({"snapshot.0": 0}, {"log.100000001": 0x100000001}, None),
    ({"snapshot.100000020": 0x100000020}, {"log.300000001": 0x300000001}, None),
    ({"snapshot.100000020": 0x100000020}, {"log.100000040": 0x100000040},
     "the transaction logs start at log.100000040"),
    ({"snapshot.100000020": 0x100000020}, {"log.300000002": 0x300000002},
     "the transaction logs start at log.300000002"),
])
def test_which_files_make_a_whole_tree(snapshots, logs, refused):
    if refused:
        with pytest.raises(DataDirUnreadable, match=refused.replace("(", r"\(").replace(")", r"\)")):
            check_history(snapshots, logs)
    else:
        assert check_history(snapshots, logs) is None


def test_the_logs_replayed_are_from_the_one_holding_the_snapshots_next_zxid():
    logs = {"log.1": 1, "log.b": 0xb, "log.20": 0x20, "log.31": 0x31}
    assert replayed(0x25, logs) == 2     # log.20 (it holds 0x26) and log.31
    assert replayed(0x30, logs) == 1     # log.31 starts at the next zxid
    assert replayed(None, logs) == 4 and replayed(0x0, {}) == 0
    assert replayed(0x100000020, {"log.100000001": 0x100000001, "log.200000001": 0x200000001}) == 2


def test_a_snapshot_with_no_log_is_read_with_a_warning():
    warning = check_history({"snapshot.30": 0x30}, {})
    assert "misses any write after it" in warning and "--zookeeper-data-log" in warning


def scan_data(**copy) -> dict:
    return {"run": "r1", "groups": 2, "offsets": 4, "seconds": 1.0, "counts": {"OK": 4},
            "layouts": {"standard": 4}, "groups_with_live_zk_consumers": ["g1"],
            "source": "/kafka/consumers in the ZooKeeper data directory /backup/zk",
            "snapshot": "s.parquet", "report": "rep",
            "zookeeper_data": {"dir": "/backup/zk", "log_dir": None, "last_zxid": "0x10000002a",
                               "snapshot_zxid": "0x100000020", "logs_replayed": 2, "load_seconds": 2.94,
                               "read_with": "ZooKeeper 3.8.4", "warnings": [],
                               "ephemerals_expired": 0, **copy}}


def test_the_terminal_says_what_the_copy_held():
    lines = text.scan(scan_data()).splitlines()
    assert lines[0].startswith("scanned 2 groups, 4 offsets from /kafka/consumers in the "
                               "ZooKeeper data directory /backup/zk in 1.0s")
    assert ("data directory: /backup/zk, read by ZooKeeper 3.8.4 on a copy (loaded in 2.9s): "
            "last zxid 0x10000002a (2 logs replayed onto snapshot 0x100000020)") in lines
    assert "liveness (ids/, owners/): as the copy held it, not live" in lines
    assert "groups with old consumers registered in the copy: 1 (g1)" in lines
    assert not any(line.startswith("warning:") for line in lines)

    lines = text.scan(scan_data(snapshot_zxid=None, log_dir="/backup/zk-log", ephemerals_expired=3,
                                warnings=["no transaction log"])).splitlines()
    assert any("/backup/zk and /backup/zk-log" in line and "onto no snapshot" in line
               for line in lines)
    assert "warning: no transaction log" in lines
    assert any(line.startswith("warning: 3 registrations of the copy expired") for line in lines)


def searched(trees=(), cut_short=None, unreadable=()) -> dict:
    return {"from": "/", "checked_root": "/kafka/consumers", "listed": 1234, "seconds": 0.25,
            "complete": cut_short is None, "cut_short": cut_short, "unreadable": list(unreadable),
            "trees": [{"path": path, "groups": 2, "offsets": 7, "brokers_of": None,
                       "scan": f"zk2kafka scan --zookeeper-data /backup/zk --zk-root {path}"}
                      for path in trees]}


def test_the_terminal_names_the_other_trees_of_the_copy_with_their_scans():
    lines = text.scan(scan_data(elsewhere=searched(["/consumers"]))).splitlines()
    assert ("elsewhere in the copy: 1 other offsets tree(s), searched from / (1,234 znodes listed "
            "in 0.2s):") in lines
    assert ("  /consumers: 2 groups, 7 offsets: "
            "`zk2kafka scan --zookeeper-data /backup/zk --zk-root /consumers`") in lines
    assert not any(line.startswith("warning:") for line in lines)

    lines = text.scan(scan_data(elsewhere=searched(
        cut_short="stopped after 10 znodes (--ensemble-max-znodes)",
        unreadable=["/secret: NoAuthError"]))).splitlines()
    assert "elsewhere in the copy: 0 other offsets tree(s), searched from / (1,234 znodes listed in 0.2s)" in lines
    assert ("warning: the search of the copy stopped after 10 znodes (--ensemble-max-znodes): other "
            "trees may lie in what it did not list") in lines
    assert "warning: the search could not list /secret: NoAuthError" in lines


def test_nothing_found_in_a_data_directory_names_the_trees_it_holds():
    assert nothing_found_hint({"elsewhere": searched()}) == NOTHING_IN_DATA_DIR
    assert nothing_found_hint({}) == NOTHING_IN_DATA_DIR
    hint = nothing_found_hint({"elsewhere": searched(["/consumers", "/app/consumers"])})
    assert hint == ("offsets elsewhere in the copy: /consumers (2 groups, 7 offsets): "
                    "`zk2kafka scan --zookeeper-data /backup/zk --zk-root /consumers`; "
                    "/app/consumers (2 groups, 7 offsets): "
                    "`zk2kafka scan --zookeeper-data /backup/zk --zk-root /app/consumers`")


def test_nothing_found_in_a_data_directory_names_the_whole_path():
    error = NothingFound("scan", "/consumers in the ZooKeeper data directory /zk", "every group",
                         hint=NOTHING_IN_DATA_DIR)
    assert "--zk-root /kafka/consumers" in str(error) and "--zookeeper" not in str(error)
    assert "a chroot missing from --zookeeper" in str(NothingFound("scan", "zk:2181", "all"))


def test_why_zookeeper_would_not_load_is_the_root_cause_it_logged(tmp_path):
    from migrate.jvm.server import JavaServer
    from migrate.zk.datadir import load_failure

    server = JavaServer("zookeeper", tmp_path, [], "Main", [])
    server.log_path.write_text(
        "[2026-01-01 00:00:00,000] ERROR Unexpected exception, exiting abnormally (ZooKeeperServerMain)\n"
        "java.io.IOException: Unable to load database\n"
        "\tat org.apache.zookeeper.server.ZKDatabase.loadDataBase(ZKDatabase.java:1)\n"
        "Caused by: java.io.IOException: CRC check failed\n"
        "\t... 3 more\n"
        "[2026-01-01 00:00:00,001] ERROR Exiting JVM with code 1 (ServiceUtils)\n")
    assert load_failure(server) == "java.io.IOException: CRC check failed"
    server.log_path.write_text("[2026-01-01 00:00:00,001] ERROR Exiting JVM with code 1 (ServiceUtils)\n")
    assert load_failure(server) == "[2026-01-01 00:00:00,001] ERROR Exiting JVM with code 1 (ServiceUtils)"


def test_the_scan_of_another_tree_keeps_both_folders_and_pastes_as_printed(tmp_path):
    from migrate.zk.datadir import scan_command

    data, logs = tmp_path / "zk data", tmp_path / "log$dir"
    settings = load_settings({"zookeeper_data": str(data), "zookeeper_data_log": str(logs),
                              "zk_root": "/kafka/consumers"}, environ={})
    assert scan_command(settings, "/app's/consumers") == (
        f"zk2kafka scan --zookeeper-data '{data}' --zookeeper-data-log '{logs}' "
        "--zk-root '/app'\"'\"'s/consumers'")
