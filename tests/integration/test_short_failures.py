"""A store that cannot be reached, or holds nothing, is one clear line on stderr: no library's reconnect spam, no
Python warning, no Spark started for nothing; the console script as an operator runs it, against real servers.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from support.cli import clean_env, zk2kafka_bin


ROOT = Path(__file__).resolve().parents[2]


def nothing_listens() -> str:
    """A loopback port no server listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def start(*argv: str, state: Path) -> tuple[subprocess.Popen, float]:
    proc = subprocess.Popen([zk2kafka_bin(), *argv, "--state-dir", str(state)], env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    return proc, time.monotonic()


def test_an_unreachable_store_is_one_line_within_its_connect_timeout(cluster, zk_chroot, tmp_path):
    # Both at once: each waits out its client's timeout (kafka-python's bootstrap 30 s, kazoo's 15 s).
    kafka, kafka_began = start("diff", "--zookeeper", zk_chroot, "--bootstrap-server", nothing_listens(),
                               state=tmp_path / "k")
    zk, zk_began = start("diff", "--zookeeper", nothing_listens() + "/kafka", "--bootstrap-server",
                         cluster.bootstrap_server, state=tmp_path / "z")
    zk_verbose, _ = start("diff", "-v", "--zookeeper", nothing_listens() + "/kafka", "--bootstrap-server",
                          cluster.bootstrap_server, state=tmp_path / "v")
    _, zk_err = zk.communicate(timeout=120)
    zk_seconds = time.monotonic() - zk_began
    _, kafka_err = kafka.communicate(timeout=120)
    kafka_seconds = time.monotonic() - kafka_began
    _, verbose_err = zk_verbose.communicate(timeout=120)

    assert kafka.returncode == 1 and kafka_err.splitlines() == [kafka_err.strip()], kafka_err
    assert kafka_err.startswith("zk2kafka: error: cannot reach Kafka at 127.0.0.1:") and kafka_seconds < 45
    assert zk.returncode == 1 and zk_err.splitlines() == [zk_err.strip()], zk_err
    assert "cannot connect to ZooKeeper at" in zk_err and "within 15s" in zk_err and zk_seconds < 30
    # -v shows what the libraries said on the way.
    assert "Connection dropped" in verbose_err or "Connection refused" in verbose_err, verbose_err
    # Spark never started: nothing was planned, and no snapshot of Kafka was taken.
    for state in ("k", "z"):
        assert not list((tmp_path / state).glob("reports/*/plan.parquet"))
        assert not list((tmp_path / state).glob("snapshots/kafka-*"))


def test_a_scan_that_finds_nothing_exits_1_with_the_line_diff_gives(cluster, tmp_path):
    mistyped = cluster.zk_server + "/kafak"    # a chroot that does not exist
    scan, _ = start("scan", "--zookeeper", mistyped, state=tmp_path)
    out, err = scan.communicate(timeout=120)
    assert scan.returncode == 1, (out, err)
    assert err == (f"zk2kafka: error: scan: no offsets found under {mistyped}/consumers for every group and topic; "
                   "nothing was checked (a chroot missing from --zookeeper, e.g. zk:2181/kafka? a wrong --zk-root? "
                   "a selection that matches no group?)\n")
