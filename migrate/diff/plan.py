"""The plan: its row schema and order, its identity, its hashes, and reading it back a batch or a
group at a time.

`diff` writes reports/<run>/plan.parquet (PLAN_SCHEMA rows in PLAN_ORDER). Everything after
the diff reads it through this module: the report, the journal (the commit rows per group and
the writer's digest), the writer's precheck (what each group looked like when planned) and
`migrate --plan` (a reviewed plan, found, checked and executed as it was reviewed).
No reader holds a whole plan: a million rows are a few hundred MiB in Arrow.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from migrate.durations import duration_text
from migrate.errors import EXIT_BLOCKERS, EXIT_OK
from migrate.group_map import flags_text, renames_text
from migrate.options import flag, shown
from migrate.state import ISO_FORMAT

# What the writer does with a row: commit `planned_offset`, nothing to do, or leave it alone.
COMMIT, NOTHING, SKIP = "commit", "none", "skip"

PLAN_SCHEMA = pa.schema([
    ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("status", pa.string()),            # one of diff.schema.STATUSES
    ("reason", pa.string()),            # why, in words, for the report
    ("action", pa.string()),            # COMMIT, NOTHING or SKIP
    # what both stores hold after the run; null unless action is COMMIT
    ("planned_offset", pa.int64()),
    ("zk_offset", pa.int64()), ("zk_raw", pa.string()), ("zk_status", pa.string()),
    ("zk_version", pa.int32()), ("zk_mzxid", pa.int64()),
    ("zk_mtime", pa.timestamp("ms", tz="UTC")),
    ("zk_path", pa.string()),
    ("layout", pa.string()), ("zk_consumers", pa.int32()),
    ("kafka_offset", pa.int64()), ("kafka_metadata", pa.string()),
    ("group_state", pa.string()), ("kafka_members", pa.int32()), ("protocol_type", pa.string()),
    ("log_start", pa.int64()), ("log_end", pa.int64()),
    ("lag", pa.int64()),                # log_end - zk_offset: messages the group has still to read
    ("zk_minus_kafka", pa.int64()),     # zk_offset - kafka_offset: >0 Kafka is behind ZooKeeper
    # What the row does to ZooKeeper's offset (diff.schema.ZK_CHANGES), and the offset the
    # policies set there where that is not ZooKeeper's own: written when the change is forward or
    # backward; a blocked row is written nowhere (null where ZooKeeper keeps its offset).
    ("zk_change", pa.string()), ("zk_planned", pa.int64()),
    # When the topic was created, as ZooKeeper's /brokers/topics/<topic> says (null: unknown)
    ("topic_ctime", pa.timestamp("ms", tz="UTC")),
])

# A plan translated through MirrorMaker 2's offset syncs (--translate-via-mm2, diff/translate.py)
# has these columns after PLAN_SCHEMA's. There `topic` is the target's (remote) topic and
# `zk_offset` ZooKeeper's offset translated onto it, which is what the diff judged and the writer
# commits; ZooKeeper's own value is `upstream_offset`. Null on KAFKA_ONLY rows and on rows that had
# no readable offset.
TRANSLATION_SCHEMA = pa.schema([
    ("upstream_topic", pa.string()),     # the topic on the source cluster, as ZooKeeper names it
    ("upstream_offset", pa.int64()),     # ZooKeeper's offset, on the source partition
    ("sync_upstream", pa.int64()),       # the offset sync used: its upstream offset ...
    ("sync_downstream", pa.int64()),     # ... and its downstream one
    # at most this many records the group will read a second time on the target
    ("redelivery_window", pa.int64()),
])
TRANSLATED_PLAN_SCHEMA = pa.schema(list(PLAN_SCHEMA) + list(TRANSLATION_SCHEMA))


# A plan through a group mapping (--map-group, diff/rename.py) has this column last: the Kafka
# group each row is judged against and written to (`group` stays ZooKeeper's).
KAFKA_GROUP = "kafka_group"


def is_renamed(plan: pa.Table | Path) -> bool:
    """Whether a plan maps its ZooKeeper groups onto Kafka groups of other names."""
    schema = plan.schema if isinstance(plan, pa.Table) else pq.read_schema(plan)
    return KAFKA_GROUP in schema.names


def is_translated(plan: pa.Table | Path) -> bool:
    """Whether a plan (a table, or plan.parquet) was translated through MirrorMaker 2."""
    schema = plan.schema if isinstance(plan, pa.Table) else pq.read_schema(plan)
    return "upstream_offset" in schema.names


def plan_schema(translated: bool, renamed: bool = False) -> pa.Schema:
    """The schema of a plan: PLAN_SCHEMA, TRANSLATION_SCHEMA's columns after it when translated,
    and KAFKA_GROUP last when renamed."""
    schema = TRANSLATED_PLAN_SCHEMA if translated else PLAN_SCHEMA
    return schema.append(pa.field(KAFKA_GROUP, pa.string())) if renamed else schema


# The plan's order, which the diff writes it in and every reader relies on (a group's rows are
# together).
# Spark's string order (UTF-8 bytes) is Arrow's and Python's (code points); nulls (an unlistable
# directory has no topic or partition) come first.
PLAN_ORDER = [("group", "ascending"), ("topic", "ascending"), ("partition", "ascending")]
BATCH_ROWS = 65_536   # plan rows read (and turned into Python objects) at a time

PLAN_FILE = "plan.parquet"
BLOCKED_SHOWN = 1000   # groups with blockers --json names (summary.json's per_group has all)
SHORT_HASH = 12        # hex digits of the file's sha256 in a plan id: what a ticket quotes


def plan_batches(plan: pa.Table | Path, columns: list[str] | None = None,
                 batch_rows: int | None = None) -> Iterator[pa.RecordBatch]:
    """The plan a batch at a time, in PLAN_ORDER: a table's rows, or plan.parquet's as read."""
    batch_rows = batch_rows or BATCH_ROWS
    if isinstance(plan, pa.Table):
        yield from (plan.select(columns) if columns else plan).to_batches(max_chunksize=batch_rows)
    else:
        with pq.ParquetFile(plan) as parquet:
            yield from parquet.iter_batches(batch_size=batch_rows, columns=columns)


COMMIT_COLUMNS = ["group", "topic", "partition", "planned_offset", "zk_path", "zk_version",
                  "layout", "kafka_offset", "zk_mzxid"]


def commits(plan: pa.Table | Path, columns: list[str] = COMMIT_COLUMNS) -> Iterator[pa.RecordBatch]:
    """The plan's commit rows (these columns), a batch at a time, in PLAN_ORDER."""
    for batch in plan_batches(plan, list(dict.fromkeys(["action", *columns]))):
        yield batch.filter(pc.equal(batch.column("action"), COMMIT)).select(columns)


