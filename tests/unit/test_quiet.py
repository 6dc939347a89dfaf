"""The quiet rule shared by sync's "ready" and ready-for-kraft (migrate/zk/quiet.py), and sync's readiness."""

from __future__ import annotations

import datetime as dt
import logging
import time

from migrate.sync.readiness import Readiness
from migrate.sync.state import GroupState
from migrate.sync.watch import ZkOffset
from migrate.zk.quiet import Moved, Stamp, moved_within, seconds, still_at

NOW = 1_800_000_000.0


def test_a_znode_changed_within_the_window_moved_and_an_older_one_did_not():
    stamps = [Stamp("/c/g/offsets/t/0", NOW - 30), Stamp("/c/g/offsets/t/1", NOW - 300),
              Stamp("/c/g/offsets/t/2", None)]
    assert moved_within(stamps, since=NOW - 120) == [Moved("/c/g/offsets/t/0", NOW - 30)]
    assert moved_within(stamps, since=NOW - 10) == []


def test_a_change_the_caller_saw_counts_when_zookeepers_clock_runs_behind():
    # ZooKeeper's mtime says an hour ago (its clock is behind); the caller saw the change 5 s ago.
    stamps = [Stamp("/c/g/offsets/t/0", NOW - 3600)]
    assert moved_within(stamps, NOW - 120, seen={"/c/g/offsets/t/0": NOW - 5}) == [Moved("/c/g/offsets/t/0", NOW - 5)]


def test_latest_first_and_when_the_group_becomes_still():
    moved = moved_within([Stamp("a", NOW - 50), Stamp("b", NOW - 10)], NOW - 120)
    assert [m.path for m in moved] == ["b", "a"]
    assert still_at(moved, 120) == NOW - 10 + 120
    assert still_at([], 120) is None


def test_mtime_from_a_stat_and_from_a_snapshot_row_are_the_same_seconds():
    stamp = dt.datetime(2027, 1, 15, 8, 0, 0, tzinfo=dt.timezone.utc)
    assert seconds(int(stamp.timestamp() * 1000)) == seconds(stamp) == stamp.timestamp()
    assert seconds(None) is None


def _group(mtime: float, old_consumers: int = 0) -> GroupState:
    return GroupState(offsets={("t", 0): ZkOffset(5, "/consumers/g/offsets/t/0", 3, "standard", mtime)},
                      old_consumers=old_consumers)


def test_readiness_waits_for_quiet_then_says_ready_once(caplog):
    changes = []
    readiness = Readiness(60.0, lambda: changes.append(1))
    group = _group(time.time() - 5)
    with caplog.at_level(logging.WARNING):
        readiness.judge("g", group, unconfirmed=False)
        readiness.judge("g", group, unconfirmed=False)
    assert not group.ready
    assert sum("but not ready: its offsets moved within the last 1m: /consumers/g/offsets/t/0 at " in r.message
               for r in caplog.records) == 1
    assert readiness.due(time.time()) == []
    assert readiness.due(time.time() + 60) == ["g"]   # judged again when the window ends

    group.offsets[("t", 0)] = group.offsets[("t", 0)]._replace(mtime=time.time() - 61)
    readiness.judge("g", group, unconfirmed=False)
    assert group.ready and len(changes) == 2


def test_a_group_whose_window_moved_on_is_due_once_at_its_latest_end():
    readiness = Readiness(60.0, lambda: None)
    now = time.time()
    groups = {f"g{i}": _group(now - 5) for i in range(10)}
    for name, group in groups.items():
        readiness.judge(name, group, unconfirmed=False)
    moved = groups["g7"]
    for late in range(1, 3001):   # it moved again and again (past the queue's compaction)
        moved.offsets[("t", 0)] = moved.offsets[("t", 0)]._replace(mtime=now - 5 + late / 100)
        readiness.judge("g7", moved, unconfirmed=False)
    assert readiness.due(now + 54) == []
    assert readiness.due(now + 55) == sorted(n for n in groups if n != "g7")
    assert readiness.due(now + 80) == []   # its earlier windows' ends are not due any more
    assert readiness.due(now + 85) == ["g7"]
    assert readiness.due(now + 1000) == []


