"""When sync calls a group ready to switch: no old consumer registered under ids/, every offset
in Kafka, no row sync cannot mirror, and its offsets still in ZooKeeper for `--quiet-for`
(migrate.zk.quiet, the rule ready-for-kraft applies too). Each change of a group's readiness
is said once.

A group whose offsets moved within the window is not ready even with ids/ empty: whatever wrote
them (an OffsetCommit v0 client, a custom committer) never registers, and starting the new
consumers beside it would read the same partitions twice. Such a group is judged again when
the window ends, without waiting for a re-scan.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable

from migrate.journal.journal import Journal
from migrate.kafka.values import Key
from migrate.sync.state import SHOWN, GroupState
from migrate.sync.watch import ZkOffset
from migrate.zk.quiet import Moved, Stamp, moved_within, shown, when

log = logging.getLogger("migrate.sync.follower")

# (group, {znode path: its version now}) -> {path: the zk2kafka run that left it at that version}
OwnWrites = Callable[[str, dict[str, "int | None"]], dict[str, str]]


class Readiness:
    """Judges groups ready or not, logs each change once and calls `changed()` for it (the
    status file shows it at once). `quiet_for`: seconds a group's offsets must be still."""

    def __init__(self, quiet_for: float, changed: Callable[[], None],
                 own_writes: OwnWrites = lambda group, versions: {}):
        self.quiet_for, self.changed, self.own_writes = quiet_for, changed, own_writes
        self._due: dict[str, float] = {}   # group -> when its window ends (time.time())
        # The same as (when, group), earliest first, with entries _due no longer holds: asked
        # after every pass, due() must not walk every group waiting (all of them, in a fleet of
        # committers that never register in ids/).
        self._queue: list[tuple[float, str]] = []
        self.flips = 0   # groups that became ready or stopped being ready

    def due(self, now: float | None = None) -> list[str]:
        """The groups whose window has ended since they were last judged: judge them again."""
        now = time.time() if now is None else now
        ended = set()
        while self._queue and self._queue[0][0] <= now:
            at, name = heapq.heappop(self._queue)
            if self._due.get(name) == at:
                del self._due[name]
                ended.add(name)
        return sorted(ended)

    def _wait(self, name: str, until: float) -> None:
        if self._due.get(name) != until:
            self._due[name] = until
            heapq.heappush(self._queue, (until, name))
            if len(self._queue) > 2 * len(self._due) + 1024:   # mostly stale: a window moved on
                self._queue = [(at, n) for n, at in self._due.items()]
                heapq.heapify(self._queue)

    def judge(self, name: str, group: GroupState, unconfirmed: bool) -> None:
        """Say once that a group can switch, or why it no longer can."""
        if group.ready and (group.unmirrored or self._moving(group) is not None):
            # e.g. a topic deleted, a late writer
            moved = self.moved(group)
            group.ready = False
            self.flips += 1
            group.said_moving = bool(moved) and not group.unmirrored   # said here
            self.changed()
            why = _rows(group.unmirrored) if group.unmirrored else \
                f"its offsets moved in ZooKeeper: {shown(moved)}"
            log.warning("sync: group %s is no longer ready: %s", name, why)
        if group.stopped is not None or group.ready or group.old_consumers != 0 or unconfirmed:
            return
        if group.unmirrored:
            if group.said_unmirrored != group.unmirrored:
                group.said_unmirrored = dict(group.unmirrored)
                self.changed()
                more = len(group.unmirrored) - SHOWN
                log.warning("sync: group %s: no old consumer left in ZooKeeper ids/, but not ready:"
                            " %d row(s) sync cannot mirror: %s%s",
                            name, len(group.unmirrored), _rows(group.unmirrored),
                            f" (+{more} more)" if more > 0 else "")
            return
        latest = self._moving(group)
        if latest is not None:
            self._wait(name, latest + self.quiet_for)
            if not group.said_moving:
                group.said_moving = True
                self.changed()
                moved = self.moved(group)
                # A znode at the version a zk2kafka migrate run left (its journal) was written by
                # zk2kafka itself, not by a writer that does not register.
                versions = {zk.path: zk.version for zk in group.offsets.values()}
                own = self.own_writes(name, {m.path: versions.get(m.path) for m in moved})
                others = [m for m in moved if m.path not in own]
                if others:
                    log.warning("sync: group %s: no old consumer left in ZooKeeper ids/, but not"
                                " ready: its offsets moved within the last %s: %s; something that"
                                " does not register in ids/ may still commit (an OffsetCommit v0"
                                " client, a custom committer); ready once they are still for %s"
                                " (not before %s)",
                                name, _span(self.quiet_for), shown(others),
                                _span(self.quiet_for), when(self._due[name]))
                else:
                    log.warning("sync: group %s: no old consumer left in ZooKeeper ids/; its"
                                " offsets were last written by zk2kafka itself (migrate run %s, by"
                                " the journal): %s; ready once they are still for %s since (not"
                                " before %s), long enough for a writer that does not register to"
                                " show", name, ", ".join(sorted(set(own.values()))), shown(moved),
                                _span(self.quiet_for), when(self._due[name]))
            return
        if group.offsets:
            group.ready, group.said_moving = True, False
            self.flips += 1
            self._due.pop(name, None)
            self.changed()
            log.warning("sync: group %s: no old consumer left in ZooKeeper ids/, every offset is"
                        " in Kafka and none moved for %s; ready to start its new consumers",
                        name, _span(self.quiet_for))

    def _moving(self, group: GroupState) -> float | None:
        """When the group's offsets last moved, if within the window (else None): `moved()`'s
        latest, without building it. Asked for every group a pass reads."""
        latest = None
        seen = group.moved
        for key, zk in group.offsets.items():
            at, saw = zk.mtime, seen.get(key)
            if saw is not None and (at is None or saw > at):
                at = saw
            if at is not None and (latest is None or at > latest):
                latest = at
        return latest if latest is not None and latest >= time.time() - self.quiet_for else None

    def moved(self, group: GroupState) -> list[Moved]:
        """The group's offset znodes that changed within the window, by ZooKeeper's mtime or as
        sync saw them change."""
        stamps = [Stamp(zk.path, zk.mtime) for zk in group.offsets.values()]
        seen = {group.offsets[key].path: at for key, at in group.moved.items()
                if key in group.offsets}
        return moved_within(stamps, time.time() - self.quiet_for, seen)


def note_moves(group: GroupState, read: dict[Key, ZkOffset], at: float) -> None:
    """Note, on sync's own clock, each offset znode whose new read shows a change since the
    last."""
    for key, zk in read.items():
        last = group.offsets.get(key)
        if last is not None and (last.version != zk.version or last.path != zk.path):
            group.moved[key] = at


def _rows(unmirrored: dict[str, str]) -> str:
    return "; ".join(f"{row}: {why}" for row, why in sorted(unmirrored.items())[:SHOWN])


def _span(seconds: float) -> str:
    """A window as the flags write it: 2m, 90s, 1.5s."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def journaled_zk_writes(journal: Journal | None, group: str,
                        versions: dict[str, int | None]) -> dict[str, str]:
    """Those znodes of `group` (path -> its version now) that are at the version a zk2kafka
    migrate run of `journal` left them at when it wrote them: path -> that run."""
    if journal is None or not versions:
        return {}
    found = {}
    for run_id in journal.run_ids("migrate"):   # asked per group: runs() counts a sync's rows
        for part in journal.partitions_of(run_id, [group]).get(group, []):
            now = versions.get(part.zk_path)
            if now is not None and part.after_zk_version == now:
                found[part.zk_path] = run_id
    return found
