"""What sync knows while it follows: each group's state, the re-scan under way, and the run's
figures (logged every interval, written to sync-status.json, read by the metrics endpoint)."""

from __future__ import annotations

import calendar
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.diff.plan import Planned
from migrate.kafka.values import Key, label
from migrate.state import ISO_FORMAT, iso
from migrate.sync.watch import ZkOffset

SHOWN = 5                  # groups or rows a line names before it only counts
UNKNOWN = ("UNKNOWN_PARTITION: no such topic or partition in Kafka's metadata"
           " (deleted, or not visible to this client)")


@dataclass
class GroupState:
    """What sync knows of one group."""

    offsets: dict[Key, ZkOffset] = field(default_factory=dict)
    mirrored: dict[Key, int] = field(default_factory=dict)  # what this run last committed, only
    unmirrored: dict[str, str] = field(default_factory=dict)  # rows sync cannot mirror -> why
    said_unmirrored: dict[str, str] | None = None  # unmirrored rows last logged: say changes once
    old_consumers: int | None = None
    stopped: str | None = None   # why it is no longer synced
    stop_reason: str | None = None   # the same as one of metrics.STOP_REASONS, for the series
    ready: bool = False          # old consumers gone, all mirrored, none unmirrorable, offsets
    #                              still for --quiet-for: said once
    # offsets sync saw change (a new version read), and when on its own clock (time.time())
    moved: dict[Key, float] = field(default_factory=dict)
    said_moving: bool = False    # "not ready: its offsets moved" was said since it last was ready
    last_commit: float = 0.0
    kafka: dict[Key, int] = field(default_factory=dict)  # Kafka's offsets after sync's last pass
    last_mirrored: float = 0.0   # when Kafka last accepted a change of its offsets (not a renewal)
    offsets_mirrored: int = 0
    # metrics.lag as of sync's last pass of the group: worked out once a pass, not for every
    # group at every scrape (docs/performance.md).
    lag: tuple[int, int] = (0, 0)

    def wanted(self) -> dict[Key, int]:
        """The offsets Kafka should hold: ZooKeeper's, where sync can mirror them."""
        return {key: zk.offset for key, zk in self.offsets.items()}


@dataclass
class Sweep:
    """A re-scan under way: the groups listed when it began, read whole a slice at a time."""

    names: list[str]
    started: float      # time.monotonic()
    spread: float       # seconds its reads are spread over; 0: all at once
    done: int = 0       # names[:done] are read

    def due(self, now: float) -> list[str]:
        """The groups whose turn has come by `now` and that are not read yet."""
        share = 1.0 if self.spread <= 0 else min(1.0, (now - self.started) / self.spread)
        return self.names[self.done:math.ceil(share * len(self.names))]


@dataclass
class SyncStatus:
    """The live figures, logged every interval and written to sync-status.json."""

    started: float = field(default_factory=time.time)
    commits: int = 0                      # OffsetCommits sent (changes and renewals)
    offsets: int = 0                      # offsets changed and mirrored
    renewals: int = 0
    rescans: int = 0
    last_change: str | None = None
    last_change_at: float | None = None
    errors: int = 0
    # When ZooKeeper's connection was lost, while it is (sync/outage.py); None while connected
    zookeeper_away_since: float | None = None
    # --map-group: old -> new of the groups renamed so far (sync's own dict, which grows)
    renamed: Mapping[str, str] = field(default_factory=dict)

    def line(self, groups: dict[str, GroupState]) -> str:
        return status_line(self.to_json(groups))

    def to_json(self, groups: dict[str, GroupState]) -> dict[str, Any]:
        return {**self.figures(), **group_lists(groups, self.renamed)}

    def figures(self) -> dict[str, Any]:
        """The run's figures, without the groups."""
        return {"started": iso(self.started), "updated": iso(time.time()),
                "commits": self.commits, "offsets_mirrored": self.offsets,
                "renewals": self.renewals, "rescans": self.rescans, "errors": self.errors,
                "last_change": self.last_change,
                "last_change_at": iso(self.last_change_at) if self.last_change_at else None,
                "zookeeper_away_since": (iso(self.zookeeper_away_since)
                                         if self.zookeeper_away_since else None)}


