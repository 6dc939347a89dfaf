"""Follow mode's view of ZooKeeper: read the followed groups and keep one-shot watches on them,
in the style of kazoo.recipe.watchers (an object owns its registration and re-arming, and calls
back).

Every offset znode a read saw carries a kazoo watch, as does each group's `ids/`. A watch fires
once; reading the group again arms again the watches that fired, and only those: a watch still
armed has seen no change since it was armed (ZooKeeper delivers a watch's event before any read
that shows the change), and a request per znode of a group is what a pass spends most of its time
on (kazoo's cost is per request). A partition under both layouts is the row
`migrate.zk.layouts.pick` chooses, as the diff does, and both znodes are watched.

A group whose only news is offset znodes whose data changed (an old consumer committing) is read
znode by znode: each changed znode is read with a watch set by the same request, so a change
after it fires again, and the rest of the group is as its last read left it (its other watches
have not fired). Anything else (ids/ changed, a znode created or deleted, a lost session, a group
with a partition under both layouts, a read that failed) reads the group whole.

A whole read of a group where no watch fired (a re-scan, a renewal) lists its directories and
ids/ as any whole read does, so new partitions, topics and consumers are seen, but reads again only
the offset znodes whose watch is not armed, and one more, whose row tells ids/: a re-scan of a quiet
group costs its listings rather than a request per partition. Where a request failed in a way that
leaves unknown whether its watch was set (an outage), `forget()` makes every next read full.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import EventType, WatchedEvent

from migrate.kafka.values import Key, label
from migrate.zk import layouts
from migrate.zk.quiet import seconds
from migrate.zk.reader import ZkOffsetReader

ANSWER_TIMEOUT = 30   # seconds arming waits for ZooKeeper's answer to each watch request


class ZkOffset(NamedTuple):
    """A partition's offset as ZooKeeper holds it: the value sync mirrors, and its znode."""

    offset: int
    path: str
    version: int | None
    layout: str
    mtime: float | None = None   # when ZooKeeper last changed it, seconds since the epoch


class GroupRead(NamedTuple):
    """One group as a read saw it."""

    offsets: dict[Key, ZkOffset]   # the rows sync can mirror
    unmirrored: dict[str, str]     # the rows it cannot: label (or znode path) -> why
    old_consumers: int             # old consumers registered in ids/


class _Watch(NamedTuple):
    """A watch to arm: on a znode's existence (and version), or on its children."""

    group: str
    path: str
    version: int | None     # what the read saw; None where there is none to compare (ids/)
    children: bool = False


class _Request(NamedTuple):
    """A watch request sent, its answer not yet awaited."""

    watch: _Watch
    answer: IAsyncResult


