"""The reader against a real ZooKeeper: every row status, every layout, chroot, ACLs, session expiry, scan CLI."""

from __future__ import annotations

import json
import threading

import pyarrow.parquet as pq
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from migrate import cli
from migrate.zk.reader import STANDARD, STORM, Selection, ZkOffsetReader, layout_from_template

from support.seeding import expire_session

OWNER = ("owner", "owner-pw")


def read_all(reader: ZkOffsetReader) -> list[dict]:
    return [row for batch in reader.batches(reader.groups()) for row in batch.to_pylist()]


def by_key(rows: list[dict]) -> dict:
    return {(r["group"], r["topic"], r["partition"]): r for r in rows}


def put(zk, path: str, value: bytes, acl=None) -> None:
    zk.ensure_path(path.rsplit("/", 1)[0])  # open parents: kazoo's makepath would put `acl` on them too
    zk.create(path, value, acl=acl)


def test_every_row_status_and_odd_value(zk):
    for partition, raw in {"0": b"10", "1": b" 11\n", "2": b"-1", "3": b"9223372036854775808", "4": b"1e3",
                           "5": b"", "6": b'{"offset":5}', "7": b"\x00\xff", "12": b"12"}.items():
        put(zk, f"/consumers/g1/offsets/t1/{partition}", raw)
    put(zk, "/consumers/g1/offsets/t1/abc", b"3")  # a partition name that is not a number
    put(zk, "/consumers/g2/offsets/t2/0", b"7", acl=[make_digest_acl(*OWNER, all=True)])
    rows = by_key(read_all(ZkOffsetReader(zk, "/consumers")))

    assert {k[2]: r["offset"] for k, r in rows.items() if r["status"] == "OK"} == {0: 10, 1: 11, 12: 12}
    malformed = {k[2]: r["reason"] for k, r in rows.items() if r["status"] == "MALFORMED" and k[0] == "g1"}
    assert set(malformed) == {2, 3, 4, 5, 6, 7, None}  # partitions 8-11 were never assumed to exist
    assert rows[("g1", "t1", 1)]["raw"] == " 11\\n"
    assert rows[("g1", "t1", 7)]["raw"] == "\\x00\\xff"
    unreadable = rows[("g2", "t2", 0)]
    assert unreadable["status"] == "UNREADABLE" and "NoAuth" in unreadable["reason"] and unreadable["raw"] is None
    assert rows[("g1", "t1", 0)]["version"] == 0 and rows[("g1", "t1", 0)]["mtime"] is not None
    assert rows[("g1", "t1", 0)]["path"] == "/consumers/g1/offsets/t1/0"


def test_multiread_and_single_reads_agree(zk):
    for g in range(3):
        for p in range(300):
            put(zk, f"/consumers/g{g}/offsets/t/{p}", str(p).encode())
    put(zk, "/consumers/g1/offsets/t/bad", b"x")
    put(zk, "/consumers/g2/offsets/u/0", b"1", acl=[make_digest_acl(*OWNER, all=True)])
    multi = ZkOffsetReader(zk, "/consumers", multi=None)
    single = ZkOffsetReader(zk, "/consumers", multi=False)
    assert read_all(multi) == read_all(single)
    assert (multi.batch.multi, single.batch.multi) == (True, False)  # ZooKeeper 3.8 answers multiRead


def test_digest_auth_opens_an_acl_protected_subtree(zk, zk_chroot):
    # The group's offsets directory is protected: without auth even listing it fails, and that is reported.
    put(zk, "/consumers/secret/offsets/t/0", b"5")
    zk.set_acls("/consumers/secret/offsets", [make_digest_acl(*OWNER, read=True)])
    denied = read_all(ZkOffsetReader(zk, "/consumers"))
    assert [(r["group"], r["status"]) for r in denied] == [("secret", "UNREADABLE")]
    assert "no permission to list /consumers/secret/offsets" in denied[0]["reason"]

    authed = KazooClient(hosts=zk_chroot, auth_data=[("digest", ":".join(OWNER))])
    authed.start(timeout=15)
    try:
        rows = read_all(ZkOffsetReader(authed, "/consumers"))
    finally:
        authed.stop()
        authed.close()
    assert [(r["group"], r["topic"], r["partition"], r["offset"]) for r in rows] == [("secret", "t", 0, 5)]