def test_a_ready_group_whose_offsets_move_again_is_no_longer_ready(caplog):
    readiness = Readiness(60.0, lambda: None)
    group = _group(time.time() - 600)
    readiness.judge("g", group, unconfirmed=False)
    assert group.ready
    group.moved[("t", 0)] = time.time()   # sync read a new version
    with caplog.at_level(logging.WARNING):
        readiness.judge("g", group, unconfirmed=False)
    assert not group.ready
    assert any("is no longer ready: its offsets moved in ZooKeeper" in r.message for r in caplog.records)


def test_an_old_consumer_still_registered_keeps_a_quiet_group_from_ready():
    readiness = Readiness(60.0, lambda: None)
    group = _group(time.time() - 600, old_consumers=1)
    readiness.judge("g", group, unconfirmed=False)
    assert not group.ready


def test_the_latest_move_is_the_latest_of_what_moved_within_the_window():
    import random

    readiness, rng, now = Readiness(60.0, lambda: None), random.Random(7), time.time()
    for _ in range(500):
        group = GroupState()
        for p in range(rng.randrange(0, 5)):
            mtime = rng.choice([None, now - rng.uniform(0, 120)])
            group.offsets[("t", p)] = ZkOffset(p, f"/consumers/g/offsets/t/{p}", 1, "standard", mtime)
            if rng.random() < 0.4:
                group.moved[("t", p)] = now - rng.uniform(0, 120)   # sync saw it change
        moved = readiness.moved(group)
        latest = readiness._moving(group)
        assert (latest is None) == (not moved)
        assert latest is None or abs(still_at(moved, 60.0) - (latest + 60.0)) < 1e-9


def test_zk2kafkas_own_migrate_write_is_no_unregistered_writer(tmp_path, caplog):
    from migrate.journal import journal as j
    from migrate.sync.readiness import journaled_zk_writes

    path = "/consumers/g/offsets/t/0"
    with j.Journal.open(tmp_path) as journal:
        journal.create_run("20261126T010203Z-ab12", "migrate", "h", {},
                           {"g": [j.Planned("t", 0, 5, path, 2, "standard", None)]})
        journal.set_groups("20261126T010203Z-ab12", {"g": j.Transition(j.VERIFIED, zk_after={path: 3})})
        journal.create_run("20261126T020203Z-cd34", "sync", "", {}, {})   # a sync run: no migrate write
        assert journal.run_ids("migrate") == ["20261126T010203Z-ab12"]
        assert journal.run_ids("sync") == ["20261126T020203Z-cd34"]
        assert journaled_zk_writes(journal, "g", {path: 3}) == {path: "20261126T010203Z-ab12"}
        assert journaled_zk_writes(journal, "g", {path: 4}) == {}   # written again since: not by that run
        assert journaled_zk_writes(journal, "other", {path: 3}) == {}
        assert journaled_zk_writes(None, "g", {path: 3}) == {}

        # The znode is at the version the run left (3): sync waits out the window, naming the run, no other writer.
        own = Readiness(60.0, lambda: None, lambda group, versions: journaled_zk_writes(journal, group, versions))
        with caplog.at_level(logging.WARNING):
            own.judge("g", _group(time.time() - 5), unconfirmed=False)
            moved = _group(time.time() - 5)
            moved.offsets[("t", 0)] = moved.offsets[("t", 0)]._replace(version=4)   # someone wrote it since
            own.judge("g", moved, unconfirmed=False)
    said = [r.message for r in caplog.records]
    assert any(m.startswith("sync: group g: no old consumer left in ZooKeeper ids/; its offsets were last written "
                            "by zk2kafka itself (migrate run 20261126T010203Z-ab12, by the journal): "
                            f"{path} at ") for m in said), said
    assert sum("zk2kafka itself" in m for m in said) == 1
    assert sum(m.startswith(f"sync: group g: no old consumer left in ZooKeeper ids/, but not ready: its offsets "
                            f"moved within the last 1m: {path} at ") and "may still commit" in m for m in said) == 1