@dataclass(frozen=True)
class Planned:
    """One offset a run commits: to Kafka, and to the znode it came from (conditioned on its
    version)."""

    topic: str
    partition: int
    offset: int
    zk_path: str
    zk_version: int | None
    layout: str
    kafka_offset: int | None = None  # what Kafka held when the plan was made
    # The znode's last-change zxid when planned: its identity beside the version.
    zk_mzxid: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition


@dataclass(frozen=True)
class Plan:
    """A computed plan and where its files are."""

    run: str
    summary: dict[str, Any]
    files: dict[str, Path]   # "plan" is plan.parquet, in PLAN_ORDER

    @property
    def exit_code(self) -> int:
        return EXIT_BLOCKERS if self.summary["blockers"] else EXIT_OK


class PlannedByGroup(Mapping):
    """The plan's commit rows as Planned offsets per group, built a batch at a time."""

    def __init__(self, plan: pa.Table | Path):
        self._plan = plan
        groups: dict[str, None] = {}   # in plan order: sorted
        for batch in commits(plan, ["group"]):
            groups.update(dict.fromkeys(pc.unique(batch.column("group")).to_pylist()))
        self._groups = list(groups)

    def __iter__(self):
        return iter(self._groups)

    def __len__(self) -> int:
        return len(self._groups)

    def __getitem__(self, group: str):
        rows = [planned for name, planned in self._planned() if name == group]
        if not rows:
            raise KeyError(group)
        return rows

    def items(self):
        """(group, its Planned offsets) in order, streamed."""
        group, rows = None, []
        for name, planned in self._planned():
            if name != group and rows:
                yield group, rows
                rows = []
            group = name
            rows.append(planned)
        if rows:
            yield group, rows

    def _planned(self):

        for batch in commits(self._plan):
            for r in batch.to_pylist():
                yield r["group"], Planned(
                    topic=r["topic"], partition=r["partition"], offset=r["planned_offset"],
                    zk_path=r["zk_path"], zk_version=r["zk_version"], layout=r["layout"],
                    kafka_offset=r["kafka_offset"], zk_mzxid=r["zk_mzxid"])