def test_liveness_of_old_consumers(zk):
    put(zk, "/consumers/live/offsets/t/0", b"1")
    put(zk, "/consumers/live/ids/c1", b"{}", )
    put(zk, "/consumers/live/ids/c2", b"{}")
    put(zk, "/consumers/live/owners/t/0", b"c1-0")
    put(zk, "/consumers/live/owners/u/3", b"c2-0")
    put(zk, "/consumers/gone/offsets/t/0", b"1")
    zk.ensure_path("/consumers/gone/ids")
    rows = by_key(read_all(ZkOffsetReader(zk, "/consumers")))
    assert (rows[("live", "t", 0)]["zk_consumers"], rows[("live", "t", 0)]["zk_owned_partitions"]) == (2, 2)
    assert (rows[("gone", "t", 0)]["zk_consumers"], rows[("gone", "t", 0)]["zk_owned_partitions"]) == (0, 0)


def test_kafka_110_singular_offset_layout_is_found_and_named(zk):
    put(zk, "/consumers/g/offsets/t/0", b"1")
    put(zk, "/consumers/g/offset/t/1", b"2")
    rows = by_key(read_all(ZkOffsetReader(zk, "/consumers")))
    assert rows[("g", "t", 0)]["layout"] == "standard"
    assert rows[("g", "t", 1)]["layout"] == "kafka-1.1.0-offset"


def test_storm_kafka_layouts(zk):
    doc = {"offset": 900, "topic": "events", "partition": 0, "broker": {"host": "k", "port": 9092}}
    put(zk, "/storm/spout-a/partition_0", json.dumps(doc).encode())
    put(zk, "/storm/spout-a/partition_1", json.dumps({**doc, "partition": 1, "offset": 901}).encode())
    put(zk, "/storm/spout-b/clicks/partition_2", json.dumps({**doc, "topic": "clicks", "partition": 2}).encode())
    put(zk, "/storm/spout-b/clicks/partition_3", json.dumps({**doc, "topic": "clicks", "partition": 9}).encode())
    put(zk, "/storm/spout-c/partition_0", b"not json")
    rows = by_key(read_all(ZkOffsetReader(zk, "/storm", STORM)))
    assert rows[("spout-a", "events", 0)]["offset"] == 900
    assert rows[("spout-a", "events", 1)]["offset"] == 901
    assert rows[("spout-b", "clicks", 2)]["offset"] == 900
    mismatch = rows[("spout-b", "clicks", 3)]
    assert mismatch["status"] == "MALFORMED" and "partition 9" in mismatch["reason"]
    assert rows[("spout-c", None, 0)]["status"] == "MALFORMED"
    assert {r["layout"] for r in rows.values()} == {"storm"}


def test_user_path_template(zk):
    put(zk, "/myapp/prod/billing/orders/p/3", b"33")
    root, templates = layout_from_template("/myapp/prod/{group}/{topic}/p/{partition}")
    rows = read_all(ZkOffsetReader(zk, root, templates))
    assert [(r["group"], r["topic"], r["partition"], r["offset"], r["layout"]) for r in rows] == [
        ("billing", "orders", 3, 33, "template")]


def test_selection_is_applied_before_reading(zk):
    put(zk, "/consumers/keep-1/offsets/orders/0", b"1")
    put(zk, "/consumers/keep-1/offsets/clicks/0", b"1")
    put(zk, "/consumers/keep-2/offsets/orders/0", b"1")
    # An excluded group and a deselected topic sit behind ACLs: reading them would show as UNREADABLE rows.
    put(zk, "/consumers/drop/offsets/orders/0", b"1", acl=[make_digest_acl(*OWNER, all=True)])
    put(zk, "/consumers/keep-2/offsets/clicks/0", b"1", acl=[make_digest_acl(*OWNER, all=True)])
    selection = Selection(groups=("keep.*",), exclude_groups=("keep-3",), topics=("orders",))
    rows = read_all(ZkOffsetReader(zk, "/consumers", STANDARD, selection))
    assert sorted((r["group"], r["topic"], r["status"]) for r in rows) == [
        ("keep-1", "orders", "OK"), ("keep-2", "orders", "OK")]


