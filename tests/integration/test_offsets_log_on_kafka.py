"""The one reader of __consumer_offsets (migrate/kafka/offsets_log/) on the session's Kafka: read forward from
where it stopped, a group followed late caught up on its own (the partition's other groups keep their state), the
watch counted from its mark in the log, a transaction resolved by a marker that comes in a later read, and what it
measures of the broker's clock."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from migrate.kafka.offsets_log import OffsetsLog, partition_for
from support.seeding import make_topic
from support.wait import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def topic(cluster, kafka_admin, prefix) -> str:
    make_topic(kafka_admin, cluster.bootstrap_server, f"{prefix}t", 1, 1)
    return f"{prefix}t"


def commit(kafka_admin, group: str, topic: str, offset: int, metadata: str = "") -> None:
    errors = kafka_admin.alter_group_offsets(group, {TopicPartition(topic, 0): OffsetAndMetadata(offset, metadata, -1)})
    assert all(e.__name__ == "NoError" for e in errors.values()), errors


def same_partition(kafka_admin, prefix: str, n: int) -> list[str]:
    """`n` group names whose records __consumer_offsets keeps in one partition."""
    (described,) = kafka_admin.describe_topics(["__consumer_offsets"])
    count = len(described["partitions"])
    names = (f"{prefix}g{i}" for i in range(10_000))
    first = next(names)
    return [first, *[g for g in names if partition_for(g, count) == partition_for(first, count)][:n - 1]]


def test_the_reader_goes_on_from_where_it_stopped_and_catches_up_a_group_followed_late(kafka_admin, prefix, topic):
    a, b, c, d = same_partition(kafka_admin, prefix, 4)
    for group, offset in ((a, 10), (b, 20), (c, 30), (d, 40)):
        commit(kafka_admin, group, topic, offset)
    def in_the_log(*groups) -> int:
        """The records of `groups` a reader of its own reads from the start (a commit a loaded client sent twice
        is two)."""
        fresh = OffsetsLog(kafka_admin)
        fresh.follow(groups)
        assert fresh.read(60) is None
        return fresh.records

    reader = OffsetsLog(kafka_admin)
    reader.follow([a])
    assert reader.read(60) is None and reader.records == in_the_log(a) >= 1
    assert reader.group(a).committed((topic, 0)).offset == 10

    before = reader.records
    commit(kafka_admin, a, topic, 11)
    assert reader.read(60) is None and reader.records == in_the_log(a) > before   # only what is new
    assert reader.group(a).committed((topic, 0)).offset == 11

    # What a catch-up adds is counted against a fresh reader of the late groups alone: a's superseded record
    # may be gone from the log by then (the cluster's cleaner), b's, c's and d's are their latest.
    reader.follow([b])                                       # b's record lies before where the reader stands
    before = reader.records
    assert reader.read(60) is None and reader.records - before == in_the_log(b)   # b's caught up, nothing of a twice
    assert reader.group(b).committed((topic, 0)).offset == 20
    assert reader.group(a).committed((topic, 0)).offset == 11

    reader.follow([c])
    reader.follow([d])                                       # two late groups of one partition: one catch-up
    before = reader.records
    assert reader.read(60) is None and reader.records - before == in_the_log(c, d)
    assert [reader.group(g).committed((topic, 0)).offset for g in (a, b, c, d)] == [11, 20, 30, 40]


def test_commits_after_the_watchs_mark_are_the_watchs(kafka_admin, prefix, topic):
    group = f"{prefix}flink"
    commit(kafka_admin, group, topic, 5)
    reader = OffsetsLog(kafka_admin)
    reader.follow([group])
    reader.mark_watch()
    commit(kafka_admin, group, topic, 5, "zk2kafka migrate 20261205-101010-ab12cd")   # a renewal: not a consumer's
    for offset in (6, 7):
        commit(kafka_admin, group, topic, offset)
    commit(kafka_admin, group, topic, 5, "zk2kafka sync 20261205-101010-ab12cd")
    assert reader.read(60) is None
    assert reader.group(group).watched((topic, 0)) == (2, 6, 7)


def test_a_transactions_commit_waits_for_its_marker_across_reads(cluster, kafka_admin, prefix, topic):
    group = f"{prefix}eos"
    commit(kafka_admin, group, topic, 100)
    reader = OffsetsLog(kafka_admin)
    reader.follow([group])
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_server, transactional_id=f"{prefix}tx")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(150, "", -1)}, group)
        assert reader.read(60) is None
        assert reader.group(group).committed((topic, 0)).offset == 100   # still open: no commit
        producer.commit_transaction()
    finally:
        producer.close()
    # The markers are written after the producer's EndTxn is answered: read until the marker is there.
    wait_for("the transaction's marker", lambda: reader.read(60) is None
             and reader.group(group).committed((topic, 0)).offset == 150, 60)


def test_the_brokers_clock_is_bounded_by_what_is_read(kafka_admin, prefix, topic):
    group = f"{prefix}clock"
    before = time.time()
    commit(kafka_admin, group, topic, 1)
    reader = OffsetsLog(kafka_admin)
    reader.follow([group])
    assert reader.read(60) is None
    (bound,) = reader.clocks.brokers_lo.values()
    # This host's clock is the broker's: a record stamped at most as late as it was read.
    assert before - time.time() - 1 <= bound.seconds <= 0.5, bound


def test_a_first_read_split_over_processes_gives_what_one_process_reads(cluster, kafka_admin, prefix, topic,
                                                                        monkeypatch, caplog):
    from migrate.connection import Connection
    from migrate.kafka.offsets_log import reader as offsets_log

    groups = [f"{prefix}shared{i}" for i in range(12)]
    for i, group in enumerate(groups):
        commit(kafka_admin, group, topic, i)
        commit(kafka_admin, group, topic, 100 + i)
    alone = OffsetsLog(kafka_admin, workers=1)
    alone.follow(groups)
    alone.mark_watch()
    assert alone.read(60) is None
    monkeypatch.setattr(offsets_log, "SHARED_RECORDS", 1)   # split even this small first read
    shared = OffsetsLog(kafka_admin, connection=Connection(bootstrap_server=cluster.bootstrap_server), workers=2)
    shared.follow(groups)
    shared.mark_watch()
    with caplog.at_level("INFO", logger="migrate.kafka.offsets_log"):
        assert shared.read(120) is None
    assert " partitions of __consumer_offsets over 2 processes" in caplog.text
    assert shared.records == alone.records and shared.clocks.brokers_lo
    for group in groups:
        assert shared.group(group).committed((topic, 0)) == alone.group(group).committed((topic, 0))
    commit(kafka_admin, groups[0], topic, 7)                 # read on in this process, from where they stopped
    assert shared.read(60) is None
    assert shared.group(groups[0]).committed((topic, 0)).offset == 7
    assert shared.group(groups[0]).watched((topic, 0)) == (1, 7, 7)
