"""Runs OffsetDiff on Spark: snapshots in as Arrow, the plan out to plan.parquet, per-group figures.

The same job runs on `local[*]` and on a cluster. Locally Spark reads the snapshot files and writes
the plan itself, so the driver's memory does not grow with the plan; on a cluster it does the same
from copies in a directory every executor sees (--spark-shared-dir). Without one, a cluster's
executors may not see the state dir, so the snapshots are shipped from the driver and the plan
collected.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import from_arrow_schema

from migrate.diff import cds
from migrate.diff import schema as s
from migrate.diff.coverage import NO_OFFSET_FILE, Coverage
from migrate.diff.offset_diff import Policy, group_splits, offset_diff
from migrate.diff.rename import kafka_as_zk_names, with_kafka_group
from migrate.diff.translate import TRANSLATION_COLUMNS, Translation, translate
from migrate.errors import MigrateError
from migrate.kafka.offset_syncs import SYNCS_SCHEMA
from migrate.kafka.snapshot import KAFKA_SCHEMA
from migrate.zk.reader import SCHEMA as ZK_SCHEMA

log = logging.getLogger(__name__)
LOG4J = Path(__file__).with_name("log4j2.properties")


@dataclass(frozen=True)
class DiffResult:
    plan: Path                # plan.parquet: PLAN_SCHEMA rows in PLAN_ORDER
    rows: int                 # rows in it
    per_group: list[dict]     # one dict per group: offsets, counts, blockers, planned, state, lag
    startup_seconds: float   # booting the SparkSession (overlapping the reads when started early)
    diff_seconds: float      # the diff itself, once the session was up
    # the partitions of the groups' topics no offset covers (coverage.py), for summary.json
    no_offset: dict = field(default_factory=dict)


def spark_session(master: str, app_name: str = "zk2kafka-diff", cache_dir: Path | None = None,
                  class_data: str | None = None):
    """A SparkSession on `master`, quiet on stderr (warnings only, no console progress bar).

    Its driver JVM maps the class-data archive of `cds` when one was made in `cache_dir`
    (`class_data` replaces those options: the archive is made through it).
    """
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    java_opts = f"-Dlog4j2.configurationFile={LOG4J.as_uri()}"
    class_data = cds.java_options(cache_dir) if class_data is None else class_data
    local = master.startswith("local")
    # The driver JVM's heap, read when it starts; SPARK_DRIVER_MEMORY still overrides it. On a
    # cluster the driver holds the shipped snapshots and the collected plan: Spark's default 1g ran
    # out where 4g did not. On a local master it holds neither, only the tasks, whose sorts spill
    # beyond their share: 2g keeps room above the peak measured, and took the same CPU time as 4g
    # (bench_diff.py, docs/performance.md).
    memory = os.environ.get("SPARK_DRIVER_MEMORY", "2g" if local else "4g")
    # A local driver runs every task: the throughput collector, whose threads stay idle between
    # collections. G1's concurrent work took the tasks' CPU on two cores (bench_diff.py,
    # docs/performance.md).
    collector = "-XX:+UseParallelGC " if local else ""
    options = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": memory,
        # C1 only: the driver's work is mostly planning and compiling one query, which C2
        # makes the JVM JIT-compile twice on two cores: a cold diff starts sooner, a large one
        # is no slower (docs/performance.md). Executors (on a cluster) keep the full JIT.
        # C1 alone shrinks the code cache to 48 MiB, which a long-lived session (the test
        # suite's) filled: the JIT then stops and every query runs interpreted. 240 MiB is
        # the tiered default.
        "spark.driver.extraJavaOptions": f"{java_opts} {collector}-XX:TieredStopAtLevel=1 "
                                         f"-XX:ReservedCodeCacheSize=240m {class_data}",
        "spark.executor.extraJavaOptions": java_opts,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true"}
    if local:
        # Few, large tasks: a shuffle over 200 partitions costs more than it saves on one machine.
        options["spark.sql.shuffle.partitions"] = str(max(4, (os.cpu_count() or 2) * 2))
    conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(options.items()))
    _start_driver_jvm(conf)
    return SparkSession.builder.config(conf=conf).getOrCreate()


def _start_driver_jvm(conf) -> None:
    """Start the driver JVM (once per process) with its stderr sent to the `spark.jvm` log,
    which shows from -v on: the JVM's own warnings (`Using incubator modules`) are not
    zk2kafka's to print."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:   # pyspark keeps the JVM for the process's life
        return
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    SparkContext._ensure_initialized(gateway=gateway)
    jvm_log = logging.getLogger("spark.jvm")

    def forward(stream) -> None:
        for line in iter(stream.readline, b""):
            jvm_log.warning("%s", line.decode(errors="replace").rstrip())

    threading.Thread(target=forward, args=(gateway.proc.stderr,), daemon=True,
                     name="zk2kafka-spark-stderr").start()


