"""The ZooKeeper half of the dual commit: conditioned znode writes, their read-back, put-back
and restore (ZkHalf); with --no-zk-write, ZooKeeper is only read (NoZkWrite).

A znode that already holds the bytes the run would write (a MIGRATE row: Kafka takes
ZooKeeper's offset) is not rewritten but fenced by reading: the read after the Kafka commit
must find it at the version and mzxid read before it. A conditional write of the same bytes
would fail exactly when that read finds it moved; either way an old consumer's move after the
step is after it in both stores.

DualCommit chooses one of the two when it is built, so the steps never ask which it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from migrate.journal import journal as j
from migrate.zk.writer import ZkChanged, ZkOffsetWriter, Znode, encode

# {path: (the bytes to write, the version the write is conditioned on)}
Writes = dict[str, tuple[bytes | None, int]]
Parts = Mapping[str, list[j.Partition]]   # each group's journaled offsets


class ReadBack(NamedTuple):
    """The znodes of a batch read back after the write: per group, the versions its writes left
    (a fenced znode, not written, has none) or why not."""

    verified: dict[str, dict[str, int]]   # {group: {path: version}}
    wrong: dict[str, str]                 # {group: reason}


def check_zk_unchanged(group: str, parts: list[j.Partition], zk_now: Mapping[str, Znode]) -> None:
    """Raises ZkChanged unless each znode is the one planned from (none read: none checked)."""
    # The version alone passes a znode deleted and recreated since (versions start again at 0):
    # mzxid, the zxid of its last change, tells them apart. Plans journaled without it are
    # checked by version.
    changed = [p.zk_path for p in parts if zk_now and (
        zk_now[p.zk_path].version != p.zk_version
        or (p.zk_mzxid is not None and zk_now[p.zk_path].mzxid != p.zk_mzxid))]
    if changed:
        raise ZkChanged(group, changed)


class ZkHalf:
    """Writes the znodes a run plans, each conditioned on the version it held before."""

    writes = True

    def __init__(self, writer: ZkOffsetWriter, semantics: str):
        self.writer, self.semantics = writer, semantics

    def read(self, paths: list[str]) -> dict[str, Znode]:
        return self.writer.read(paths)

    @staticmethod
    def before(parts: list[j.Partition],
               zk_now: Mapping[str, Znode]) -> dict[str, tuple[bytes | None, int | None]]:
        """What each znode holds now, to journal before the first write."""
        return {p.zk_path: (zk_now[p.zk_path].value, zk_now[p.zk_path].version) for p in parts}

    def check_resumed(self, group: str, parts: list[j.Partition],
                      zk_now: Mapping[str, Znode]) -> None:
        """Raises ZkChanged unless each znode of a group caught in flight holds what it held
        before the run (the same znode, at the same version) or this run's own write.

        Checked before Kafka is committed again: a znode an old consumer moved since would
        otherwise see the run's stale offset committed to Kafka before its write is refused.
        """
        changed = [p.zk_path for p in parts
                   if not self._as_before(p, zk_now[p.zk_path])
                   and not self._written(p, zk_now[p.zk_path])]
        if changed:
            raise ZkChanged(group, changed)

    def not_as_before(self, parts: list[j.Partition]) -> list[str]:
        """The znodes that do not hold their value from before the run, read now, in words."""
        now = self.writer.read([p.zk_path for p in parts])
        return [f"{p.zk_path} holds {_shown(now[p.zk_path].value)} ({_shown(p.before_zk_value)} "
                "before the run)" for p in parts if now[p.zk_path].value != p.before_zk_value]

    def write(self, groups: Parts, zk_now: Mapping[str, Znode]) -> dict[str, Exception | None]:
        """Write each group's znodes, pipelined; those that hold the run's bytes already (fenced,
        or written before a crash) are skipped.

        Returns each group's error (None when written); groups with nothing left to write have
        no entry.
        """
        writes = {}
        for group, parts in groups.items():
            todo = {p.zk_path: (self._ours(p), p.before_zk_version) for p in parts
                    if not self.fenced(p) and not self._written(p, zk_now[p.zk_path])}
            if todo:
                writes[group] = todo
        return self.writer.write_many(writes)

    def read_back(self, groups: Parts) -> ReadBack:
        """Read every group's znodes back at once, as the ensemble holds them now; a group is
        verified when each written znode holds its value and each fenced one is as it was."""
        back = self.writer.read_latest([p.zk_path for parts in groups.values() for p in parts])
        verified, wrong = {}, {}
        for group, parts in groups.items():
            moved = [p.zk_path for p in parts
                     if self.fenced(p) and not self._still(p, back[p.zk_path])]
            differs = [p.zk_path for p in parts
                       if not self.fenced(p) and back[p.zk_path].value != self._ours(p)]
            if moved:   # worded as the conditional write's refusal would be
                wrong[group] = str(ZkChanged(group, moved)).split(": ", 1)[-1]
            elif differs:
                wrong[group] = ("ZooKeeper read-back differs from the write: "
                                f"{', '.join(differs[:3])}")
            else:
                verified[group] = {p.zk_path: back[p.zk_path].version for p in parts
                                   if back[p.zk_path].version != p.before_zk_version}
        return ReadBack(verified, wrong)

    def put_back(self, group: str, parts: list[j.Partition]) -> None:
        """Put the znodes this run wrote of a failed group back to their before-values.

        Only a znode holding this run's value, one version on, is touched. Raises ZkChanged when
        the read-back differs.
        """
        zk_now = self.writer.read([p.zk_path for p in parts])
        written: Writes = {}
        for p in parts:
            node = zk_now[p.zk_path]
            if (p.before_zk_version is not None and node.version == p.before_zk_version + 1
                    and node.value == self._ours(p) and node.value != p.before_zk_value):
                written[p.zk_path] = (p.before_zk_value, node.version)
        if written:
            self.writer.write(group, written)
            back = self.writer.read(list(written))
            wrong = [path for path, (value, _) in written.items() if back[path].value != value]
            if wrong:
                raise ZkChanged(group, wrong)

    def to_restore(self, group: str, parts: list[j.Partition]) -> Writes:
        """The writes that restore a rolled-back run's znodes: those still holding its value.

        Raises ZkChanged when a znode holds neither the run's value nor the one before it.
        """
        zk_now = self.writer.read([p.zk_path for p in parts])
        writes: Writes = {}
        for p in parts:
            node = zk_now[p.zk_path]
            if node.version == p.before_zk_version or node.value == p.before_zk_value:
                continue  # never written by the run, or already put back
            if (node.version == (p.after_zk_version or p.before_zk_version + 1)
                    and node.value == self._ours(p)):
                writes[p.zk_path] = (p.before_zk_value, node.version)
            else:
                raise ZkChanged(group, [p.zk_path])
        return writes

    def restore(self, group: str, writes: Writes) -> None:
        if writes:
            self.writer.write(group, writes)

    def _ours(self, p: j.Partition) -> bytes:
        """The bytes this run writes to the znode."""
        return encode(p.before_zk_value, p.offset, p.layout, self.semantics)

    def fenced(self, p: j.Partition) -> bool:
        """Whether the znode holds the run's bytes already: read again after the Kafka commit
        instead of rewritten."""
        return p.before_zk_value is not None and self._ours(p) == p.before_zk_value

    def _still(self, p: j.Partition, node: Znode) -> bool:
        """Whether a fenced znode was not moved since it was read before the Kafka commit.

        The same bytes one version on are taken as this run's own rewrite, left by a crash of a
        run that rewrote them (as zk2kafka did before it fenced by reading): ZooKeeper then still
        holds the offset Kafka was given, as it would after an old consumer's write of that same
        value.
        """
        return self._as_before(p, node) or self._written(p, node)

    @staticmethod
    def _as_before(p: j.Partition, node: Znode) -> bool:
        """Whether the znode is the one journaled before the run, unwritten since."""
        return node.version == p.before_zk_version and (p.zk_mzxid is None
                                                         or node.mzxid == p.zk_mzxid)

    def _written(self, p: j.Partition, node: Znode) -> bool:
        """Whether a crash left this run's write in the znode already."""
        return node.version == (p.before_zk_version or 0) + 1 and node.value == self._ours(p)