def test_group_deleted_during_the_walk_is_tolerated(zk):
    for g in ("a", "b", "c"):
        put(zk, f"/consumers/{g}/offsets/t/0", b"1")
    reader = ZkOffsetReader(zk, "/consumers")
    groups = reader.groups()
    zk.delete("/consumers/b", recursive=True)
    rows = [r for batch in reader.batches(groups) for r in batch.to_pylist()]
    assert sorted(r["group"] for r in rows) == ["a", "c"]


def test_session_expiry_in_the_middle_of_a_walk_resumes_without_loss(zk, zk_chroot):
    expected = {}
    transaction = zk.transaction()
    for g in range(8):
        zk.ensure_path(f"/consumers/g{g}/offsets/t")
        for p in range(60):
            transaction.create(f"/consumers/g{g}/offsets/t/{p}", str(g * 1000 + p).encode())
            expected[(f"g{g}", "t", p)] = g * 1000 + p
    transaction.commit()

    client = KazooClient(hosts=zk_chroot, timeout=5)
    client.start(timeout=15)
    try:
        reader = ZkOffsetReader(client, "/consumers", window=16, group_batch=2)
        first_session = client.client_id[0]
        rows, expired = [], threading.Event()
        for batch in reader.batches(reader.groups()):
            rows.extend(batch.to_pylist())
            if not expired.is_set():  # between batches, and once more while requests are in flight
                expire_session(client, zk_chroot)
                threading.Timer(0.01, expire_session, (client, zk_chroot)).start()
                expired.set()
        assert client.client_id[0] != first_session
    finally:
        client.stop()
        client.close()
    assert {k: r["offset"] for k, r in by_key(rows).items()} == expected
    assert {r["status"] for r in rows} == {"OK"}


def test_scan_cli_writes_the_snapshot_the_design_promises(zk, zk_chroot, tmp_path, capsys):
    put(zk, "/consumers/billing/offsets/orders/0", b"120")
    put(zk, "/consumers/billing/offsets/orders/1", b"oops")
    put(zk, "/consumers/audit/offsets/orders/0", b"5")
    argv = ["scan", "--zookeeper", zk_chroot, "--state-dir", str(tmp_path), "--json"]
    assert cli.main(argv) == 0
    single = json.loads(capsys.readouterr().out)
    assert (single["groups"], single["offsets"], single["counts"]) == (2, 3, {"MALFORMED": 1, "OK": 2})
    table = pq.read_table(single["snapshot"])
    for column in ("group", "topic", "partition", "raw", "offset", "status", "mtime", "version", "layout"):
        assert column in table.column_names
    assert str(table.schema.field("offset").type) == "int64"
    assert json.loads((tmp_path / "reports" / single["run"] / "scan.json").read_text())["offsets"] == 3

    # Two reader processes, each with its own session, produce the same rows.
    assert cli.main(argv + ["--zk-readers", "2"]) == 0
    sharded = json.loads(capsys.readouterr().out)
    rows = lambda path: sorted(map(str, pq.read_table(path).drop(["mtime", "ctime"]).to_pylist()))  # noqa: E731
    assert rows(sharded["snapshot"]) == rows(single["snapshot"])


def test_scan_cli_last_line_names_run_and_report(zk, zk_chroot, tmp_path, capsys):
    put(zk, "/consumers/g/offsets/t/0", b"41")
    assert cli.main(["scan", "--zookeeper", zk_chroot, "--state-dir", str(tmp_path),
                     "--offset-semantics", "last"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("run=") and f" report={tmp_path}/reports/" in last
    snapshot = next((tmp_path / "snapshots").glob("zk-*.parquet"))
    assert pq.read_table(snapshot).column("offset").to_pylist() == [42]


def test_unlistable_root_is_one_clear_line(zk, zk_chroot, tmp_path, capsys):
    zk.create("/locked", acl=[make_digest_acl(*OWNER, all=True)])
    assert cli.main(["scan", "--zookeeper", zk_chroot, "--zk-root", "/locked", "--state-dir", str(tmp_path)]) == 1
    assert "cannot list /locked: NoAuthError; pass --zk-auth" in capsys.readouterr().err


def test_unreachable_zookeeper_is_one_clear_line(tmp_path, capsys):
    assert cli.main(["scan", "--zookeeper", "127.0.0.1:1", "--state-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "cannot connect to ZooKeeper at 127.0.0.1:1" in err and "Traceback" not in err