class SparkStarter:
    """Boots the SparkSession on a background thread: the JVM starts while the stores are read."""

    def __init__(self, master: str, cache_dir: Path | None = None, class_data: str | None = None):
        self.master, self.cache_dir, self.class_data = master, cache_dir, class_data
        self._began = time.monotonic()
        self._startup = 0.0
        self._stopping = False
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zk2kafka-spark-start")
        self._session = self._pool.submit(self._start)

    def _start(self):
        session = spark_session(self.master, cache_dir=self.cache_dir, class_data=self.class_data)
        self._startup = time.monotonic() - self._began
        return session

    def session(self):
        """The session, once started; raises what starting it raised."""
        return self._session.result()

    @property
    def startup_seconds(self) -> float:
        return self._startup

    def stop(self, wait: bool = True) -> None:
        """Stop the session (once it finished starting); a failed start is not raised again.

        `wait=False`: stopped on the starter's thread while the caller goes on (a JVM takes a few
        tenths of a second to shut down); a later stop() waits for it.
        """
        if not self._stopping:
            self._stopping = True
            self._pool.submit(self._stop_session)
        self._pool.shutdown(wait=wait)

    def _stop_session(self) -> None:
        if self._session.exception() is None:
            self._session.result().stop()


def run_diff(zk_snapshot: Path, kafka_snapshot: Path, policy: Policy, master: str, plan_path: Path,
             starter: SparkStarter | None = None,
             translation: Translation | None = None,
             renamed: Mapping[str, str] | None = None,
             shared_dir: Path | None = None) -> DiffResult:
    """The plan for two snapshot files, computed on Spark at `master` (or on the session `starter`
    boots).

    It is written to `plan_path` (Parquet, in PLAN_ORDER) with its per-group figures summed as it
    is written. With a `translation`, ZooKeeper's offsets are first mapped onto the target's
    partitions through its offset syncs (a third input), and the plan carries
    TRANSLATION_SCHEMA's columns. With `renamed` (ZooKeeper group -> Kafka group, from
    migrate/group_map.py), the Kafka snapshot holds the Kafka names, each ZooKeeper group is judged
    against the Kafka group it maps to, and the plan names it in `kafka_group` (diff/rename.py).
    `shared_dir`: on a cluster master, a directory the executors see at the same path.
    """
    started = time.monotonic()
    starter = starter or SparkStarter(master)
    io = None
    try:
        spark = starter.session()
        waited = time.monotonic() - started
        if master.startswith("local"):
            io = _LocalFiles(spark, plan_path)
        elif shared_dir is not None:
            io = _LocalFiles(spark, plan_path, shared=shared_dir)
        else:
            io = _Shipped(spark)
        zk, kafka = io.read(zk_snapshot, ZK_SCHEMA), io.read(kafka_snapshot, KAFKA_SCHEMA)
        kafka = kafka_as_zk_names(kafka, renamed or {})
        # A partition per shuffle partition Spark is set to, split where the groups' rows are
        # balanced (each ZooKeeper offset is a plan row).
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        splits = group_splits(pq.read_table(zk_snapshot, columns=["group"])["group"], partitions)
        carry: tuple[str, ...] = ()
        if translation is not None:
            syncs = io.read(translation.syncs, SYNCS_SCHEMA)
            zk = translate(zk, syncs, translation.source_alias, translation.policy)
            carry = TRANSLATION_COLUMNS
        schema = s.plan_schema(translation is not None, renamed=bool(renamed))
        rollup, rows = GroupRollup(), 0
        coverage = Coverage.of_snapshot(kafka_snapshot, plan_path.with_name(NO_OFFSET_FILE))
        with pq.ParquetWriter(plan_path, schema) as out:
            # Spark's part done, its JVM shuts down while the driver copies the plan.
            plan = offset_diff(zk, kafka, policy, carry, splits)
            for chunk in io.in_order(plan, done=lambda: starter.stop(wait=False)):
                if renamed:
                    chunk = with_kafka_group(chunk, renamed)
                chunk = _conform(chunk, schema)
                out.write_table(chunk, row_group_size=s.BATCH_ROWS)
                rollup.add(chunk)
                coverage.add(chunk)
                rows += chunk.num_rows
    except Exception as exc:
        if not (isinstance(io, _LocalFiles) and io.missed(exc)):
            raise
        raise MigrateError(f"the Spark executors cannot read what the driver wrote to"
                           f" --spark-shared-dir {shared_dir}: it must be the same directory on"
                           f" every executor (a shared file system): {_first_line(exc)}") from exc
    finally:
        if isinstance(io, _LocalFiles):
            io.close()
        starter.stop()
    no_offset = coverage.close()
    elapsed = time.monotonic() - started
    startup = starter.startup_seconds
    log.info("diff on %s: %d plan rows in %.1fs (Spark start %.1fs, of which %.1fs waited for)",
             master, rows, elapsed - waited, startup, waited)
    return DiffResult(plan=Path(plan_path), rows=rows, per_group=rollup.groups(),
                      startup_seconds=round(startup, 3),
                      diff_seconds=round(elapsed - waited, 3), no_offset=no_offset)


