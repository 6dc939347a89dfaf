"""The plan's contract: statuses, their precedence, what blocks, and the plan row schema.

Every layer after the diff (writer, reports, verify) reads rows of PLAN_SCHEMA
and never recomputes a status.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

MIGRATE = "MIGRATE"
IN_SYNC = "IN_SYNC"
CONFLICT = "CONFLICT"
BELOW_LOG_START = "BELOW_LOG_START"
ABOVE_LOG_END = "ABOVE_LOG_END"
UNKNOWN_PARTITION = "UNKNOWN_PARTITION"
MALFORMED = "MALFORMED"
UNREADABLE = "UNREADABLE"
GROUP_ACTIVE_KAFKA = "GROUP_ACTIVE_KAFKA"
GROUP_ACTIVE_ZK = "GROUP_ACTIVE_ZK"
KAFKA_ONLY = "KAFKA_ONLY"

# One status per row: the first that applies, in this order. A value that cannot be
# read or parsed says nothing else; a partition Kafka lacks cannot be committed; offsets
# that already agree need nothing even in a live group; a live group blocks any write;
# only then is the value judged against the log and against Kafka's own offset.
PRECEDENCE = (UNREADABLE, MALFORMED, UNKNOWN_PARTITION, IN_SYNC, GROUP_ACTIVE_KAFKA, GROUP_ACTIVE_ZK,
              BELOW_LOG_START, ABOVE_LOG_END, CONFLICT, MIGRATE)
STATUSES = PRECEDENCE + (KAFKA_ONLY,)

BLOCKERS = frozenset({CONFLICT, BELOW_LOG_START, ABOVE_LOG_END, GROUP_ACTIVE_KAFKA, GROUP_ACTIVE_ZK,
                      MALFORMED, UNREADABLE})

# What the writer does with a row: commit `planned_offset`, nothing to do, or leave it alone.
COMMIT, NOTHING, SKIP = "commit", "none", "skip"

PLAN_SCHEMA = pa.schema([
    ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("status", pa.string()),            # one of STATUSES
    ("reason", pa.string()),            # why, in words, for the report
    ("action", pa.string()),            # COMMIT, NOTHING or SKIP
    ("planned_offset", pa.int64()),     # what both stores hold after the run; null unless action is COMMIT
    ("zk_offset", pa.int64()), ("zk_raw", pa.string()), ("zk_status", pa.string()),
    ("zk_version", pa.int32()), ("zk_mzxid", pa.int64()), ("zk_mtime", pa.timestamp("ms", tz="UTC")),
    ("zk_path", pa.string()),
    ("layout", pa.string()), ("zk_consumers", pa.int32()),
    ("kafka_offset", pa.int64()), ("kafka_metadata", pa.string()),
    ("group_state", pa.string()), ("kafka_members", pa.int32()), ("protocol_type", pa.string()),
    ("log_start", pa.int64()), ("log_end", pa.int64()),
    ("lag", pa.int64()),                # log_end - zk_offset: messages the group has still to read
    ("zk_minus_kafka", pa.int64()),     # zk_offset - kafka_offset: >0 Kafka is behind ZooKeeper
])

# The plan's order, which the diff writes it in and every reader relies on (a group's rows are together).
# Spark's string order (UTF-8 bytes) is Arrow's and Python's (code points); nulls (an unlistable
# directory has no topic or partition) come first.
PLAN_ORDER = [("group", "ascending"), ("topic", "ascending"), ("partition", "ascending")]
BATCH_ROWS = 65_536   # plan rows read (and turned into Python objects) at a time


def plan_batches(plan: pa.Table | Path, columns: list[str] | None = None,
                 batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The plan a batch at a time, in PLAN_ORDER: a table's rows, or plan.parquet's read as they are used.

    No layer after the diff holds a whole plan file: a million rows are a few hundred MiB in Arrow.
    """
    if isinstance(plan, pa.Table):
        yield from (plan.select(columns) if columns else plan).to_batches(max_chunksize=batch_rows)
    else:
        with pq.ParquetFile(plan) as parquet:
            yield from parquet.iter_batches(batch_size=batch_rows, columns=columns)
