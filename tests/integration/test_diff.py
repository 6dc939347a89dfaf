"""`zk2kafka diff` against real ZooKeeper and Kafka: each status from a real cluster, the report files, no writes."""

from __future__ import annotations

import csv
import json
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from kazoo.security import make_digest_acl

from migrate import cli
from migrate.diff import schema as s

from support.seeding import make_topic, put, zk_tree

OWNER = ("owner", "owner-pw")


@pytest.fixture
def live_cluster(cluster, zk, kafka_admin, prefix):
    """A cluster state that yields every status for groups named `<prefix>...`."""
    bs = cluster.bootstrap_server
    orders, trimmed, doomed = f"{prefix}orders", f"{prefix}trimmed", f"{prefix}doomed"
    make_topic(kafka_admin, bs, orders, 3, 100)
    make_topic(kafka_admin, bs, trimmed, 1, 100)
    make_topic(kafka_admin, bs, doomed, 1, 10)
    kafka_admin.delete_records({TopicPartition(trimmed, 0): 50})  # log start moves to 50
    kafka_admin.delete_topics([doomed])

    g = {name: f"{prefix}{name}" for name in ("migrate", "mixed", "range", "deleted", "bad", "active", "old")}
    offsets = {
        (g["migrate"], orders, 0): b"10", (g["migrate"], orders, 1): b" 11\n",
        (g["mixed"], orders, 0): b"20", (g["mixed"], orders, 1): b"30",
        (g["range"], trimmed, 0): b"10", (g["range"], orders, 1): b"1000",
        (g["deleted"], doomed, 0): b"5",
        (g["bad"], orders, 0): b"1.5E2",
        (g["active"], orders, 0): b"10",
        (g["old"], orders, 0): b"10",
    }
    for (group, topic, p), value in offsets.items():
        put(zk, f"/consumers/{group}/offsets/{topic}/{p}", value)
    put(zk, f"/consumers/{g['bad']}/offsets/{orders}/1", b"7", acl=[make_digest_acl(*OWNER, all=True)])
    put(zk, f"/consumers/{g['old']}/ids/{g['old']}_host-1", b'{"version":1}')
    kafka_admin.alter_group_offsets(g["mixed"], {
        TopicPartition(orders, 0): OffsetAndMetadata(20, "", -1),   # IN_SYNC
        TopicPartition(orders, 1): OffsetAndMetadata(25, "", -1),   # CONFLICT
        TopicPartition(orders, 2): OffsetAndMetadata(5, "", -1)})   # KAFKA_ONLY

    consumer = KafkaConsumer(orders, group_id=g["active"], bootstrap_servers=bs, enable_auto_commit=False)
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=500)
    assert consumer.assignment(), "the live consumer never joined its group"
    yield {"groups": g, "orders": orders, "trimmed": trimmed, "doomed": doomed}
    consumer.close()


def test_diff_reports_every_status_from_a_real_cluster(cluster, zk, zk_chroot, kafka_admin, prefix, live_cluster,
                                                       tmp_path, capsys):
    g, orders = live_cluster["groups"], live_cluster["orders"]
    before_zk = zk_tree(zk)
    before_kafka = kafka_admin.list_group_offsets({name: None for name in g.values()})

    code = cli.main(["diff", "--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
                     "--state-dir", str(tmp_path), "--group", f"{prefix}.*", "-q"])
    out = capsys.readouterr().out
    assert code == 3, out  # blockers: conflict, out of range, malformed, unreadable, active groups
    last = out.strip().splitlines()[-1]
    assert last.startswith("run=") and " report=" in last
    report = Path(last.split(" report=")[1])

    plan = {(r["group"], r["topic"], r["partition"]): r for r in pq.read_table(report / "plan.parquet").to_pylist()}
    status = {key: r["status"] for key, r in plan.items()}
    assert status == {
        (g["migrate"], orders, 0): s.MIGRATE, (g["migrate"], orders, 1): s.MIGRATE,
        (g["mixed"], orders, 0): s.IN_SYNC, (g["mixed"], orders, 1): s.CONFLICT,
        (g["mixed"], orders, 2): s.KAFKA_ONLY,
        (g["range"], live_cluster["trimmed"], 0): s.BELOW_LOG_START, (g["range"], orders, 1): s.ABOVE_LOG_END,
        (g["deleted"], live_cluster["doomed"], 0): s.UNKNOWN_PARTITION,
        (g["bad"], orders, 0): s.MALFORMED, (g["bad"], orders, 1): s.UNREADABLE,
        (g["active"], orders, 0): s.GROUP_ACTIVE_KAFKA,
        (g["old"], orders, 0): s.GROUP_ACTIVE_ZK,
    }
    below = plan[(g["range"], live_cluster["trimmed"], 0)]
    assert (below["log_start"], below["log_end"]) == (50, 100)
    assert plan[(g["migrate"], orders, 1)]["planned_offset"] == 11
    assert plan[(g["active"], orders, 0)]["kafka_members"] == 1

    summary = json.loads((report / "summary.json").read_text())
    assert summary["counts"] == {name: sum(1 for v in status.values() if v == name) for name in s.STATUSES}
    assert summary["blockers"] == 7 and summary["offsets"] == 12 and summary["groups"] == 7
    assert summary["retention"]["minutes"] == 10080  # Kafka's default, read from the broker
    assert "7 day(s)" in summary["retention"]["warning"] and g["migrate"] in summary["retention"]["warning"]

    with open(report / "rows.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["group", "topic", "partition", "zk_offset", "kafka_offset", "log_start", "log_end",
                       "status", "planned_offset", "zk_change", "zk_planned"]
    assert len(rows) == 13
    reset = (report / "reset-offsets.csv").read_text().splitlines()
    assert sorted(reset) == [f"{g['migrate']},{orders},0,10", f"{g['migrate']},{orders},1,11"]
    for name in ("report.md", "report.html"):
        assert g["active"] in (report / name).read_text()

    # diff never writes: ZooKeeper and Kafka hold exactly what they held
    assert zk_tree(zk) == before_zk
    assert kafka_admin.list_group_offsets({name: None for name in g.values()}) == before_kafka