# Parquet writer features off for the intermediate parts (parquet-hadoop's settings).
INTERMEDIATE_OFF = ("enable.dictionary", "column.statistics.enabled",
                    "size.statistics.enabled", "page.write-checksum.enabled")


class _LocalFiles:
    """Spark reads the snapshots and writes the sorted plan itself: the driver's Python process
    only copies the plan into one file, a batch at a time, whatever its size. On a local master
    where they lie; on a cluster from copies in a directory of this diff's own under `shared`,
    which every executor sees at the same path (--spark-shared-dir), removed by close()."""

    def __init__(self, spark, plan_path: Path, shared: Path | None = None):
        self.spark = spark
        self.stage = None
        if shared is not None:
            try:
                self.stage = Path(tempfile.mkdtemp(prefix="zk2kafka-diff-", dir=shared))
            except OSError as exc:
                raise MigrateError(f"--spark-shared-dir {shared}: cannot write there:"
                                   f" {exc.strerror or exc}") from None
        self.parts = (self.stage or plan_path.parent) / (plan_path.name + ".parts")

    def read(self, snapshot: Path, schema: pa.Schema):
        if self.stage is not None:
            copy = self.stage / Path(snapshot).name
            shutil.copyfile(snapshot, copy)
            snapshot = copy
        # The file was written with `schema`: given, Spark reads no footer to learn it (a job).
        return self.spark.read.schema(from_arrow_schema(schema)).parquet(str(snapshot))

    def missed(self, exc: BaseException) -> bool:
        """Spark failed on a file of the shared directory an executor could not find (it does not
        see that directory)."""
        text = str(exc)
        return self.stage is not None and str(self.stage) in text and (
            "FileNotFoundException" in text or "PATH_NOT_FOUND" in text or "does not exist" in text)

    def close(self) -> None:
        if self.stage is not None:
            shutil.rmtree(self.stage, ignore_errors=True)

    def in_order(self, plan, done: Callable[[], None]) -> Iterator[pa.Table]:
        """The plan's rows in order, a batch at a time; `done()` once Spark is no longer needed."""
        # The parts are read once, here, and dropped: dictionaries, statistics and checksums,
        # which make Parquet good to keep, are not worth the JVM's time writing them.
        (plan.write.mode("overwrite")
         .options(**{f"parquet.{name}": "false" for name in INTERMEDIATE_OFF})
         .parquet(str(self.parts)))
        done()
        try:
            # part-00000-...: sorted by name they are in partition order
            for part in sorted(self.parts.glob("part-*.parquet")):
                with pq.ParquetFile(part) as parquet:
                    for batch in parquet.iter_batches(batch_size=s.BATCH_ROWS):
                        yield pa.Table.from_batches([batch])
        finally:
            shutil.rmtree(self.parts, ignore_errors=True)


class _Shipped:
    """On a cluster the executors may not see the state dir: the driver ships the snapshots and
    collects the plan (so there its memory grows with the plan: a few hundred bytes an offset)."""

    def __init__(self, spark):
        self.spark = spark

    def read(self, snapshot: Path, schema: pa.Schema):
        return self.spark.createDataFrame(pq.read_table(snapshot, schema=schema))

    def in_order(self, plan, done: Callable[[], None]) -> Iterator[pa.Table]:
        table = plan.toArrow()
        done()
        yield table


