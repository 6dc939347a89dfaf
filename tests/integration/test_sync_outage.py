"""A ZooKeeper outage as sync's log tells it, on the session's real ZooKeeper and Kafka.

sync's follower reaches ZooKeeper through a TCP proxy the test cuts: the server stays up and, past
the session's timeout with no word from the client, expires the session, as a network partition
or a frozen ensemble does. The test waits for that expiry on the server itself (an ephemeral
znode of the session goes), moves an offset meanwhile, and restores the network. The log must say
when the connection was lost, that the session expired, when ZooKeeper came back and for how long
nothing was mirrored, and when every group was read again; the status line and sync-status.json
say ZooKeeper is away while it is, from a thread of their own while the follower waits for it; and
the offset moved during the outage reaches Kafka after it. About 6 s.
"""

from __future__ import annotations

import json
import logging
import re
import threading

from migrate.journal.journal import Journal
from migrate.kafka.client import open_admin
from migrate.settings import load_settings
from migrate.sync.outage import AwayStatus
from migrate.sync.sessions import FollowOptions, make_follower
from migrate.sync.state import status_line
from migrate.zk.client import close, connect

from support.seeding import kafka_offsets, make_topic, put
from support.tcp_proxy import TcpProxy
from support.wait import wait_for

SESSION = 2.0   # seconds: the follower's session, which the server expires 2 s into the cut
TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def test_an_expired_session_is_said_in_the_log_with_how_long_nothing_was_mirrored(
        cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="migrate")
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    groups = [f"{prefix}billing", f"{prefix}shipping"]
    for g in groups:
        put(zk, f"/consumers/{g}/offsets/{topic}/0", b"10")
    proxy = TcpProxy(cluster.zk_server)
    chroot = zk_chroot.removeprefix(cluster.zk_server)
    settings = load_settings({"zookeeper": proxy.address + chroot,
                              "bootstrap_server": cluster.bootstrap_server,
                              "groups": [f"{prefix}.*"], "state_dir": str(tmp_path / "state"),
                              "execute": True, "rescan_every": "1h", "quiet_for": "1s"}, {})
    run_id = "20260101T000000Z-0a1b"
    journal = Journal.open(settings.state_dir, writer=f"sync --execute, run {run_id}")
    journal.create_run(run_id, "sync", "", {**settings.recorded(), "no_zk_write": True}, {})
    client = connect(settings.connection, timeout=SESSION)
    admin = open_admin(settings.connection)
    status_file = tmp_path / "sync-status.json"
    follower = make_follower(FollowOptions.of(settings), client, admin, journal, run_id,
                             f"zk2kafka sync {run_id}", status_file, status_every=None)
    stop = threading.Event()
    following = threading.Thread(target=follower.run, args=(stop,), daemon=True)
    following.start()
    away_status = AwayStatus(follower, every=0.5).start()   # as the command starts it, at 10 s
    try:
        wait_for("both groups mirrored", lambda: all(
            kafka_offsets(kafka_admin, [g])[g].get((topic, 0), (None,))[0] == 10 for g in groups))
        # The server tells the session's end: its ephemeral znode goes when it expires.
        gone = threading.Event()
        marker = f"/{prefix}session"
        client.create(marker, ephemeral=True)
        assert zk.exists(marker, watch=lambda event: gone.set())

        proxy.cut()
        assert gone.wait(30), "the server did not expire the follower's session"
        zk.set(f"/consumers/{groups[0]}/offsets/{topic}/0", b"20")   # an old consumer commits
        away = status_line(follower.status.to_json(follower.groups))
        assert re.match(rf"sync: ZooKeeper away since {TIME} \(\d+s\): nothing mirrored meanwhile; "
                        r"2 group\(s\) followed, ", away), away
        assert kafka_offsets(kafka_admin, [groups[0]])[groups[0]][(topic, 0)][0] == 10
        said = wait_for("the status line said while the follower waits", lambda: [
            r.getMessage() for r in caplog.records if r.getMessage().startswith("sync: ZooKeeper away since")])
        assert re.match(rf"sync: ZooKeeper away since {TIME} \(\d+s\): nothing mirrored meanwhile; 2 group\(s\) "
                        r"followed, ", said[0]), said
        assert json.loads(status_file.read_text())["zookeeper_away_since"] == re.search(TIME, said[0])[0]

        proxy.restore()
        wait_for("every group read again, in the log", lambda: any(
            "every group read again" in r.getMessage() for r in caplog.records), timeout=60)
        wait_for("the commit made during the outage mirrored", lambda: kafka_offsets(
            kafka_admin, [groups[0]])[groups[0]][(topic, 0)][0] == 20)
        back = status_line(follower.status.to_json(follower.groups))
        assert back.startswith("sync: 2 group(s) synced, "), back
    finally:
        away_status.stop()
        stop.set()
        following.join(timeout=60)
        proxy.close()
        admin.close()
        close(client)
        journal.close()

    said = [r.getMessage() for r in caplog.records if r.name == "migrate.sync.outage"
            and not r.getMessage().startswith("sync: ZooKeeper away since")]
    lost, expired, returned, reread = said
    assert re.fullmatch(rf"sync: ZooKeeper connection lost at ({TIME}): nothing the old consumers "
                        "commit is mirrored until it is back and every group is read again", lost)
    at = re.search(TIME, lost)[0]
    assert re.fullmatch(rf"sync: ZooKeeper session expired at {TIME} \(the connection lost at "
                        rf"{at}, [\d.]+s before\): its watches are gone; a new session reads every "
                        "group again", expired), expired
    found = re.fullmatch(rf"sync: ZooKeeper back at {TIME} after ([\d.]+)s away \(connection lost "
                         rf"at {at}; the session expired at {TIME}: a new one\): nothing was "
                         r"mirrored from ZooKeeper for \1s; reading every group again \(2\)",
                         returned)
    assert found and float(found[1]) >= SESSION, returned
    assert re.fullmatch(rf"sync: every group read again at {TIME}, [\d.]+s after ZooKeeper came "
                        rf"back \(connection lost at {at}, [\d.]+s before\): Kafka follows "
                        "ZooKeeper again", reread), reread
