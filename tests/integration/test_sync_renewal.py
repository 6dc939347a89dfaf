"""sync's renewal (`--renew-every`) on the session's real ZooKeeper and Kafka: a group nobody
consumes in Kafka has its unchanged offsets committed again each period, as Kafka's commit time in
__consumer_offsets shows, the offset and metadata unchanged.

The command refuses a period under a minute (migrate/options.py: a renewal more often serves
nothing), so the follower is built here as the command builds it, with a period of a second: the
library paces what it is given. About 5 s.
"""

from __future__ import annotations

import dataclasses
import threading

from migrate.journal.journal import Journal
from migrate.kafka.client import open_admin
from support.records import read_groups
from migrate.settings import load_settings
from migrate.sync.sessions import FollowOptions, make_follower
from migrate.zk.client import close, connect

from support.seeding import kafka_offsets, make_topic, put
from support.wait import wait_for


def commit_times(kafka_admin, group: str) -> list[int]:
    clocks, why = read_groups(kafka_admin, [group])
    assert why is None, why
    return sorted(commit_ms for commit_ms, _ in clocks[group].commits) if group in clocks else []


def test_sync_renews_the_unchanged_offsets_of_a_group_nobody_consumes(cluster, zk, zk_chroot,
                                                                       kafka_admin, prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    idle = f"{prefix}idle"
    put(zk, f"/consumers/{idle}/offsets/{topic}/0", b"7")
    settings = load_settings({"zookeeper": zk_chroot, "bootstrap_server": cluster.bootstrap_server,
                              "groups": [f"{prefix}.*"], "state_dir": str(tmp_path / "state"),
                              "execute": True, "rescan_every": "1h"}, {})
    run_id = "20260101T000000Z-0a1c"
    journal = Journal.open(settings.state_dir, writer=f"sync --execute, run {run_id}")
    journal.create_run(run_id, "sync", "", {**settings.recorded(), "no_zk_write": True}, {})
    options = dataclasses.replace(FollowOptions.of(settings), renew_every=1.0)
    client, admin = connect(settings.connection), open_admin(settings.connection)
    follower = make_follower(options, client, admin, journal, run_id, f"zk2kafka sync {run_id}",
                             None, status_every=None)
    stop = threading.Event()
    following = threading.Thread(target=follower.run, args=(stop,), daemon=True)
    following.start()
    try:
        first = wait_for("the group mirrored", lambda: commit_times(kafka_admin, idle))
        # Renewed twice: each period's commit is Kafka's latest, the offset unchanged.
        renewed = wait_for("a renewal", lambda: (lambda t: t if t and t[-1] > first[-1] else None)(
            commit_times(kafka_admin, idle)))
        wait_for("a second renewal", lambda: commit_times(kafka_admin, idle)[-1] > renewed[-1])
    finally:
        stop.set()
        following.join(timeout=60)
        admin.close()
        close(client)
    assert not following.is_alive()
    assert follower.status.renewals >= 2 and follower.status.offsets == 1   # renewals move nothing
    assert kafka_offsets(kafka_admin, [idle])[idle][(topic, 0)] == (7, f"zk2kafka sync {run_id}")
    with journal:
        assert journal.partitions_of(run_id, [idle])[idle][0].offset == 7
