"""A diff through a group mapping (migrate/group_map.py): each ZooKeeper group judged against the
Kafka group it maps to.

The Kafka snapshot holds the Kafka names (what Kafka was asked for); the diff matches rows by the
ZooKeeper group, so Kafka's rows are given the ZooKeeper name they stand for before the match (the
mapping is one to one over the selected groups: group_map refuses any other). The plan keeps the
ZooKeeper group in `group` and names the Kafka group in `kafka_group`, a column only a renaming
plan has, so a plan without a mapping is the file it always was.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from migrate.diff.plan import KAFKA_GROUP


def kafka_as_zk_names(kafka: DataFrame, renamed: Mapping[str, str]) -> DataFrame:
    """Kafka's snapshot rows with each mapped group's rows under its ZooKeeper name."""
    if not renamed:
        return kafka
    spark = kafka.sparkSession
    names = spark.createDataFrame([(new, old) for old, new in renamed.items()],
                                  "_kafka_name string, _zk_name string")
    joined = kafka.join(F.broadcast(names), kafka["group"] == names["_kafka_name"], "left")
    return joined.select(*(F.coalesce(F.col("_zk_name"), F.col("group")).alias("group")
                           if c == "group" else F.col(c) for c in kafka.columns))


def with_kafka_group(chunk: pa.Table, renamed: Mapping[str, str]) -> pa.Table:
    """A plan chunk with its `kafka_group` column: the group each row's offsets go to in Kafka."""
    groups = chunk.column("group").to_pylist()
    return chunk.append_column(KAFKA_GROUP, pa.array(
        [None if g is None else renamed.get(g, g) for g in groups], pa.string()))
