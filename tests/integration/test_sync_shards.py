"""`zk2kafka sync --writers 2` on the sandbox: a follower process killed with `kill -9` ends the
command with an error (a supervisor restarts it), a restarted sync takes up every group where Kafka
stands, and the follower processes die with the command, `kill -9` included, so the next sync can
take the writers' lock. The series, status file and output of a sharded sync are in
test_sync_metrics.py."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from migrate.sync.follower_shards import shard_of

from support.seeding import kafka_offsets, make_topic, put
from support.sync_process import scraped_when, start_sync, stop_sync, value
from support.wait import free_port, wait_for


def descendants(pid: int) -> dict[int, int]:
    """Every live process under `pid`: its pid -> its depth below `pid` (1: a child)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found, frontier, depth = {}, [pid], 0
    while frontier:
        depth += 1
        frontier = [p for p, parent in parents.items() if parent in frontier]
        found.update(dict.fromkeys(frontier, depth))
    return found


def followers(sync) -> list[int]:
    """The follower processes: forked by the fork server, the command's child."""
    return [p for p, depth in descendants(sync.pid).items() if depth == 2]


def test_a_killed_follower_process_fails_sync_and_a_restart_takes_up(cluster, zk, zk_chroot,
                                                                     kafka_admin, prefix,
                                                                     tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 100)
    first = f"{prefix}a"
    second = next(g for g in (f"{prefix}b{i}" for i in range(100))
                  if shard_of(g, 2) != shard_of(first, 2))
    for g in (first, second):
        put(zk, f"/consumers/{g}/offsets/{topic}/0", b"10")
    state, address = tmp_path / "state", f"127.0.0.1:{free_port()}"

    log = tmp_path / "sync-1.log"
    with log.open("w") as err:
        sync = start_sync(zk_chroot, cluster.bootstrap_server, prefix, state, address, err,
                          "--writers", "2")
        try:
            scraped_when("both groups mirrored", address, lambda s: value(
                s, "zk2kafka_sync_offsets_mirrored_total") == 2, timeout=60)
            shards = followers(sync)
            assert len(shards) == 2, descendants(sync.pid)
            os.kill(shards[0], signal.SIGKILL)
            sync.wait(timeout=60)
        finally:
            if sync.poll() is None:
                sync.kill()
    assert sync.returncode != 0
    assert "died (exit -9)" in log.read_text(), log.read_text()[-3000:]
    wait_for("the other follower process gone", lambda: not any(
        Path(f"/proc/{p}").exists() for p in shards))

    # Old consumers went on committing meanwhile: a new sync mirrors where they stand.
    for g in (first, second):
        zk.set(f"/consumers/{g}/offsets/{topic}/0", b"20")
    log = tmp_path / "sync-2.log"
    with log.open("w") as err:
        sync = start_sync(zk_chroot, cluster.bootstrap_server, prefix, state, address, err,
                          "--writers", "2")
        try:
            wait_for("both groups at 20 in Kafka", lambda: all(
                offsets.get((topic, 0), (None,))[0] == 20
                for offsets in kafka_offsets(kafka_admin, [first, second]).values()), timeout=60)
            shards = followers(sync)
            assert len(shards) == 2
            # kill -9 of the command: its follower processes die with it.
            sync.kill()
            sync.wait(timeout=30)
        finally:
            if sync.poll() is None:
                sync.kill()
    wait_for("the follower processes gone with the command", lambda: not any(
        Path(f"/proc/{p}").exists() for p in shards))

    # Nothing holds the writers' lock: a third sync starts, and stops cleanly.
    log = tmp_path / "sync-3.log"
    with log.open("w") as err:
        sync = start_sync(zk_chroot, cluster.bootstrap_server, prefix, state, address, err,
                          "--writers", "2")
        scraped_when("the third sync following", address, lambda s: value(
            s, "zk2kafka_sync_groups", state="ready") == 2, timeout=60)   # no old consumer
        stop_sync(sync, log)
