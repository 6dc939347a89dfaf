"""The diff on a real Spark standalone cluster (master + worker from the pyspark package) equals the local diff.

Needs no ZooKeeper or Kafka: the snapshots are Parquet files written here, a few thousand rows covering
every status, so the job spans several tasks on the cluster's executor.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from migrate.diff import schema as s
from migrate.diff.offset_diff import Policy
from migrate.diff.run import run_diff
from migrate.kafka.snapshot import GROUP, KAFKA_SCHEMA, OFFSET, PARTITION, REFUSED, not_authorized
from migrate.jvm.server import wait_until
from migrate.testing.spark import StandaloneSpark
from migrate.zk.reader import SCHEMA as ZK_SCHEMA

from support.frames import commit_time

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
GROUPS, TOPICS, PARTITIONS = 120, ("orders", "clicks"), 16  # 3,840 ZooKeeper offsets
LOG_START, LOG_END = 10, 10_000


def zk_row(group, topic, partition, offset, status="OK", consumers=0, layout="standard", mtime=T0, raw=None,
           topic_ctime=T0 - dt.timedelta(days=1)):
    return {"group": group, "topic": topic, "partition": partition, "offset": offset,
            "raw": raw if raw is not None else str(offset), "status": status,
            "reason": None if status == "OK" else f"{status.lower()} value", "mtime": mtime, "ctime": T0,
            "version": 3, "layout": layout, "path": f"/consumers/{group}/offsets/{topic}/{partition}",
            "zk_consumers": consumers, "zk_owned_partitions": 0, "topic_ctime": topic_ctime}


def snapshots(tmp_path):
    """(zk, kafka) Parquet paths whose plan holds every status many times over."""
    zk, kafka = [], []
    for topic in TOPICS:
        # One more partition in Kafka than in ZooKeeper, for KAFKA_ONLY; the last one has no leader.
        for p in range(PARTITIONS + 1):
            bounds = (None, None, "partition has no leader") if p == PARTITIONS - 1 else (LOG_START, LOG_END, None)
            kafka.append({"kind": PARTITION, "topic": topic, "partition": p, "log_start": bounds[0],
                          "log_end": bounds[1], "leader": 0, "error": bounds[2]})
    for g in range(GROUPS):
        group = f"group-{g:04d}"
        consumers = 2 if g % 20 == 3 else 0                                # GROUP_ACTIVE_ZK
        if g % 20 == 7:                                                    # GROUP_ACTIVE_KAFKA
            kafka.append({"kind": GROUP, "group": group, "group_state": "Stable", "members": 3,
                          "protocol_type": "consumer"})
        elif g % 4 == 0:
            kafka.append({"kind": GROUP, "group": group, "group_state": "Empty", "members": 0,
                          "protocol_type": "consumer"})
        for topic in TOPICS:
            for p in range(PARTITIONS):
                i = g * PARTITIONS + p
                offset = 100 + i
                kind = i % 13
                if kind == 1:                                              # IN_SYNC
                    kafka.append({"kind": OFFSET, "group": group, "topic": topic, "partition": p,
                                  "committed_offset": offset, "metadata": ""})
                elif kind == 2:                                            # CONFLICT
                    kafka.append({"kind": OFFSET, "group": group, "topic": topic, "partition": p,
                                  "committed_offset": offset + 7, "metadata": "older run"})
                elif kind == 9:   # TAKEN_OVER in a consumer group (committed after ZooKeeper's write), else CONFLICT
                    kafka.append({"kind": OFFSET, "group": group, "topic": topic, "partition": p,
                                  "committed_offset": offset + 20, "metadata": ""})
                    kafka.append(commit_time(group, topic, p, T0 + dt.timedelta(minutes=10), offset=offset + 20))
                elif kind == 3:                                            # BELOW_LOG_START
                    offset = LOG_START - 5
                elif kind == 4:                                            # ABOVE_LOG_END
                    offset = LOG_END + 5
                if kind == 5:                                              # MALFORMED
                    zk.append(zk_row(group, topic, p, None, status="MALFORMED", raw="1.5E2", consumers=consumers))
                elif kind == 6:                                            # UNREADABLE
                    zk.append(zk_row(group, topic, p, None, status="UNREADABLE", raw="", consumers=consumers))
                elif kind == 8:                                            # TOPIC_RECREATED: written before the topic
                    zk.append(zk_row(group, topic, p, offset, consumers=consumers,
                                     topic_ctime=T0 + dt.timedelta(days=1)))
                elif kind == 7:                                            # two layouts: the later one wins
                    zk.append(zk_row(group, topic, p, offset - 1, consumers=consumers))
                    zk.append(zk_row(group, topic, p, offset, consumers=consumers, layout="kafka-1.1.0-offset",
                                     mtime=T0 + dt.timedelta(hours=1)))
                else:                                                      # MIGRATE unless marked above
                    zk.append(zk_row(group, topic, p, offset, consumers=consumers))
        if g % 5 == 0:                                                     # KAFKA_ONLY
            kafka.append({"kind": OFFSET, "group": group, "topic": "orders", "partition": PARTITIONS,
                          "committed_offset": 42, "metadata": ""})
        if g % 6 == 0:                                                     # UNKNOWN_PARTITION: topic, partition
            zk.append(zk_row(group, "deleted-topic", 0, 5))
            zk.append(zk_row(group, "orders", 99, 5))
        if g % 7 == 3:                                                     # TOPIC_NOT_AUTHORIZED
            zk.append(zk_row(group, "secret-topic", 0, 5))
        if g % 30 == 11:                                                   # an unlistable directory
            zk.append(zk_row(group, None, None, None, status="UNREADABLE", raw=""))
    kafka.append({"kind": REFUSED, "topic": "secret-topic", "error": not_authorized("secret-topic")})
    kafka.append({"kind": OFFSET, "group": "kafka-only-group", "topic": "orders", "partition": 0,
                  "committed_offset": 1, "metadata": ""})                  # not ours: must not appear
    zk_path, kafka_path = tmp_path / "zk.parquet", tmp_path / "kafka.parquet"
    # Small row groups: the files look like the streamed snapshots, not one block.
    pq.write_table(pa.Table.from_pylist(zk, schema=ZK_SCHEMA), zk_path, row_group_size=500)
    pq.write_table(pa.Table.from_pylist(kafka, schema=KAFKA_SCHEMA), kafka_path, row_group_size=500)
    return zk_path, kafka_path


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    with StandaloneSpark(tmp_path_factory.mktemp("spark")) as spark:
        yield spark


def test_standalone_cluster_plan_equals_local_plan(standalone, tmp_path):
    zk_path, kafka_path = snapshots(tmp_path)
    policy = Policy(on_conflict="max", out_of_range="clamp")
    assert standalone.state()["completedapps"] == []

    local = run_diff(zk_path, kafka_path, policy, "local[2]", tmp_path / "local.parquet")
    remote = run_diff(zk_path, kafka_path, policy, standalone.master_url, tmp_path / "remote.parquet")
    local_plan, remote_plan = pq.read_table(local.plan), pq.read_table(remote.plan)

    counts = {name: local_plan["status"].to_pylist().count(name)
              for name in s.STATUSES if name != s.UNTRANSLATABLE}   # --translate-via-mm2 only
    assert all(n > 0 for n in counts.values()), counts
    assert local.rows == local_plan.num_rows > 3000
    assert "kafka-only-group" not in local_plan["group"].to_pylist()
    assert remote_plan.schema == local_plan.schema == s.PLAN_SCHEMA
    assert remote_plan.to_pylist() == local_plan.to_pylist()
    assert local_plan.equals(local_plan.sort_by([(*key, "at_start") for key in s.PLAN_ORDER]))   # as Spark sorts
    assert remote.per_group == local.per_group
    assert len(local.per_group) == GROUPS

    # The second run went to the cluster: the master saw the application finish, and the worker
    # launched an executor for it (a run that silently fell back to local mode leaves neither).
    wait_until("the application to finish", lambda: standalone.state()["completedapps"], 30)
    apps = standalone.state()["completedapps"]
    assert [(a["name"], a["state"]) for a in apps] == [("zk2kafka-diff", "FINISHED")]
    executors = list((standalone.worker_dir / apps[0]["id"]).iterdir())
    assert executors and all((e / "stderr").is_file() for e in executors)


def test_with_a_shared_dir_the_executors_read_the_snapshots_and_write_the_plan(standalone, tmp_path,
                                                                             monkeypatch):
    """--spark-shared-dir: the cluster's executors read copies of the snapshots and write the plan's parts
    there, as a local master does in the state dir; the driver ships nothing and collects nothing."""
    from migrate.diff import run

    zk_path, kafka_path = snapshots(tmp_path)
    policy = Policy(on_conflict="max", out_of_range="clamp")
    local = run_diff(zk_path, kafka_path, policy, "local[2]", tmp_path / "local.parquet")

    def shipped(*args):
        raise AssertionError("the driver shipped a snapshot or collected the plan")
    monkeypatch.setattr(run._Shipped, "read", shipped)
    monkeypatch.setattr(run._Shipped, "in_order", shipped)
    shared = tmp_path / "shared"
    shared.mkdir()
    remote = run_diff(zk_path, kafka_path, policy, standalone.master_url, tmp_path / "remote.parquet",
                      shared_dir=shared)

    assert pq.read_table(remote.plan).to_pylist() == pq.read_table(local.plan).to_pylist()
    assert remote.per_group == local.per_group
    assert list(shared.iterdir()) == []   # its copies and Spark's parts are gone


def test_a_shared_dir_the_executors_do_not_see_is_one_clear_error(standalone, tmp_path, monkeypatch):
    """The driver saw its copy, the executors find none (as on a directory that is not shared): one line
    naming --spark-shared-dir, not a Java stack trace; the diff's own directory there is removed."""
    from migrate.diff import run
    from migrate.errors import MigrateError

    zk_path, kafka_path = snapshots(tmp_path)
    read = run._LocalFiles.read

    def seen_by_the_driver_only(self, snapshot, schema):
        frame = read(self, snapshot, schema)   # Spark listed the copy on the driver
        (self.stage / Path(snapshot).name).unlink()
        return frame
    monkeypatch.setattr(run._LocalFiles, "read", seen_by_the_driver_only)
    shared = tmp_path / "shared"
    shared.mkdir()
    with pytest.raises(MigrateError, match=r"the Spark executors cannot read what the driver wrote to "
                                           r"--spark-shared-dir .*shared: it must be the same directory") as caught:
        run_diff(zk_path, kafka_path, Policy(), standalone.master_url, tmp_path / "plan.parquet", shared_dir=shared)
    assert "\n" not in str(caught.value)
    assert list(shared.iterdir()) == []


def test_a_plan_copied_in_small_batches_equals_the_plan_copied_whole(tmp_path, monkeypatch):
    """Locally Spark writes the plan and the driver copies it a batch at a time; groups split between
    batches (and between Spark's part files) add up to the same per-group figures."""
    zk_path, kafka_path = snapshots(tmp_path)
    policy = Policy(on_conflict="max", out_of_range="clamp")
    whole = run_diff(zk_path, kafka_path, policy, "local[2]", tmp_path / "whole.parquet")
    monkeypatch.setattr(s, "BATCH_ROWS", 100)
    batched = run_diff(zk_path, kafka_path, policy, "local[2]", tmp_path / "batched.parquet")

    assert pq.ParquetFile(batched.plan).metadata.num_row_groups > 30
    assert pq.read_table(batched.plan).to_pylist() == pq.read_table(whole.plan).to_pylist()
    assert batched.rows == whole.rows
    assert batched.per_group == whole.per_group
    assert not list(tmp_path.glob("*.parts"))   # Spark's own output is gone
