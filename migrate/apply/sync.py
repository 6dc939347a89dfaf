"""Follow mode for a rolling cutover: mirror each ZooKeeper offset change into Kafka while old consumers run.

Every offset znode of the selected groups carries a kazoo watch (one-shot, re-armed
each time the group is read again), as does each group's `ids/`. A watch marks its
group dirty; dirty groups are read again, batched, within `tick` seconds and their
changed offsets committed to Kafka, one OffsetCommit per group. A full re-scan every
`--rescan-every` catches what a watch missed (new partitions, new groups, a lost
session) and notices groups that gained live Kafka members; `--renew-every`
re-commits the unchanged offsets of groups nobody consumes in Kafka yet, so they do
not expire. A group whose Kafka group gained members is left alone from then on; a
group whose old consumers all left `ids/` is reported ready to switch. Both are said
once. ZooKeeper is only read: it is the source.

Never backwards by surprise: sync writes a partition's offset only where Kafka holds none or
holds a value zk2kafka wrote, told by the commit metadata and the journal (`Authorship`), so
the rule holds across restarts and new runs. Any other value means a new consumer took the
group over: sync stops for it and says so. A partition under both layouts is the row
`migrate.zk.layouts.pick` chooses, as the diff does, and both znodes are watched. Rows sync
cannot mirror (MALFORMED, UNREADABLE, a topic or partition Kafka lacks) are reported, kept
out of the commit, and keep their group from being called ready.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from migrate.apply import journal as j
from migrate.kafka.snapshot import IDLE_STATES
from migrate.apply.dual_commit import OUTAGES
from migrate.kafka.writer import GroupRejected, KafkaOffsetWriter, Key
from migrate.zk import layouts
from migrate.state import iso
from migrate.zk.reader import ZkOffsetReader

log = logging.getLogger(__name__)
UNKNOWN = "UNKNOWN_PARTITION: no such topic or partition in Kafka's metadata (deleted, or not visible to this client)"


@dataclass
class GroupState:
    """What sync knows of one group."""

    offsets: dict[Key, tuple[int, str, int | None, str]] = field(default_factory=dict)  # offset, path, version, layout
    mirrored: dict[Key, int] = field(default_factory=dict)   # what this run last committed (only that)
    watched: list[tuple[str, int | None]] = field(default_factory=list)   # every offset znode read: path, version
    unmirrored: dict[str, str] = field(default_factory=dict)   # rows sync cannot mirror: "topic-partition" -> why
    said_unmirrored: dict[str, str] | None = None   # the unmirrored rows last logged, to say each change once
    old_consumers: int | None = None
    stopped: str | None = None            # why it is no longer synced
    ready: bool = False                   # old consumers gone, every offset mirrored, none unmirrorable: said once
    last_commit: float = 0.0


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

    def line(self, groups: dict[str, GroupState]) -> str:
        synced = sum(1 for g in groups.values() if g.stopped is None)
        stopped = {name: g.stopped for name, g in groups.items() if g.stopped}
        ago = (f"{time.time() - self.last_change_at:.0f}s ago ({self.last_change})" if self.last_change_at
               else "none yet")
        unmirrored = sum(len(g.unmirrored) for g in groups.values() if g.stopped is None)
        text = (f"sync: {synced} group(s) synced, {self.offsets:,} offset change(s) mirrored in {self.commits:,} "
                f"commit(s), {self.renewals:,} renewal(s); last change {ago}; {unmirrored:,} row(s) it cannot "
                f"mirror; stopped {len(stopped)}")
        return text + (": " + "; ".join(f"{g} ({why})" for g, why in sorted(stopped.items())[:5]) if stopped else "")

    def to_json(self, groups: dict[str, GroupState]) -> dict[str, Any]:
        return {"started": iso(self.started), "updated": iso(time.time()), "commits": self.commits,
                "offsets_mirrored": self.offsets, "renewals": self.renewals, "rescans": self.rescans,
                "errors": self.errors, "last_change": self.last_change,
                "last_change_at": iso(self.last_change_at) if self.last_change_at else None,
                "groups_synced": sorted(g for g, s in groups.items() if s.stopped is None),
                "groups_ready": sorted(g for g, s in groups.items() if s.ready),
                "groups_unmirrored": {g: dict(sorted(s.unmirrored.items())) for g, s in sorted(groups.items())
                                      if s.unmirrored and s.stopped is None},
                "groups_stopped": {g: s.stopped for g, s in sorted(groups.items()) if s.stopped}}


_NAMES_A_RUN = re.compile(r"zk2kafka (migrate|sync) (\S+)")


class Authorship:
    """Tells whether an offset Kafka holds is one zk2kafka wrote, from its commit metadata and the journal.

    The default metadata names the run ("zk2kafka sync <run>", "zk2kafka migrate <run>"): the value
    is zk2kafka's when the journal holds that run. A custom --metadata names no run and may be what
    consumers send as well (""), so the value is zk2kafka's only where a run journaled with that
    metadata committed exactly that offset for that partition. Without a journal (a dry run, which
    writes nothing) the default form alone counts, and a custom one does not.
    """

    def __init__(self, journal: j.Journal | None, metadata: str):
        self.journal, self.metadata = journal, metadata
        self._runs: dict[str, str] | None = None   # writing run -> the metadata it commits with

    def foreign(self, group: str, held: dict[Key, tuple[int, str]], keys: list[Key],
                mirrored: dict[Key, int]) -> list[Key]:
        """Those of `keys` for which Kafka holds a value (in `held`) that zk2kafka did not write."""
        doubtful = [k for k in keys
                    if k in held and not (held[k][1] == self.metadata and mirrored.get(k) == held[k][0])]
        if not doubtful:
            return []
        written: dict[str, dict[Key, int]] = {}   # run -> the group's offsets it journaled, read once per call
        out = [k for k in doubtful if not self._ours(group, k, *held[k], written)]
        if out and self.journal is not None:
            self._runs = None   # a run started since they were read may be the writer: read them once more
            out = [k for k in out if not self._ours(group, k, *held[k], written)]
        return out

    def _ours(self, group: str, key: Key, offset: int, metadata: str | None, written: dict) -> bool:
        named = _NAMES_A_RUN.fullmatch(metadata or "")
        if self.journal is None:
            return named is not None
        runs = self._writing_runs()
        if named is not None and runs.get(named.group(2)) == metadata:
            return True
        for run_id, written_with in runs.items():
            if written_with == (metadata or ""):
                if run_id not in written:
                    written[run_id] = {p.key: p.offset for p in self.journal.partitions(run_id, group)}
                if written[run_id].get(key) == offset:
                    return True
        return False

    def _writing_runs(self) -> dict[str, str]:
        if self._runs is None:
            self._runs = {}
            for run in self.journal.runs():
                if run.kind in ("migrate", "sync"):
                    custom = run.settings.get("metadata")
                    self._runs[run.run_id] = custom if custom is not None else f"zk2kafka {run.kind} {run.run_id}"
        return self._runs


class Follower:
    """Mirrors the selected groups' ZooKeeper offsets into Kafka until `stop` is set."""

    def __init__(self, client: KazooClient, reader: ZkOffsetReader, kafka: KafkaOffsetWriter, list_groups: Callable,
                 partitions: Callable, journal: j.Journal | None, run_id: str, metadata: str, rescan_every: float,
                 renew_every: float | None, status_file: Path | None = None, status_every: float = 10.0,
                 tick: float = 0.5):
        self.client, self.reader, self.kafka = client, reader, kafka
        self.list_groups = list_groups          # () -> {group: Kafka group state}
        self.partitions = partitions            # (topics) -> {topic: {partition numbers}} for those Kafka has
        self.journal, self.run_id, self.metadata = journal, run_id, metadata
        self.authorship = Authorship(journal, metadata)
        self.rescan_every, self.renew_every = rescan_every, renew_every
        self.status_file, self.status_every, self.tick = status_file, status_every, tick
        self.groups: dict[str, GroupState] = {}
        self.status = SyncStatus()
        self._dirty: set[str] = set()
        self._watchers: dict[str, Callable] = {}
        self._changed = False
        self._lock = threading.Lock()
        self._wake = threading.Event()

    @property
    def execute(self) -> bool:
        return self.journal is not None   # a dry run journals nothing and commits nothing

    def run(self, stop: threading.Event) -> SyncStatus:
        next_rescan = next_status = 0.0
        while not stop.is_set():
            now = time.monotonic()
            try:
                if now >= next_rescan:
                    self.rescan()
                    next_rescan = now + self.rescan_every
                with self._lock:
                    dirty, self._dirty = self._dirty, set()
                if dirty:
                    self.sync(sorted(dirty))
                if self.renew_every:
                    self.renew()
            except OUTAGES as exc:
                # A store away for longer than the retries: say so and go on; the next re-scan catches up.
                self.status.errors += 1
                log.warning("sync: %s: %s; trying again at the next re-scan", type(exc).__name__, exc)
                next_rescan = now + 5.0 if next_rescan <= now else min(next_rescan, now + 5.0)
            if now >= next_status:
                self.report()
                next_status = now + self.status_every
            elif self._changed:
                self._write_status()   # a group ready or stopped shows in the file at once
            self._wake.wait(self.tick)
            self._wake.clear()
        self.report()
        return self.status

    # -- reading and watching ----------------------------------------------------------------------------------

    def rescan(self) -> None:
        """Every selected group read again, watches re-armed, Kafka membership checked."""
        names = self.reader.groups()
        for name in names:
            self.groups.setdefault(name, GroupState())
        states = self.list_groups()
        for name in names:
            state = states.get(name)
            if state is not None and state not in IDLE_STATES:
                self._stop(name, f"Kafka group is {state}: consumers joined in Kafka")
        self.status.rescans += 1
        self.sync([n for n in names if self.groups[n].stopped is None])

    def sync(self, names: list[str], renew: frozenset[str] = frozenset()) -> None:
        """Read `names` from ZooKeeper (re-arming their watches) and commit what changed; renew those in `renew`."""
        names = [n for n in names if self.groups.setdefault(n, GroupState()).stopped is None]
        if not names:
            return
        found: dict[str, dict[Key, list[dict]]] = {n: {} for n in names}
        unkeyed: dict[str, dict[str, str]] = {n: {} for n in names}
        consumers: dict[str, int] = {}
        for batch in self.reader.batches(names):
            for row in batch.to_pylist():
                consumers[row["group"]] = row["zk_consumers"] or 0
                if row["partition"] is None or row["topic"] is None:   # a directory it could not list, a bad name
                    unkeyed[row["group"]][row["path"]] = f"{row['status']}: {row['reason']}"
                else:
                    found[row["group"]].setdefault((row["topic"], row["partition"]), []).append(row)
        for name in names:
            group = self.groups[name]
            group.old_consumers = consumers.get(name, 0)
            group.offsets, group.unmirrored, group.watched = {}, dict(unkeyed[name]), []
            for key, rows in found[name].items():
                # Both layouts' znodes are watched; the one standing for the partition is the diff's pick.
                group.watched += [(r["path"], r["version"]) for r in rows]
                row = layouts.pick(rows)
                if row["status"] == layouts.OK:
                    group.offsets[key] = (row["offset"], row["path"], row["version"], row["layout"])
                else:
                    group.unmirrored[_label(key)] = f"{row['status']}: {row['reason']}"
        self._watch(names)
        self._unknown_partitions(names)
        committed = self.kafka.committed_many(names)
        changes: dict[str, dict[Key, int]] = {}
        renewals: dict[str, dict[Key, int]] = {}
        for name in names:
            group = self.groups[name]
            now = committed[name]
            if isinstance(now, Exception):
                self._stop(name, f"Kafka refused to show its offsets: {now.reason}")
                continue
            wanted = {k: o for k, (o, *_) in group.offsets.items()}
            changed = {k: o for k, o in wanted.items() if now.get(k, (None,))[0] != o}
            # A value zk2kafka did not write, where sync would write ZooKeeper's differing value or where this run
            # wrote before: a new consumer took over, and writing would move it. The group is left alone.
            foreign = self.authorship.foreign(name, now, sorted(set(changed) | set(group.mirrored)), group.mirrored)
            if foreign:
                shown = ", ".join(f"{_label(k)} = {now[k][0]} (metadata {now[k][1]!r}; ZooKeeper {wanted.get(k)})"
                                  for k in foreign[:3])
                self._stop(name, f"taken over: Kafka holds {shown}, not written by zk2kafka: a new consumer "
                                 "committed, so the group is left to it")
                continue
            if changed:
                changes[name] = changed
            elif name in renew and wanted:
                # A renewal re-commits only what zk2kafka wrote: an equal value someone else committed is theirs
                # to keep alive, and is not overwritten with zk2kafka's metadata.
                theirs = set(self.authorship.foreign(name, now, list(wanted), group.mirrored))
                if len(theirs) < len(wanted):
                    renewals[name] = {k: o for k, o in wanted.items() if k not in theirs}
        done = self._commit(changes, committed, renewal=False)
        self._commit(renewals, committed, renewal=True)
        for name in names:
            self._readiness(name, unconfirmed=name in changes and name not in done)

    def _unknown_partitions(self, names: list[str]) -> None:
        """Rows for a topic or partition Kafka lacks (a deleted topic) move from the offsets to the unmirrored rows.

        Known from metadata before any commit: Kafka answers such a commit with a retriable error, and
        the retries would stall every group of the cycle.
        """
        topics = sorted({t for n in names for t, _ in self.groups[n].offsets})
        if not topics:
            return
        known = self.partitions(topics)
        for name in names:
            group = self.groups[name]
            for key in [k for k in group.offsets if k[1] not in known.get(k[0], ())]:
                del group.offsets[key]
                group.unmirrored[_label(key)] = UNKNOWN

    def _readiness(self, name: str, unconfirmed: bool) -> None:
        """Say once that a group can switch: no old consumer left, every offset in Kafka, no row left behind."""
        group = self.groups[name]
        if group.ready and group.unmirrored:   # e.g. its topic was deleted since: no longer true, said so
            group.ready, self._changed = False, True
            log.warning("sync: group %s is no longer ready: %s", name, "; ".join(
                f"{k}: {why}" for k, why in sorted(group.unmirrored.items())[:5]))
        if group.stopped is not None or group.ready or group.old_consumers != 0 or unconfirmed:
            return
        if group.unmirrored:
            if group.said_unmirrored != group.unmirrored:
                group.said_unmirrored = dict(group.unmirrored)
                self._changed = True
                rows = "; ".join(f"{k}: {why}" for k, why in sorted(group.unmirrored.items())[:5])
                more = len(group.unmirrored) - 5
                log.warning("sync: group %s: no old consumer left in ZooKeeper ids/, but not ready: %d row(s) sync "
                            "cannot mirror: %s%s", name, len(group.unmirrored), rows,
                            f" (+{more} more)" if more > 0 else "")
            return
        if group.offsets:
            group.ready = True
            self._changed = True
            log.warning("sync: group %s: no old consumer left in ZooKeeper ids/ and every offset is in Kafka; "
                        "ready to start its new consumers", name)

    def _watch(self, names: list[str]) -> None:
        """One-shot watches on every offset znode and on ids/; a znode that moved since the read is dirty at once."""
        pending = []
        for name in names:
            for path, version in self.groups[name].watched:
                pending.append((name, version, self.client.exists_async(path, watch=self._watcher(name))))
            ids = f"{self.reader.root}/{name}/ids"
            pending.append((name, None, self.client.exists_async(ids, watch=self._watcher(name))))
            pending.append((name, None, self.client.get_children_async(ids, watch=self._watcher(name))))
        for name, version, answer in pending:
            try:
                stat = answer.get(timeout=30)
            except KazooException:
                continue   # ids/ absent (the exists watch covers its creation) or the session is gone (re-scan)
            if version is not None and (stat is None or stat.version != version):
                self._mark(name)

    def _watcher(self, name: str) -> Callable:
        # One function per group: kazoo keeps a path's watchers in a set, so re-arming adds none.
        if name not in self._watchers:
            self._watchers[name] = lambda event: self._mark(name)
        return self._watchers[name]

    def _mark(self, name: str) -> None:
        with self._lock:
            self._dirty.add(name)
        self._wake.set()

    # -- writing -----------------------------------------------------------------------------------------------

    def renew(self) -> None:
        """Re-commit the unchanged offsets of groups whose last commit is older than --renew-every."""
        due = time.time() - self.renew_every
        todo = [n for n, g in self.groups.items() if g.stopped is None and g.offsets and g.last_commit < due]
        if todo:
            self.sync(todo, renew=frozenset(todo))

    def _commit(self, commits: dict[str, dict[Key, int]], before: dict, renewal: bool) -> set[str]:
        """Commit each group's offsets; the groups whose commit Kafka accepted (all of them in a dry run)."""
        if not commits:
            return set()
        if not self.execute:
            for name, offsets in commits.items():
                log.warning("sync (dry run): would commit %s for group %s", _show(offsets), name)
                self.groups[name].mirrored.update(offsets)
            return set(commits)
        results = self.kafka.commit_many(commits, self.metadata)
        done = set()
        now = time.time()
        for name, error in results.items():
            group = self.groups[name]
            if isinstance(error, GroupRejected):
                self._stop(name, f"Kafka refused the commit: {error.reason}")
                continue
            if error is not None:
                self.status.errors += 1
                log.warning("sync: group %s: %s: %s; trying again", name, type(error).__name__, error)
                self._mark(name)
                continue
            offsets = commits[name]
            done.add(name)
            group.mirrored.update(offsets)
            group.last_commit = now
            self.status.commits += 1
            held = before.get(name) if isinstance(before.get(name), dict) else {}
            self.journal.record_mirrored(self.run_id, name, [
                (self._planned(group, key, offset, held.get(key)), held.get(key)) for key, offset in offsets.items()])
            if renewal:
                self.status.renewals += 1
                continue
            self.status.offsets += len(offsets)
            self.status.last_change, self.status.last_change_at = f"{name} {_show(offsets)}", now
            log.info("sync: group %s: committed %s", name, _show(offsets))
        return done

    @staticmethod
    def _planned(group: GroupState, key: Key, offset: int, before: tuple[int, str] | None) -> j.Planned:
        _, path, version, layout = group.offsets.get(key, (None, "", None, "standard"))
        return j.Planned(key[0], key[1], offset, path, version, layout, before[0] if before else None)

    def _stop(self, name: str, why: str) -> None:
        group = self.groups.setdefault(name, GroupState())
        if group.stopped is not None:
            return
        group.stopped = why
        self._changed = True
        log.warning("sync: group %s is no longer synced: %s", name, why)
        if self.execute:
            self.journal.set_groups(self.run_id, {name: (j.SKIPPED, why, None)})

    def report(self) -> None:
        log.info(self.status.line(self.groups))
        self._write_status()

    def _write_status(self) -> None:
        self._changed = False
        if self.status_file is not None:
            tmp = self.status_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.status.to_json(self.groups), indent=2) + "\n")
            tmp.replace(self.status_file)


def _label(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


def _show(offsets: dict[Key, int], most: int = 3) -> str:
    shown = ", ".join(f"{t}-{p} -> {o}" for (t, p), o in sorted(offsets.items())[:most])
    return shown + (f" (+{len(offsets) - most} more)" if len(offsets) > most else "")