def group_lists(groups: dict[str, GroupState],
                renamed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The groups by state, as sync-status.json names them (by their ZooKeeper names; with
    --map-group, `groups_renamed` gives the Kafka group of each renamed one)."""
    ordered = sorted(groups.items())   # once: 10,000 groups every status interval
    live = {name: g for name, g in ordered if g.stopped is None}
    renamed = renamed or {}
    moved = {name: renamed[name] for name, _ in ordered if name in renamed} if renamed else {}
    return {**({"groups_renamed": moved} if moved else {}),
            "groups_synced": list(live),
            "groups_ready": [name for name, g in live.items() if g.ready],
            "groups_unmirrored": {name: dict(sorted(g.unmirrored.items()))
                                  for name, g in live.items() if g.unmirrored},
            "groups_stopped": {name: g.stopped for name, g in ordered if g.stopped}}


def write_status(path: Path, status: dict[str, Any], suffix: str = ".tmp") -> None:
    """sync-status.json as `status` (SyncStatus.to_json), replaced whole (by way of a file of
    `suffix`, one per writing thread)."""
    tmp = path.with_suffix(suffix)
    tmp.write_text(json.dumps(status, indent=2) + "\n")
    tmp.replace(path)


def status_line(status: dict[str, Any]) -> str:
    """The status line logged every interval, from the figures of SyncStatus.to_json (or of
    several shards' merged)."""
    stopped = status["groups_stopped"]
    if status["last_change_at"]:
        at = calendar.timegm(time.strptime(status["last_change_at"], ISO_FORMAT))
        ago = f"{max(0.0, time.time() - at):.0f}s ago ({status['last_change']})"
    else:
        ago = "none yet"
    unmirrored = sum(len(rows) for rows in status["groups_unmirrored"].values())
    away = status.get("zookeeper_away_since")
    if away:   # the groups are followed, and nothing of them is mirrored meanwhile
        since = calendar.timegm(time.strptime(away, ISO_FORMAT))
        synced = (f"ZooKeeper away since {away} ({max(0.0, time.time() - since):.0f}s): nothing"
                  f" mirrored meanwhile; {len(status['groups_synced'])} group(s) followed")
    else:
        synced = f"{len(status['groups_synced'])} group(s) synced"
    text = (f"sync: {synced},"
            f" {status['offsets_mirrored']:,} offset change(s) mirrored"
            f" in {status['commits']:,} commit(s), {status['renewals']:,} renewal(s);"
            f" last change {ago}; {unmirrored:,} row(s) it cannot mirror;"
            f" stopped {len(stopped)}")
    if not stopped:
        return text
    return text + ": " + "; ".join(f"{g} ({why})" for g, why in sorted(stopped.items())[:SHOWN])


def unknown_partitions(groups: list[GroupState], known: dict[str, set[int]]) -> None:
    """Rows for a topic or partition Kafka lacks (a deleted topic) move from the offsets to the
    unmirrored rows. `known`: Kafka's partitions of the groups' topics. Known from metadata before
    any commit: Kafka answers such a commit with a retriable error, and the retries would stall
    every group of the cycle."""
    for group in groups:
        for topic, partition in list(group.offsets):
            if partition not in known.get(topic, ()):
                del group.offsets[topic, partition]
                group.unmirrored[label((topic, partition))] = UNKNOWN


def planned_row(key: Key, offset: int, zk: ZkOffset, before: tuple[int, str] | None) -> Planned:
    """A committed offset as the journal keeps it, with what Kafka held before."""
    topic, partition = key
    return Planned(topic, partition, offset, zk_path=zk.path, zk_version=zk.version,
                   layout=zk.layout, kafka_offset=before[0] if before else None)


def show_offsets(offsets: dict[Key, int], most: int = 3) -> str:
    shown = ", ".join(f"{t}-{p} -> {o}" for (t, p), o in sorted(offsets.items())[:most])
    return shown + (f" (+{len(offsets) - most} more)" if len(offsets) > most else "")