def _first_line(exc: BaseException) -> str:
    lines = (line.strip() for line in str(exc).splitlines())
    return next((line for line in lines if line), type(exc).__name__)


def _conform(table: pa.Table, schema: pa.Schema = s.PLAN_SCHEMA) -> pa.Table:
    """Spark's Arrow output cast onto PLAN_SCHEMA, or `schema` (Spark widens some types, drops
    nullability)."""
    return table.select(schema.names).cast(schema)


# The per-group counts of the rows that move ZooKeeper's offset, or would and are not planned.
ZK_MOVES = {s.ZK_FORWARD: "zk_forward", s.ZK_BACKWARD: "zk_backward", s.ZK_BLOCKED: "zk_blocked"}


class GroupRollup:
    """Per-group figures of a plan fed a chunk at a time: offsets, a count per status, blockers,
    planned, state and lag. A group split across chunks is summed (and its maxima kept)."""

    SUMS = ("offsets", "blockers", "planned", *s.STATUSES, *ZK_MOVES.values())
    MAXIMA = ("group_state", "protocol_type", "kafka_members", "zk_consumers")

    def __init__(self):
        self._groups: dict[str, dict] = {}

    def add(self, plan: pa.Table) -> None:
        for group in _rollup(plan):
            seen = self._groups.setdefault(group["group"], group)
            if seen is not group:
                for name in self.SUMS:
                    seen[name] += group[name]
                for name in self.MAXIMA:
                    known = (v for v in (seen[name], group[name]) if v is not None)
                    seen[name] = max(known, default=None)
                if group["lag"] is not None:
                    seen["lag"] = (seen["lag"] or 0) + group["lag"]
                seen["first_blocker"] = seen["first_blocker"] or group["first_blocker"]

    def groups(self) -> list[dict]:
        """One dict per group, most blockers first, then most offsets, then by name."""
        return sorted(self._groups.values(),
                      key=lambda g: (-g["blockers"], -g["offsets"], g["group"]))


def _rollup(plan: pa.Table) -> list[dict]:
    """One dict per group of a plan chunk, in pyarrow: a Spark job over the cached plan would cost
    more (about 2 s on a cold JVM) than pyarrow takes for a million rows."""
    lag = pc.if_else(pc.greater(plan["lag"], 0), plan["lag"], None)
    rows = plan.select(["group", "status", "action", "group_state", "protocol_type",
                        "kafka_members", "zk_consumers"]).append_column("positive_lag", lag)
    blocker = pc.is_in(rows["status"], pa.array(sorted(s.BLOCKERS)))
    rows = rows.append_column("blocker", blocker)
    rows = rows.append_column("commit", pc.equal(rows["action"], s.COMMIT))
    for change, name in ZK_MOVES.items():
        rows = rows.append_column(name, pc.equal(plan["zk_change"], change))
    totals = rows.group_by("group").aggregate([
        ([], "count_all"), ("blocker", "sum"), ("commit", "sum"),
        *((name, "sum") for name in ZK_MOVES.values()),
        ("group_state", "max"), ("protocol_type", "max"),
        ("kafka_members", "max"), ("zk_consumers", "max"),
        ("positive_lag", "sum", pc.ScalarAggregateOptions(min_count=1))]).to_pylist()
    statuses: dict[str, dict[str, int]] = {}
    for row in rows.group_by(["group", "status"]).aggregate([([], "count_all")]).to_pylist():
        statuses.setdefault(row["group"], {})[row["status"]] = row["count_all"]
    # Each group's first blocker row (in plan order), which says in words why the group, or part
    # of it, is left alone.
    blocked = plan.select(["group", "status", "reason"]).filter(blocker)
    first = {r["group"]: f"{r['status_first']}: {r['reason_first']}" for r in blocked.group_by(
        "group", use_threads=False).aggregate([("status", "first"), ("reason", "first")]
    ).to_pylist()}
    return [{"group": t["group"], "offsets": t["count_all"],
             **{name: statuses[t["group"]].get(name, 0) for name in s.STATUSES},
             **{name: t[f"{name}_sum"] for name in ZK_MOVES.values()},
             "blockers": t["blocker_sum"], "planned": t["commit_sum"],
             "group_state": t["group_state_max"],
             "protocol_type": t["protocol_type_max"], "kafka_members": t["kafka_members_max"],
             "zk_consumers": t["zk_consumers_max"], "lag": t["positive_lag_sum"],
             "first_blocker": first.get(t["group"])} for t in totals]
