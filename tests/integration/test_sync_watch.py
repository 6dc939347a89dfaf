"""sync's view of ZooKeeper (migrate.sync.watch) on the sandbox's real ZooKeeper: a group whose
only news is changed offset znodes is read znode by znode and watched again by the same read;
anything else reads it whole, and no change is missed either way."""

from __future__ import annotations

import threading
import time

from migrate.sync.watch import GroupWatches
from migrate.zk.reader import Selection, ZkOffsetReader

from support.seeding import put

OLD = "kafka-1.1.0-offset"


class Spy:
    """Counts the group reads that walk the whole group (ZkOffsetReader.batches), and keeps the
    znodes they read (`got`)."""

    def __init__(self, reader: ZkOffsetReader):
        self.whole = 0
        self.got: list[str] = []
        self._batches, self._run = reader.batches, reader.batch.run
        reader.batches, reader.batch.run = self, self._counted
        self.after_gets = lambda: None   # run once, after the next batch of reads answered

    def __call__(self, groups, unchanged=None):
        self.whole += 1
        return self._batches(groups, unchanged)

    def _counted(self, requests):
        requests = list(requests)
        self.got += [r.path for r in requests if r.op == "get"]
        answers = self._run(requests)
        if any(r.op == "get" for r in requests):
            self.after_gets, after = (lambda: None), self.after_gets
            after()
        return answers


