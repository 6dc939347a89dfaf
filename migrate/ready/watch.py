"""Watching the offsets tree for a while, so that a writer that never registers under ids/ (an
OffsetCommit v0 client, a custom committer) is found by its writes alone. Reads only.

Every offset znode read carries a data watch, and the directories above them (the root, each
group, its `offsets/<topic>` and `ids/`) a child watch, so new groups, partitions and
registrations are seen too. A watch fires once: each is armed again as it fires, and each change
is logged as it comes. What the watch saw is one of three witnesses; the second read's mtimes and
mzxids (check.py) are the others, so a change is found even if a watch could not be re-armed in
time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.protocol.states import EventType, WatchedEvent

from migrate.durations import exact_duration
from migrate.zk.quiet import when

log = logging.getLogger(__name__)
ANSWER_TIMEOUT = 30   # seconds to wait for ZooKeeper's answer to a batch of watch requests
COMMIT_INTERVAL = 60.0   # seconds: the old consumer's default auto.commit.interval.ms


def short_watch(quiet_for: float) -> str:
    """What a watch shorter than the old consumer's default commit interval cannot tell."""
    return (f"--quiet-for {exact_duration(quiet_for)} is shorter than 60s, the old consumer's "
            f"default auto.commit.interval.ms: a client committing at that interval may not have "
            f"written within the watch, and would not be seen (2m covers one interval with room "
            f"to spare)")


class WriteWatch:
    """Data watches on `znodes`, child watches on `directories`; `seen` maps each path that
    changed to when (time.time()) it last did. `group_of(path)` names a path's group in the
    log."""

    def __init__(self, client: KazooClient, group_of=lambda path: None):
        self.client, self.group_of = client, group_of
        self.seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def arm(self, znodes: Iterable[str], directories: Iterable[str]) -> int:
        """Set the watches, every request sent before any answer is awaited; how many were set."""
        pending = [self.client.exists_async(path, watch=self._data) for path in znodes]
        pending += [self.client.get_children_async(path, watch=self._children)
                    for path in directories]
        armed = 0
        for request in pending:
            try:
                request.get(timeout=ANSWER_TIMEOUT)
                armed += 1
            except KazooException:   # a directory that does not exist: nothing below to watch
                continue
        return armed

    def wait(self, seconds: float, stop: threading.Event | None = None) -> None:
        """Watch for `seconds` (or until `stop` is set), saying how long is left now and then."""
        stop = stop or threading.Event()
        deadline = time.monotonic() + seconds
        while not stop.wait(min(30.0, max(0.0, deadline - time.monotonic()))):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with self._lock:
                changed = len(self.seen)
            log.info("ready-for-kraft: watching ZooKeeper for writes, %.0fs left; %d znode(s) "
                     "changed so far", left, changed)

    def _data(self, event: WatchedEvent) -> None:
        if event.type not in (EventType.CHANGED, EventType.CREATED, EventType.DELETED):
            return   # NONE: the connection's news, not the znode's; the second read tells
        self._note(event.path, "written" if event.type == EventType.CHANGED
                   else event.type.lower())
        self._again(lambda: self.client.exists_async(event.path, watch=self._data))

    def _children(self, event: WatchedEvent) -> None:
        if event.type == EventType.CHILD:
            self._note(event.path, "children changed")
            self._again(lambda: self.client.get_children_async(event.path, watch=self._children))

    def _note(self, path: str, what: str) -> None:
        now = time.time()
        with self._lock:
            first = path not in self.seen
            self.seen[path] = now
        if first:
            group = self.group_of(path)
            log.warning("ready-for-kraft: %s%s %s at %s", f"group {group}: " if group else "",
                        path, what, when(now))

    @staticmethod
    def _again(arm) -> None:
        # On kazoo's event thread: send the request, never wait for its answer here.
        try:
            arm()
        except KazooException:   # the session is going: the second read still sees the change
            pass