@dataclass(frozen=True)
class GroupSeen:
    """A group's Kafka state when the plan was made (null state: Kafka did not know the group)."""

    state: str | None
    members: int

    def matches(self, state: str | None, members: int) -> bool:
        # Kafka answers a group it does not know with the state Dead.
        return (self.state or "Dead") == (state or "Dead") and self.members == members

    def __str__(self) -> str:
        return f"{self.state or 'unknown to Kafka'}, {self.members} member(s)"


def writer_digest(plan: pa.Table | Path) -> str:
    """What the writer would do, as a digest: the commit rows and the znode versions they are
    conditioned on.

    journal.digest() of the (group, topic, partition, offset, version) rows in PLAN_ORDER, i.e.
    sorted, fed a batch at a time. The journal keeps it; resume refuses a plan file whose digest
    changed.
    """
    hashed = hashlib.sha256(b"[")
    separator = b""
    for batch in commits(plan, ["group", "topic", "partition", "planned_offset", "zk_version"]):
        rows = list(zip(*(column.to_pylist() for column in batch.columns)))
        if rows:
            listed = json.dumps(rows, separators=(",", ":"))[1:-1]   # without its [ ]
            hashed.update(separator + listed.encode())
            separator = b","
    hashed.update(b"]")
    return hashed.hexdigest()


def readable_writer_digest(plan_file: Path) -> str | None:
    """writer_digest of a plan file; None when it is gone, truncated or overwritten."""
    try:
        return writer_digest(plan_file)
    except (OSError, pa.ArrowException, KeyError):
        return None


def file_sha256(path: Path) -> str:
    """sha256 of the plan file's bytes, read a MiB at a time: any change to the file changes it."""
    hashed = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            hashed.update(chunk)
    return hashed.hexdigest()


def plan_id(run: str, plan_file: Path) -> str:
    """The plan's identity, as the change ticket quotes it: `<run>@<short sha256 of the file>`."""
    return f"{run}@{file_sha256(plan_file)[:SHORT_HASH]}"


# -- a reviewed plan -------------------------------------------------------------------------------

_ID = re.compile(r"^(?P<run>[^@/\s]+)(?:@(?P<sha>[0-9a-f]{4,64}))?$")


