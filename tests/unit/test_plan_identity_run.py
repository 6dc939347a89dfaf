"""The local path of `run_diff` writes the plan the joins before it planned, in their order.

Spark writes the parts and the driver copies them in name order: with no exchange for the orderBy,
the range partition by group must already put the parts in the plan's order. (Apart from
test_plan_identity.py: run_diff stops the session it ran on.)
"""

from __future__ import annotations


import pyarrow as pa
import pyarrow.parquet as pq

from migrate.diff.run import run_diff, spark_session

import bench_diff
from support.plan_identity import POLICIES, assert_same_plan, both_plans, edge_cases


def test_run_diff_writes_the_reference_plan_in_its_order(tmp_path):
    zk, kafka = bench_diff.synthesize(groups=300, partitions=20, topics=10, topic_partitions=4)
    zk = pa.concat_tables([zk, edge_cases()[0]])
    kafka = pa.concat_tables([kafka, edge_cases()[1]])
    pq.write_table(zk, tmp_path / "zk.parquet", row_group_size=700)     # several parts, several tasks
    pq.write_table(kafka, tmp_path / "kafka.parquet", row_group_size=700)
    policy = POLICIES[1]
    result = run_diff(tmp_path / "zk.parquet", tmp_path / "kafka.parquet", policy, "local[2]",
                      tmp_path / "plan.parquet")
    spark = spark_session("local[2]", "zk2kafka-unit-identity-run")
    try:
        _, old = both_plans(spark, zk, kafka, policy)
    finally:
        spark.stop()
    assert result.rows == old.num_rows > 6_000
    assert_same_plan(pq.read_table(result.plan), old)