class NoZkWrite:
    """--no-zk-write: ZooKeeper is read, never written. A plan is only committed while its
    znodes are the ones planned from, so old consumers still reading them stay consistent."""

    writes = False

    def __init__(self, reader: ZkOffsetWriter | None):
        self.reader = reader

    def read(self, paths: list[str]) -> dict[str, Znode]:
        return self.reader.read(paths) if self.reader else {}

    @staticmethod
    def before(parts: list[j.Partition],
               zk_now: Mapping[str, Znode]) -> dict[str, tuple[bytes | None, int | None]]:
        return {p.zk_path: (None, None) for p in parts}

    @staticmethod
    def check_resumed(group: str, parts: list[j.Partition], zk_now: Mapping[str, Znode]) -> None:
        """Nothing of this run is in ZooKeeper: it must still be as planned."""
        check_zk_unchanged(group, parts, zk_now)

    @staticmethod
    def write(groups: Parts, zk_now: Mapping[str, Znode]) -> dict[str, Exception | None]:
        return {}

    @staticmethod
    def read_back(groups: Parts) -> ReadBack:
        return ReadBack({group: {} for group in groups}, {})

    @staticmethod
    def put_back(group: str, parts: list[j.Partition]) -> None:
        pass

    @staticmethod
    def not_as_before(parts: list[j.Partition]) -> list[str]:
        return []

    @staticmethod
    def to_restore(group: str, parts: list[j.Partition]) -> Writes:
        return {}

    @staticmethod
    def restore(group: str, writes: Writes) -> None:
        pass


def _shown(value: bytes | None) -> str:
    """A znode's value in a reason: its text, or `no znode`."""
    return "no znode" if value is None else repr(value.decode("utf-8", "replace"))