class Fired:
    """GroupWatches' on_change: the groups a watch told about, waited for by the test."""

    def __init__(self):
        self.groups: set[str] = set()
        self._event = threading.Event()

    def __call__(self, group: str) -> None:
        self.groups.add(group)
        self._event.set()

    def wait(self, group: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while group not in self.groups:
            assert self._event.wait(max(0.0, deadline - time.monotonic())), f"no watch fired for {group}"
            self._event.clear()
        self.groups.discard(group)


def setup(zk, prefix, partitions=3):
    group = f"{prefix}g"
    for p in range(partitions):
        put(zk, f"/consumers/{group}/offsets/{prefix}t/{p}", str(10 + p).encode())
    zk.ensure_path(f"/consumers/{group}/ids")
    reader = ZkOffsetReader(zk, "/consumers", selection=Selection(groups=(f"{prefix}.*",)))
    fired = Fired()
    watches = GroupWatches(zk, reader, fired)
    spy = Spy(reader)
    return group, f"/consumers/{group}/offsets/{prefix}t", watches, fired, spy


def offsets(read) -> dict[int, int]:
    return {partition: zk.offset for (_, partition), zk in read.offsets.items()}


def test_a_changed_offset_znode_is_read_alone_and_watched_again(zk, prefix):
    group, topic, watches, fired, spy = setup(zk, prefix)
    assert offsets(watches.read([group])[group]) == {0: 10, 1: 11, 2: 12}
    assert spy.whole == 1

    zk.set(f"{topic}/0", b"20")
    fired.wait(group)
    assert offsets(watches.read([group])[group]) == {0: 20, 1: 11, 2: 12}
    # The same znode again: the read armed its watch, or this change would never be told.
    zk.set(f"{topic}/0", b"21")
    zk.set(f"{topic}/2", b"22")
    fired.wait(group)
    time.sleep(0.2)   # both events in
    fired.groups.discard(group)   # the second one's notice too: the next wait is for the next change
    assert offsets(watches.read([group])[group]) == {0: 21, 1: 11, 2: 22}
    # A value that is no offset leaves the offsets for the unmirrored rows, and back.
    zk.set(f"{topic}/1", b"x")
    fired.wait(group)
    read = watches.read([group])[group]
    assert offsets(read) == {0: 21, 2: 22} and list(read.unmirrored) == [f"{prefix}t-1"]
    zk.set(f"{topic}/1", b"31")
    fired.wait(group)
    read = watches.read([group])[group]
    assert offsets(read) == {0: 21, 1: 31, 2: 22} and read.unmirrored == {}
    assert spy.whole == 1, "a changed offset znode read the group whole"


def test_anything_but_changed_offsets_reads_the_group_whole(zk, prefix):
    group, topic, watches, fired, spy = setup(zk, prefix)
    watches.read([group])
    zk.delete(f"{topic}/2")
    fired.wait(group)
    assert offsets(watches.read([group])[group]) == {0: 10, 1: 11}
    assert spy.whole == 2
    zk.create(f"/consumers/{group}/ids/consumer-1", b"{}", ephemeral=True)
    fired.wait(group)
    assert watches.read([group])[group].old_consumers == 1
    assert spy.whole == 3
    # A change after the whole reads is still told, and read alone.
    zk.set(f"{topic}/1", b"41")
    fired.wait(group)
    assert offsets(watches.read([group])[group]) == {0: 10, 1: 41}
    assert spy.whole == 3


def test_a_group_with_a_partition_under_both_layouts_is_read_whole(zk, prefix):
    """The row that stands for the partition is `layouts.pick`'s, which only a whole read knows."""
    group, topic, watches, fired, spy = setup(zk, prefix, partitions=1)
    old = f"/consumers/{group}/offset/{prefix}t/0"
    put(zk, old, b"5")
    assert offsets(watches.read([group])[group]) == {0: 5}   # the newer znode
    zk.set(f"{topic}/0", b"50")
    fired.wait(group)
    assert offsets(watches.read([group])[group]) == {0: 50}
    assert spy.whole == 2


def test_a_whole_read_of_a_quiet_group_reads_only_what_no_watch_covers(zk, prefix):
    """A re-scan's read: listings show what no watch tells (a new partition); an offset znode still
    watched since its last read is not read again, but one per group is, whose row tells ids/."""
    group, topic, watches, fired, spy = setup(zk, prefix, partitions=4)
    zk.create(f"/consumers/{group}/ids/consumer-1", b"{}", ephemeral=True)
    watches.read([group])
    assert len(spy.got) == 4
    spy.got.clear()
    read = watches.read([group], whole=True)[group]
    assert offsets(read) == {0: 10, 1: 11, 2: 12, 3: 13} and read.old_consumers == 1
    assert len(spy.got) == 1

    spy.got.clear()
    put(zk, f"{topic}/4", b"14")   # tells no watch: only a listing finds it
    read = watches.read([group], whole=True)[group]
    assert offsets(read) == {0: 10, 1: 11, 2: 12, 3: 13, 4: 14}
    assert f"{topic}/4" in spy.got and len(spy.got) == 2

    # A change read alone, then a quiet whole read: the kept row is the one read alone.
    zk.set(f"{topic}/2", b"22")
    fired.wait(group)
    watches.read([group])
    spy.got.clear()
    assert offsets(watches.read([group], whole=True)[group]) == {0: 10, 1: 11, 2: 22, 3: 13, 4: 14}
    assert len(spy.got) == 1

    # A group with news is read in full, whole or not.
    zk.set(f"{topic}/1", b"21")
    fired.wait(group)
    spy.got.clear()
    assert offsets(watches.read([group], whole=True)[group]) == {0: 10, 1: 21, 2: 22, 3: 13, 4: 14}
    assert len(spy.got) == 5
    # After forget() (an outage) every znode is read again, and a change still fires.
    watches.forget()
    spy.got.clear()
    assert offsets(watches.read([group], whole=True)[group])[1] == 21 and len(spy.got) == 5
    zk.set(f"{topic}/3", b"33")
    fired.wait(group)
    assert offsets(watches.read([group])[group])[3] == 33


def test_a_quiet_read_that_finds_a_kept_partition_under_the_other_layout_reads_both(zk, prefix):
    group, topic, watches, fired, spy = setup(zk, prefix, partitions=2)
    watches.read([group])
    put(zk, f"/consumers/{group}/offset/{prefix}t/1", b"5")   # newer; tells no watch
    assert offsets(watches.read([group], whole=True)[group]) == {0: 10, 1: 5}


def test_a_change_between_the_read_and_its_watch_reads_the_group_in_full(zk, prefix):
    """The watch armed after the read is already past the value read: the next read of the group
    reads that znode again, rather than keep the stale row as watched since."""
    group, topic, watches, fired, spy = setup(zk, prefix)
    spy.after_gets = lambda: zk.set(f"{topic}/1", b"99")
    assert offsets(watches.read([group])[group])[1] == 11
    fired.wait(group)
    assert offsets(watches.read([group])[group])[1] == 99
