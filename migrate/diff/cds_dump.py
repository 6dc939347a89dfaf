"""The child process that makes the Spark driver's class-data archive (cds.py's `make` starts it):
a small diff on a JVM told to archive its classes at exit, then that JVM ended and waited for.

`python -m migrate.diff.cds_dump PARTIAL` writes the archive at PARTIAL; cds.py renames it into
place once this process has exited. Its own module, so that the diff (run.py), which reads the
archive's options from cds.py, and the archive's making do not import each other.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import SparkContext

from migrate.diff import run
from migrate.diff.cds import QUIET
from migrate.diff.offset_diff import Policy
from migrate.kafka.snapshot import KAFKA_SCHEMA, OFFSET, PARTITION
from migrate.zk.reader import SCHEMA as ZK_SCHEMA


def dump(partial: Path) -> None:
    """Run a small diff on a JVM told to archive its classes at exit, then end that JVM (EOF on
    its stdin, as when Python exits) and wait until it has written the archive at `partial`."""
    zk = [{"group": f"g{g}", "topic": "t", "partition": p, "offset": 5, "status": "OK",
           "version": 1, "mzxid": 7, "path": f"/consumers/g{g}/offsets/t/{p}",
           "layout": "offsets", "zk_consumers": 0} for g in range(20) for p in range(4)]
    kafka = [{"kind": PARTITION, "topic": "t", "partition": p, "log_start": 0, "log_end": 9}
             for p in range(4)]
    kafka.append({"kind": OFFSET, "group": "g0", "topic": "t", "partition": 0,
                  "committed_offset": 3, "metadata": ""})
    with tempfile.TemporaryDirectory(prefix="zk2kafka-cds-") as tmp:
        work = Path(tmp)
        pq.write_table(pa.Table.from_pylist(zk, schema=ZK_SCHEMA), work / "zk.parquet")
        pq.write_table(pa.Table.from_pylist(kafka, schema=KAFKA_SCHEMA), work / "kafka.parquet")
        starter = run.SparkStarter("local[2]",
                                   class_data=f"-XX:ArchiveClassesAtExit={partial} {QUIET}")
        run.run_diff(work / "zk.parquet", work / "kafka.parquet", Policy(), "local[2]",
                     work / "plan.parquet", starter)
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        proc.stdin.close()
        proc.wait(timeout=300)
    if not partial.is_file():
        raise SystemExit(f"the Spark JVM wrote no archive at {partial}")


if __name__ == "__main__":
    dump(Path(sys.argv[1]))