@dataclass(frozen=True)
class ReviewedPlan:
    """A plan a `diff` wrote, found by plan id (`RUN@sha`), run id, report dir or plan file.

    It is checked against its summary.
    """

    run: str
    report: Path
    summary: dict[str, Any]
    # as recorded in summary.json, and equal to the file's now (else load() refused it)
    id: str

    @property
    def file(self) -> Path:
        return self.report / PLAN_FILE

    @property
    def created(self) -> float:
        return calendar.timegm(time.strptime(self.summary["created"], ISO_FORMAT))

    @classmethod
    def load(cls, ref: str, reports: Path) -> ReviewedPlan:
        """The plan `ref` names.

        Raises PlanRefused when it is missing, not a diff's plan, or altered since.
        """
        from migrate.errors import PlanRefused

        path, match = Path(ref), _ID.match(ref)
        if path.is_dir():
            report, pinned = path, None
        elif path.is_file() and path.name == PLAN_FILE:
            report, pinned = path.parent, None
        elif match:
            report, pinned = reports / match["run"], match["sha"]
        else:
            raise PlanRefused(ref, "not a plan id (RUN@sha), a run id, a report directory or its "
                                   f"{PLAN_FILE}")
        if not report.is_dir():
            raise PlanRefused(ref, f"no run {report.name} in {report.parent}; a diff's last line "
                                   "names its plan (plan=RUN@sha)")
        if (report / "scan.json").exists() and not (report / "summary.json").exists():
            raise PlanRefused(ref, f"{report.name} is a scan's run, which plans nothing: "
                                   "run a diff first (`zk2kafka diff`) and review its plan")
        try:
            summary = json.loads((report / "summary.json").read_text())
        except (OSError, ValueError) as exc:
            raise PlanRefused(ref, f"no readable summary.json in {report} "
                                   f"({exc.__class__.__name__}); "
                                   "`zk2kafka diff` writes one per run") from exc
        recorded = summary.get("plan_id")
        if summary.get("command") not in ("diff", "migrate") or not recorded:
            raise PlanRefused(ref, f"{report} holds no reviewable plan "
                                   f"(a {summary.get('command')} run without a plan id); "
                                   "make one with `zk2kafka diff`")
        try:
            now = plan_id(summary["run"], report / PLAN_FILE)
        except OSError as exc:
            raise PlanRefused(recorded,
                              f"{report / PLAN_FILE} is missing ({exc.strerror})") from exc
        if now != recorded:
            raise PlanRefused(recorded, f"{report / PLAN_FILE} was altered since the diff wrote it "
                                        f"(its id is now {now}); nothing was written")
        if pinned and not recorded.split("@")[1].startswith(pinned):
            raise PlanRefused(ref, f"the plan in {report} is {recorded}, not the one named; "
                                   "nothing was written")
        return cls(summary["run"], report, summary, recorded)

    def refusals(self, current: Mapping[str, Any], max_age: float,
                 elsewhere: list[str] = (), now: float | None = None) -> list[str]:
        """Why this plan cannot be executed with the stores, policies and selection of `current`.

        `elsewhere`: how the clusters reached now differ from the plan's (migrate/stores.py);
        the offsets root is compared here.
        """
        inputs, policies = self.summary.get("inputs", {}), self.summary.get("policies", {})
        reasons = []
        stores = [*elsewhere] + [
            f"{flag(k)} {shown(k, inputs.get(k))} in the plan, {shown(k, current[k])} now"
            for k in ("zk_root",) if inputs.get(k) != current[k]]
        if stores:
            reasons.append("made against other stores (" + "; ".join(stores) + ")")
        made_with = {**policies, "no_zk_write": inputs.get("no_zk_write", False)}
        # A translated plan's offsets are of the target MM2 copies to: executed through other
        # aliases or another policy (or without translating) they would land elsewhere.
        translation = inputs.get("translation") or {}
        made_with["translate_via_mm2"] = translation.get("source_alias")
        if translation:
            made_with.update({k: translation.get(k) for k in (
                "mm2_target_alias", "replication_policy", "offset_syncs_bootstrap_server")})
        if current.get("mm2_target_alias") is None:
            made_with.pop("mm2_target_alias", None)   # not given: the plan's, as the diff found it
        changed = [f"{flag(k)} {shown(k, v)} in the plan, {shown(k, current[k])} now"
                   for k, v in made_with.items() if k in current and v != current[k]]
        if changed:
            reasons.append("made with other policies (" + "; ".join(changed) + ")")
        selection = [f"{flag(k)} {shown(k, inputs.get(k))} in the plan, "
                     f"{shown(k, list(current[k]))} now"
                     for k in ("groups", "exclude_groups", "topics")
                     if current[k] and list(current[k]) != inputs.get(k)]
        reviewed_map = (inputs.get("group_map") or {}).get("renamed") or {}
        if "group_map" in current and current["group_map"] != reviewed_map:   # lands elsewhere
            reasons.append("made with another group mapping (" + renames_text(reviewed_map)
                           + " in the plan, " + renames_text(current["group_map"]) + " now): give "
                           "the plan's --map-group, or make and review a `zk2kafka diff` with it")
        if selection:
            # A selection comes from flags or the --config file, which ZK2KAFKA_CONFIG may name
            # unseen: a change's exclusions kept there are the usual cause.
            reasons.append("another selection (" + "; ".join(selection)
                           + "): the selection now is that of the flags and of the --config file "
                           "(ZK2KAFKA_CONFIG may name one); leave it out to take the plan's, or "
                           "make and review a `zk2kafka diff` with it")
        age = (now or time.time()) - self.created
        if age > max_age:
            execute = " --execute" if current.get("execute") else ""
            reasons.append(f"made {duration_text(age)} ago, older than --max-plan-age "
                           f"{duration_text(max_age)}; run a fresh "
                           "`zk2kafka diff` and review it, or take this one anyway: "
                           f"`zk2kafka migrate{execute} --plan {self.id} --max-plan-age "
                           f"{duration_text(max(age * 1.25, age + 60)) + flags_text(inputs)}`")
        return reasons