def test_diff_without_blockers_exits_zero_and_json(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path, capsys):
    topic, group = f"{prefix}clean", f"{prefix}clean-group"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 20)
    put(zk, f"/consumers/{group}/offsets/{topic}/0", b"3")
    put(zk, f"/consumers/{group}/offsets/{topic}/1", b"20")
    code = cli.main(["diff", "--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
                     "--state-dir", str(tmp_path), "--json", "-q"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["counts"][s.MIGRATE] == 2 and data["blockers"] == 0
    assert Path(data["report"], "report.html").exists()


def test_diff_with_kafka_unreachable_is_one_clear_error(zk, zk_chroot, tmp_path, capsys):
    import socket

    put(zk, "/consumers/g/offsets/t/0", b"1")   # something to diff: finding nothing is an error of its own

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = cli.main(["diff", "--zookeeper", zk_chroot, "--bootstrap-server", f"127.0.0.1:{port}",
                     "--state-dir", str(tmp_path), "--command-config", str(_fast_fail(tmp_path)), "-q"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"cannot reach Kafka at 127.0.0.1:{port}" in err and "Traceback" not in err


def _fast_fail(tmp_path: Path) -> Path:
    """Client properties that give up bootstrapping quickly."""
    path = tmp_path / "client.properties"
    path.write_text("default.api.timeout.ms=3000\n")
    return path


def test_kafka_consumer_groups_accepts_reset_offsets_csv(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path,
                                                         capsys):
    """Kafka's own tool, from the pinned 3.9 jars, takes reset-offsets.csv in a dry run and plans the same offsets."""
    from migrate.jvm.artifacts import ensure_bundle
    from support.servers import CACHE_DIR

    topic = f"{prefix}tool"
    groups = [f"{prefix}tool-a", f"{prefix}tool-b"]
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 20)
    for i, group in enumerate(groups):
        put(zk, f"/consumers/{group}/offsets/{topic}/0", str(3 + i).encode())
        put(zk, f"/consumers/{group}/offsets/{topic}/1", str(10 + i).encode())
    assert cli.main(["diff", "--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
                     "--state-dir", str(tmp_path), "--json", "-q"]) == 0
    reset = Path(json.loads(capsys.readouterr().out)["files"]["reset_offsets"])
    assert reset.read_text().splitlines() == [f"{groups[0]},{topic},0,3", f"{groups[0]},{topic},1,10",
                                              f"{groups[1]},{topic},0,4", f"{groups[1]},{topic},1,11"]

    classpath = ":".join(map(str, ensure_bundle("kafka-3.9", CACHE_DIR)))
    tool = subprocess.run(
        ["java", "-cp", classpath, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
         "--bootstrap-server", cluster.bootstrap_server, "--reset-offsets", "--from-file", str(reset),
         *(arg for g in groups for arg in ("--group", g)), "--dry-run"],
        capture_output=True, text=True, timeout=120)
    assert tool.returncode == 0, tool.stderr
    # The tool prints a GROUP TOPIC PARTITION NEW-OFFSET table (3.9 runs its rows together on one line).
    # Its stderr carries a stack trace from first trying the 3-column form: Kafka's noise, not a failure.
    cells = tool.stdout.split()
    rows = cells[cells.index("NEW-OFFSET") + 1:]
    planned = {tuple(rows[i:i + 4]) for i in range(0, len(rows), 4)}
    assert planned == {(g, topic, str(p), str(o)) for g, p, o in
                       [(groups[0], 0, 3), (groups[0], 1, 10), (groups[1], 0, 4), (groups[1], 1, 11)]}
    assert kafka_admin.list_group_offsets({g: None for g in groups}) == {g: {} for g in groups}  # a dry run


def test_html_report_loads_in_headless_chromium_without_console_errors(cluster, zk_chroot, prefix, live_cluster,
                                                                        tmp_path, capsys):
    from support.browser import HeadlessChromium, require_binaries

    chromium = HeadlessChromium(*require_binaries())
    try:
        # The harness does see errors: a page that breaks the same CSP and logs one is caught.
        broken = tmp_path / "broken.html"
        broken.write_text('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'">'
                          '<img src="https://example.invalid/x.png"><script>console.error("boom")</script>')
        assert len(chromium.load(broken)) == 2

        code = cli.main(["diff", "--zookeeper", zk_chroot, "--bootstrap-server", cluster.bootstrap_server,
                         "--state-dir", str(tmp_path / "state"), "--group", f"{prefix}.*", "--json", "-q"])
        assert code == 3
        page = Path(json.loads(capsys.readouterr().out)["files"]["html"])
        assert chromium.load(page) == []
        drawn = chromium.evaluate("return [document.title, document.querySelectorAll('svg').length, "
                                  "document.querySelectorAll('svg rect').length, document.body.innerText]")
        assert drawn[0].startswith("zk2kafka diff") and drawn[1] == 3 and drawn[2] >= 10
        assert live_cluster["groups"]["active"] in drawn[3] and "GROUP_ACTIVE_KAFKA" in drawn[3]
    finally:
        chromium.close()
