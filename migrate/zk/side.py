"""The ZooKeeper side of a command, chosen once where it starts: a live ensemble (`--zookeeper`), a
copy of a server's data directory (`scan --zookeeper-data`) or a snapshot zk2kafka wrote
(`--zk-snapshot RUN|PATH`: a scan's, ready-for-kraft's evidence, the one a diff read).

Each source becomes the run's zk snapshot (`snapshots/zk-<run>.parquet`) and an `Origin`: where the
offsets were read, when, and by which command, kept in the snapshot's Parquet metadata
(`zk2kafka.side.*`) so that a snapshot read again still says it. The stages after it read the
snapshot and never ask which source it was. From a snapshot there is no ZooKeeper to write
(`--no-zk-write` is implied, migrate/settings.py), and liveness under `ids/` and `owners/` is what
the snapshot recorded, not checked now. A ZooKeeper that still answers when a run writes is
read again by the write phase (migrate/write/snapshot_plan.py): a znode moved since the snapshot
is not written over, as with a reviewed plan.

`--dual-commit` makes a snapshot's plan the dual commit's, ZooKeeper written as from a live scan:
only a snapshot of a live ensemble that recorded its identity, of the root the command names
(`serves_dual_commit`); the ensemble answering now must be that one (checked where the stores are
reached, migrate/pipeline.py) and the snapshot not older than `--max-plan-age` when a run writes
(`too_old`). Its versions and mzxids then condition each znode's write or fence as a diff's own
scan's would: a znode an old consumer moved since the snapshot fails its group.
"""

from __future__ import annotations

import calendar
import dataclasses
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from migrate.durations import duration_text
from migrate.errors import ConfigError
from migrate.settings import Settings
from migrate.state import ISO_FORMAT, StateDir, iso
from migrate.zk.reader import SCHEMA, Selection
from migrate.zk.scan import ScanStats

log = logging.getLogger(__name__)

ENSEMBLE, DATA_DIR, SNAPSHOT = "ensemble", "data directory", "snapshot"
_PREFIX = "zk2kafka.side."
_FIELDS = ("kind", "source", "read_at", "read_by", "zookeeper", "zk_root", "stores", "semantics")
# Liveness from a snapshot: what it recorded when ZooKeeper was read, never "no consumers" now.
LIVENESS_THEN = "liveness (ids/, owners/) as the snapshot recorded it when read, not checked now"
IMPLIED = "ZooKeeper is not written (--no-zk-write implied: the ZooKeeper side is a snapshot)"
DUAL = ("ZooKeeper is written by the dual commit (--dual-commit): each znode at the version and "
        "mzxid this snapshot read, one moved since fails its group")
# The commands whose plan --dual-commit shapes (verify compares, and writes nothing).
PLANS_WRITES = ("diff", "migrate")


@dataclass(frozen=True)
class Origin:
    """Where a zk snapshot's offsets were read: from a live ensemble or a copy of a data directory
    (`kind`), which (`source`), when (`read_at`, ISO), by which command and run (`read_by`), the
    connect string and root, the identity of that ZooKeeper (migrate/stores.py, as JSON), and the
    --offset-semantics its values were parsed with."""

    kind: str
    source: str
    read_at: str
    read_by: str
    zookeeper: str | None = None
    zk_root: str = "/consumers"
    stores: dict[str, Any] | None = None
    semantics: str | None = None

    def metadata(self) -> dict[str, str]:
        """As Parquet schema metadata (`zk2kafka.side.<field>`)."""
        values = dataclasses.asdict(self)
        values["stores"] = json.dumps(self.stores) if self.stores else None
        return {f"side.{k}": str(v) for k, v in values.items() if v is not None}

    @classmethod
    def of_metadata(cls, meta: dict[bytes, bytes] | None) -> Origin | None:
        """The origin a snapshot's metadata records; None for one written without it."""
        found = {k.decode()[len(_PREFIX):]: v.decode() for k, v in (meta or {}).items()
                 if k.decode().startswith(_PREFIX)}
        if "kind" not in found:
            return None
        if "stores" in found:
            found["stores"] = json.loads(found["stores"])
        return cls(**{k: v for k, v in found.items() if k in _FIELDS})