class GroupWatches:
    """Reads groups from ZooKeeper and watches what it read; `on_change(group)` is called when a
    watch fires, or at once for a znode that changed between the read and the arming: the group
    is to be read again. `on_armed(watches, seconds)` is told each batch armed, for the metrics;
    `on_read(groups)` each batch of groups read whole and watched again (sync/outage.py).
    """

    def __init__(self, client: KazooClient, reader: ZkOffsetReader,
                 on_change: Callable[[str], None],
                 on_armed: Callable[[int, float], None] = lambda watches, seconds: None,
                 on_read: Callable[[Iterable[str]], None] = lambda groups: None):
        self.client, self.reader, self.on_change = client, reader, on_change
        self.on_armed, self.on_read = on_armed, on_read
        self._callbacks: dict[str, Callable[[WatchedEvent], None]] = {}
        # group -> (path, children) of the watches set and not fired yet; the callbacks (on
        # kazoo's thread) take out what fired.
        self._armed: dict[str, set[tuple[str, bool]]] = {}
        # What fired since a group was last read (filled on kazoo's thread): the offset znodes
        # whose data changed, and the groups with any other news.
        self._changed: dict[str, set[str]] = {}
        self._whole: set[str] = set()
        # Per group read whole: its last read, and its offset znodes (path -> key, layout);
        # absent for a group with a partition under both layouts.
        self._last: dict[str, GroupRead] = {}
        self._leaves: dict[str, dict[str, tuple[Key, str]]] = {}
        self._lock = threading.Lock()

    def read(self, names: list[str], whole: bool = False) -> dict[str, GroupRead]:
        """Read `names` and arm their watches again: by changed znode where that is all that
        fired, else (or if `whole`) whole."""
        with self._lock:
            changed = {n: self._changed.pop(n, set()) for n in names}
            news = {n for n in names if changed[n] or n in self._whole}
            whole = set(names) if whole else {
                n for n in names if n in self._whole or not changed[n]
                or not changed[n] <= self._leaves.get(n, {}).keys()}
            self._whole.difference_update(names)
        reads = self._by_znode({n: changed[n] for n in names if n not in whole})
        rest = [n for n in names if n not in reads]
        if rest:
            reads.update(self._whole_groups(rest, quiet=[n for n in rest if n not in news]))
        return reads

    def forget(self) -> None:
        """Trust no watch this object counts as armed (a request to ZooKeeper failed in a way that
        leaves unknown whether its watch was set): the next read of each group is whole, reads
        every znode and arms every watch again."""
        with self._lock:
            self._armed.clear()
            self._leaves.clear()

    def _by_znode(self, changed: dict[str, set[str]]) -> dict[str, GroupRead]:
        """The groups whose changed znodes were read (and watched again), each with the rest as
        last read; a group missing from the answer is to be read whole."""
        if not changed:
            return {}
        started = time.monotonic()
        with self._lock:   # counted armed before the request goes out, as in _arm
            for name, paths in changed.items():
                self._armed.setdefault(name, set()).update((path, False) for path in paths)
        pending = [(name, path, self.client.get_async(path, watch=self._callback(name)))
                   for name, paths in changed.items() for path in sorted(paths)]
        answers: dict[str, list[tuple[str, object]]] = {}
        failed = set()
        for name, path, request in pending:
            try:
                answers.setdefault(name, []).append((path, request.get(timeout=ANSWER_TIMEOUT)))
            except KazooException:
                # deleted since (no watch was set; the whole read sees it gone), or the
                # session is gone (the whole read fails as an outage, the re-scan catches up)
                with self._lock:
                    self._armed[name].discard((path, False))
                failed.add(name)
        reads = {}
        for name, replies in answers.items():
            read = self._patched(name, replies) if name not in failed else None
            if read is not None:
                self._last[name] = read
                reads[name] = _copy(read)
        self.on_armed(len(pending), time.monotonic() - started)
        return reads

    def _patched(self, name: str, replies: list[tuple[str, object]]) -> GroupRead | None:
        """The group's last read with these znodes' new values, or None (read it whole)."""
        last = self._last[name]
        offsets, unmirrored = dict(last.offsets), dict(last.unmirrored)
        for path, reply in replies:
            key, layout = self._leaves[name][path]
            row = self.reader.offset_row(name, path, layout, *key, reply)
            if row is None:
                return None
            offsets.pop(key, None)
            unmirrored.pop(label(key), None)
            if row["status"] == layouts.OK:
                offsets[key] = ZkOffset(row["offset"], path, row["version"], layout,
                                        seconds(row["mtime"]))
            else:
                unmirrored[label(key)] = f"{row['status']}: {row['reason']}"
        return GroupRead(offsets, unmirrored, last.old_consumers)

    def _whole_groups(self, names: list[str], quiet: list[str] = ()) -> dict[str, GroupRead]:
        """Read `names` whole and arm their watches again. In the `quiet` ones (no watch fired
        since their last read), an offset znode whose watch is still armed is not read again (but
        one per group, whose row tells ids/): it is as that read saw it."""
        watched_since = self._watched_since_read(quiet)
        kept: dict[str, dict[str, tuple[Key, str]]] = {}   # group -> the znodes not read again

        def unchanged(group: str, path: str) -> bool:
            if path not in watched_since.get(group, ()):
                return False
            if group not in kept:
                kept[group] = {}
                return False
            kept[group][path] = watched_since[group][path]
            return True

        found: dict[str, dict[Key, list[dict]]] = {n: {} for n in names}
        unkeyed: dict[str, dict[str, str]] = {n: {} for n in names}
        consumers: dict[str, int] = {}
        for batch in self.reader.batches(names, unchanged if watched_since else None):
            for row in batch.to_pylist():
                consumers[row["group"]] = row["zk_consumers"] or 0
                if row["partition"] is None or row["topic"] is None:
                    # a directory it could not list, a name that is no partition
                    unkeyed[row["group"]][row["path"]] = f"{row['status']}: {row['reason']}"
                else:
                    key = (row["topic"], row["partition"])
                    found[row["group"]].setdefault(key, []).append(row)
        # A znode read under the other layout for a kept one's partition: the row that stands for
        # it is layouts.pick's, which wants both read.
        clash = [n for n, paths in kept.items()
                 if any(key in found[n] for key, _ in paths.values())]
        reads = self._whole_groups(clash) if clash else {}
        watched = []
        for name in names:
            if name in reads:
                continue
            read = GroupRead({}, dict(unkeyed[name]), consumers.get(name, 0))
            last = self._last.get(name)
            for key, _ in kept.get(name, {}).values():
                if key in last.offsets:
                    read.offsets[key] = last.offsets[key]
                else:
                    read.unmirrored[label(key)] = last.unmirrored[label(key)]
            for key, rows in found[name].items():
                watched += [_Watch(name, r["path"], r["version"]) for r in rows]
                row = layouts.pick(rows)
                if row["status"] == layouts.OK:
                    read.offsets[key] = ZkOffset(row["offset"], row["path"], row["version"],
                                                 row["layout"], seconds(row["mtime"]))
                else:
                    read.unmirrored[label(key)] = f"{row['status']}: {row['reason']}"
            self._last[name], reads[name] = read, _copy(read)
            if all(len(rows) == 1 for rows in found[name].values()):
                self._leaves[name] = {rows[0]["path"]: (key, rows[0]["layout"])
                                      for key, rows in found[name].items()}
                self._leaves[name].update(kept.get(name, {}))
            else:
                self._leaves.pop(name, None)
            ids = f"{self.reader.root}/{name}/ids"
            # ids/: its exists watch sees it created or deleted, its children watch sees
            # consumers come and go.
            watched += [_Watch(name, ids, None), _Watch(name, ids, None, children=True)]
        self._arm(watched)
        self.on_read(reads)
        return reads

    def _watched_since_read(self, names: list[str]) -> dict[str, dict[str, tuple[Key, str]]]:
        """Per group of `names` last read whole under one layout, its offset znodes whose watch is
        armed and whose row that read (or a later one of the znode) holds."""
        out = {}
        with self._lock:
            for name in names:
                armed, last = self._armed.get(name, set()), self._last.get(name)
                leaves = {path: (key, layout)
                          for path, (key, layout) in self._leaves.get(name, {}).items()
                          if (path, False) in armed and (key in last.offsets
                                                         or label(key) in last.unmirrored)}
                if leaves:
                    out[name] = leaves
        return out

    def _arm(self, watches: list[_Watch]) -> None:
        # Every request is sent before any answer is awaited: one round trip for all the groups.
        started = time.monotonic()
        pending = []
        with self._lock:
            # Counted armed before the request goes out: a watch that fires before its answer is
            # read is then taken out by its callback, never left counted after it fired.
            todo = [w for w in watches if _key(w) not in self._armed.setdefault(w.group, set())]
            for watch in todo:
                self._armed[watch.group].add(_key(watch))
        for watch in todo:
            ask = self.client.get_children_async if watch.children else self.client.exists_async
            pending.append(_Request(watch, ask(watch.path, watch=self._callback(watch.group))))
        for request in pending:
            try:
                stat = request.answer.get(timeout=ANSWER_TIMEOUT)
            except KazooException:
                # ids/ absent (the exists watch covers its creation), or the session is gone
                # (the next re-scan reads every group again): no watch was set.
                with self._lock:
                    self._armed[request.watch.group].discard(_key(request.watch))
                continue
            version = request.watch.version
            if version is not None and (stat is None or stat.version != version):
                with self._lock:   # the read is stale: the next reads the group whole
                    self._whole.add(request.watch.group)
                self.on_change(request.watch.group)
        self.on_armed(len(todo), time.monotonic() - started)

    def _callback(self, group: str) -> Callable[[WatchedEvent], None]:
        # One function per group for the life of this object: kazoo keeps a path's watchers
        # in a set, so arming again adds none.
        if group not in self._callbacks:
            self._callbacks[group] = lambda event: self._fired(group, event)
        return self._callbacks[group]

    def _fired(self, group: str, event: WatchedEvent) -> None:
        """A watch of `group` fired (on kazoo's thread): it is armed no more; read the group."""
        with self._lock:
            armed = self._armed.setdefault(group, set())
            if event.type == EventType.CHANGED:
                armed.discard((event.path, False))
                self._changed.setdefault(group, set()).add(event.path)
            else:
                self._whole.add(group)
            if event.type == EventType.CHILD:
                armed.discard((event.path, True))
            elif event.type == EventType.CREATED:
                armed.discard((event.path, False))
            elif event.type == EventType.DELETED:   # fires a node's child watch too
                armed.discard((event.path, False))
                armed.discard((event.path, True))
            elif event.type != EventType.CHANGED:
                # NONE: the connection or the session was lost and kazoo dropped every watch,
                # calling each watcher once; the whole group is to be armed again.
                armed.clear()
        self.on_change(group)


def _copy(read: GroupRead) -> GroupRead:
    """A read the caller may change (sync moves rows Kafka lacks to the unmirrored ones)."""
    return GroupRead(dict(read.offsets), dict(read.unmirrored), read.old_consumers)


def _key(watch: _Watch) -> tuple[str, bool]:
    return watch.path, watch.children
