"""Runs OffsetDiff on Spark: snapshots in as Arrow, plan and per-group figures out as Arrow.

The snapshots are shipped from the driver (Arrow batches), not read by path, so the
same job runs on `local[*]` and on a cluster whose executors cannot see the state dir.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from migrate.diff import schema as s
from migrate.diff.offset_diff import Policy, offset_diff
from migrate.kafka.snapshot import KAFKA_SCHEMA

log = logging.getLogger(__name__)
LOG4J = Path(__file__).with_name("log4j2.properties")


@dataclass(frozen=True)
class DiffResult:
    plan: pa.Table            # PLAN_SCHEMA rows sorted by group, topic, partition
    per_group: list[dict]     # one dict per group: offsets, counts, blockers, planned, state, lag
    startup_seconds: float   # booting the SparkSession (overlapping the reads when started early)
    diff_seconds: float      # the diff itself, once the session was up


def spark_session(master: str, app_name: str = "zk2kafka-diff"):
    """A SparkSession on `master`, quiet on stderr (warnings only, no console progress bar)."""
    from pyspark.sql import SparkSession

    java_opts = f"-Dlog4j2.configurationFile={LOG4J.as_uri()}"
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               # The driver JVM holds the shipped snapshots and the collected plan (and, in local mode, runs
               # every task): Spark's default 1g runs out of heap near 1M offsets; 4g did 2M. Takes effect
               # when the JVM starts; SPARK_DRIVER_MEMORY still overrides it.
               .config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "4g"))
               .config("spark.driver.extraJavaOptions", java_opts)
               .config("spark.executor.extraJavaOptions", java_opts)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    if master.startswith("local"):
        # Few, large tasks: a shuffle over 200 partitions costs more than it saves on one machine.
        builder = builder.config("spark.sql.shuffle.partitions", str(max(4, (os.cpu_count() or 2) * 2)))
    return builder.getOrCreate()


class SparkStarter:
    """Boots the SparkSession on a background thread, so the JVM starts while ZooKeeper and Kafka are read."""

    def __init__(self, master: str):
        self.master = master
        self._began = time.monotonic()
        self._startup = 0.0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zk2kafka-spark-start")
        self._session = self._pool.submit(self._start)

    def _start(self):
        session = spark_session(self.master)
        self._startup = time.monotonic() - self._began
        return session

    def session(self):
        """The session, once started; raises what starting it raised."""
        return self._session.result()

    @property
    def startup_seconds(self) -> float:
        return self._startup

    def stop(self) -> None:
        """Stop the session (waiting for it to finish starting); a start that failed is not raised again."""
        self._pool.shutdown(wait=True)
        if self._session.exception() is None:
            self._session.result().stop()


def run_diff(zk_snapshot: Path, kafka_snapshot: Path, policy: Policy, master: str,
             starter: SparkStarter | None = None) -> DiffResult:
    """The plan for two snapshot files, computed on Spark at `master` (or on the session `starter` boots)."""
    started = time.monotonic()
    starter = starter or SparkStarter(master)
    try:
        spark = starter.session()
        waited = time.monotonic() - started
        zk = spark.createDataFrame(pq.read_table(zk_snapshot))
        kafka = spark.createDataFrame(pq.read_table(kafka_snapshot, schema=KAFKA_SCHEMA))
        plan_df = offset_diff(zk, kafka, policy).orderBy("group", "topic", "partition").cache()
        plan = _conform(plan_df.toArrow())
        per_group = [row.asDict() for row in _per_group(plan_df).collect()]
        plan_df.unpersist()
    finally:
        starter.stop()
    elapsed = time.monotonic() - started
    startup = starter.startup_seconds
    log.info("diff on %s: %d plan rows in %.1fs (Spark start %.1fs, of which %.1fs waited for)",
             master, plan.num_rows, elapsed - waited, startup, waited)
    return DiffResult(plan, per_group, round(startup, 3), round(elapsed - waited, 3))


def _conform(table: pa.Table) -> pa.Table:
    """Spark's Arrow output cast onto PLAN_SCHEMA (Spark widens some types and drops nullability)."""
    return table.select(s.PLAN_SCHEMA.names).cast(s.PLAN_SCHEMA)


def _per_group(plan):
    from pyspark.sql import functions as F

    def count_if(cond):
        return F.sum(F.when(cond, 1).otherwise(0))

    status = F.col("status")
    return (plan.groupBy("group").agg(
        F.count(F.lit(1)).alias("offsets"),
        *[count_if(status == name).alias(name) for name in s.STATUSES],
        count_if(status.isin(*s.BLOCKERS)).alias("blockers"),
        count_if(F.col("action") == s.COMMIT).alias("planned"),
        F.max("group_state").alias("group_state"), F.max("protocol_type").alias("protocol_type"),
        F.max("kafka_members").alias("kafka_members"), F.max("zk_consumers").alias("zk_consumers"),
        F.sum(F.when(F.col("lag") > 0, F.col("lag"))).alias("lag"))
        .orderBy(F.col("blockers").desc(), F.col("offsets").desc(), F.col("group")))