@dataclass(frozen=True)
class ZooKeeperSide:
    """The ZooKeeper side a command reads: live (`snapshot` None: the ensemble `settings` names)
    or the snapshot file `snapshot`, read at `origin`."""

    snapshot: Path | None = None
    origin: Origin | None = None
    dual_commit: bool = False   # a snapshot whose ensemble the plan's run writes (--dual-commit)

    @property
    def live(self) -> bool:
        """Whether ZooKeeper itself is read now (liveness checked, and written by a run)."""
        return self.snapshot is None

    def read(self, settings: Settings, state: StateDir, run: str, command: str,
             scan_live: Callable[[dict[str, str]], dict[str, Any]],
             identity: dict[str, Any] | None = None) -> dict[str, Any]:
        """The run's zk snapshot and what it holds, as scan reports it, with `zookeeper_side`.

        Live: `scan_live(metadata)` scans the ensemble, the origin in the metadata it writes
        (with `identity`, the ensemble's as migrate/stores.py reads it, as JSON).
        From a snapshot: the rows the selection keeps are copied into the run's own, recording
        the origin it was read at (a diff's snapshot can then be read again as it was).
        """
        if self.live:
            origin = Origin(ENSEMBLE, f"{settings.zookeeper}{root(settings)}", iso(time.time()),
                            f"{command} {run}", settings.zookeeper, root(settings),
                            identity, settings.offset_semantics)
            scanned = scan_live(origin.metadata())
            return {**scanned, "zookeeper_side": describe(origin)}
        started = time.time()
        selection = Selection.of(settings)
        dest = state.zk_snapshot(run)
        stats = _copy_selected(self.snapshot, dest, selection, self.origin)
        log.info("%s %s: the ZooKeeper side is the snapshot %s (%s), %d offsets selected",
                 command, run, self.snapshot, self.origin.read_by, stats.offsets)
        return {"run": run, "command": command, "source": str(self.snapshot),
                "snapshot": str(dest), "groups": len(stats.groups), "offsets": stats.offsets,
                "counts": dict(sorted(stats.statuses.items())),
                "seconds": round(time.time() - started, 3),
                "zookeeper_side": describe(self.origin, self.snapshot, self.dual_commit)}


def root(settings: Settings) -> str:
    return settings.path_template or settings.zk_root


def describe(origin: Origin, snapshot: Path | None = None,
             dual_commit: bool = False) -> dict[str, Any]:
    """The ZooKeeper side as a plan, a report and --json record it (`inputs.zookeeper_side`)."""
    data = {"from": SNAPSHOT if snapshot else origin.kind, **dataclasses.asdict(origin)}
    if snapshot is not None:
        data.update(snapshot=str(snapshot), liveness=LIVENESS_THEN,
                    zk_write=DUAL if dual_commit else IMPLIED)
    return data


def chosen(settings: Settings, command: str | None = None) -> ZooKeeperSide:
    """The ZooKeeper side `settings` name for `command`: the snapshot of --zk-snapshot (written by
    the dual commit where --dual-commit names it and it can serve it), else the live ensemble
    (--zookeeper required). Raises ConfigError."""
    if settings.zk_snapshot is None:
        settings.require("zookeeper")
        return ZooKeeperSide()
    path = snapshot_path(settings.zk_snapshot, settings.state_dir)
    origin = origin_of(path)
    if origin.semantics not in (None, settings.offset_semantics):
        # Its offsets were parsed so: read otherwise, each would be one off.
        raise ConfigError(f"--zk-snapshot {settings.zk_snapshot}: its offsets were read with "
                          f"--offset-semantics {origin.semantics}; pass the same")
    dual = settings.dual_commit and command in PLANS_WRITES
    if dual:
        serves_dual_commit(origin, settings)
    return ZooKeeperSide(path, origin, dual)


def serves_dual_commit(origin: Origin, settings: Settings) -> None:
    """ConfigError unless the snapshot read at `origin` can serve a plan that writes ZooKeeper
    (--dual-commit): read from a live ensemble, by a zk2kafka that recorded that ensemble's
    identity, under the root `settings` name; and --zookeeper given, the ensemble to write (its
    identity is compared once reached)."""
    given = f"--zk-snapshot {settings.zk_snapshot} --dual-commit"
    if origin.kind != ENSEMBLE:
        raise ConfigError(f"{given}: the snapshot was read from a copy of a data directory "
                          f"({origin.source}), not from the ensemble the dual commit writes: "
                          "which ensemble it was and how old cannot be checked; scan the live "
                          "ensemble (--zookeeper) and diff that scan, or "
                          "leave out --dual-commit to write Kafka alone")
    if not (origin.stores or {}).get("zookeeper_servers"):
        raise ConfigError(f"{given}: the snapshot ({origin.read_by}) recorded no identity of the "
                          "ensemble it read (an older zk2kafka's): scan it again, or leave out "
                          "--dual-commit to write Kafka alone")
    if settings.zookeeper is None:
        raise ConfigError(f"{given}: the dual commit writes the ensemble the snapshot was read "
                          f"from ({origin.zookeeper}): give it with --zookeeper")
    if root(settings) != origin.zk_root and ("zk_root" in settings.given
                                             or settings.path_template):
        raise ConfigError(f"{given}: the snapshot read the root {origin.zk_root}, and "
                          f"{root(settings)} is given: the dual commit writes the znodes the "
                          "snapshot read; give its root, or scan this one")


def too_old(side: dict[str, Any], max_age: float, now: float | None = None) -> str | None:
    """Why a snapshot (`inputs.zookeeper_side`) is too old for a run that writes ZooKeeper from
    it (--dual-commit): read more than `max_age` seconds ago, or at a time not known; None when
    it is not. Its liveness (ids/, owners/) is that old, as a plan's is as old as its diff."""
    try:
        age = (now or time.time()) - calendar.timegm(time.strptime(side["read_at"], ISO_FORMAT))
    except (KeyError, TypeError, ValueError):
        return f"the snapshot ({side.get('read_by')}) does not say when ZooKeeper was read"
    if age <= max_age:
        return None
    return (f"the snapshot was read {duration_text(age)} ago (at {side['read_at']} by "
            f"{side['read_by']}), longer than --max-plan-age {duration_text(max_age)}: its "
            "liveness (ids/, owners/) is that old; scan again and diff that scan, or give "
            f"--max-plan-age {duration_text(max(age * 1.25, age + 60))}")


def snapshot_path(given: str, state_dir: Path) -> Path:
    """The snapshot `--zk-snapshot` names: a file, or a run id (scan's, ready-for-kraft's or a
    diff's) with a snapshots/zk-<run>.parquet in the state dir. Raises ConfigError."""
    path = Path(given).expanduser()
    if path.is_dir() and path.parent.name == "reports":   # a report folder names its run
        given = path.name
    elif path.is_file():
        return path
    by_run = Path(state_dir, "snapshots", f"zk-{given}.parquet")
    if by_run.is_file():
        return by_run
    raise ConfigError(f"--zk-snapshot {given}: no such file, and no snapshots/zk-{given}.parquet "
                      f"in {state_dir}: give a scan's, a diff's or ready-for-kraft's run id "
                      "(`zk2kafka status` lists runs that wrote) or the snapshot's path")


def origin_of(path: Path) -> Origin:
    """Where the snapshot `path` was read, from its metadata (or, for one written without it, from
    its run's report). Raises ConfigError for a file that is not a zk snapshot."""
    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--zk-snapshot {path}: not a Parquet file zk2kafka wrote ({exc})") \
            from None
    missing = [name for name in SCHEMA.names if name not in schema.names]
    if missing:
        raise ConfigError(f"--zk-snapshot {path}: not a zk snapshot (no column "
                          f"{', '.join(missing[:3])})")
    meta = schema.metadata or {}
    found = Origin.of_metadata(meta)
    if found is not None:
        return found
    text = {k.decode(): v.decode() for k, v in meta.items()}
    run = path.stem.removeprefix("zk-")
    report = path.parent.parent / "reports" / run
    summary = _json(report / "summary.json") or _json(report / "scan.json") or {}
    command = summary.get("command") or ("scan" if "zk2kafka.run" in text else "zk2kafka")
    read_at = (text.get("zk2kafka.started") or (summary.get("watched") or {}).get("to")
               or summary.get("started") or iso(path.stat().st_mtime))
    data_dir = text.get("zk2kafka.zookeeper_data.dir")
    return Origin(DATA_DIR if data_dir else ENSEMBLE,
                  data_dir or text.get("zk2kafka.source") or summary.get("source") or "unknown",
                  read_at, f"{command} {text.get('zk2kafka.run', run)}",
                  semantics=text.get("zk2kafka.semantics"))


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _copy_selected(source: Path, dest: Path, selection: Selection, origin: Origin) -> ScanStats:
    """The rows of `source` the selection keeps, into `dest` (whole or not at all), with the
    origin in its metadata."""
    stats, tmp = ScanStats(), dest.with_suffix(".parquet.part")
    with pq.ParquetFile(source) as snapshot:
        meta = {**(snapshot.schema_arrow.metadata or {}),
                **{f"zk2kafka.{k}".encode(): v.encode() for k, v in origin.metadata().items()}}
        schema = SCHEMA.with_metadata(meta)
        with pq.ParquetWriter(tmp, schema) as writer:
            for batch in snapshot.iter_batches(columns=SCHEMA.names):
                keep = pc.and_(_matching(batch.column("group"), selection.group),
                               _matching(batch.column("topic"), selection.topic))
                kept = batch.filter(keep).cast(schema)
                if kept.num_rows:
                    writer.write_batch(kept)
                    stats.add(kept)
    os.replace(tmp, dest)
    return stats


def _matching(column, keep: Callable[[str | None], bool]):
    """Which of `column`'s values `keep` takes, deciding once per distinct value."""
    names = pc.unique(column).to_pylist()
    found = pc.is_in(column, value_set=pa.array([n for n in names if n is not None and keep(n)],
                                                pa.string()))
    # A row with no topic (a group's unparsable znode) is kept as the topic selection keeps it.
    return pc.or_(found, pc.is_null(column)) if None in names and keep(None) else found


LIVE_ONLY = ("{command} reads ZooKeeper live (its liveness under ids/ and owners/, the quiet "
             "rule): it cannot read a snapshot (--zk-snapshot); give --zookeeper")


def refuse_snapshot(settings: Settings, command: str) -> None:
    """ConfigError for a command that needs live ZooKeeper and was given --zk-snapshot."""
    if settings.zk_snapshot is not None:
        raise ConfigError(LIVE_ONLY.format(command=command))
