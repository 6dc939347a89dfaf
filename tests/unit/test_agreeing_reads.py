"""The takeover judged when a consumer committing all along moves its value between the read of Kafka's values
and the read of __consumer_offsets: sync's pass and the gate read both again where they disagree (pure: the two
reads are stand-ins that answer in turn)."""

from __future__ import annotations

from kafka.errors import KafkaTimeoutError

from migrate.journal.authorship import Authorship
from migrate.kafka.clocks import Margin
from migrate.kafka.offsets_log.group import NO_MEMBER, Commit, Watched
from migrate.kafka.takeover import AGREE_TRIES
from migrate.ready.evidence import agreed
from migrate.ready.rules import KafkaGroup
from migrate.sync.decide import Judging, decide
from migrate.sync.state import GroupState
from migrate.sync.watch import ZkOffset

KEY = ("orders", 0)
ZK_WRITTEN = 1_000_000.0          # ZooKeeper's last write of the znode, seconds
LATER = ZK_WRITTEN + 600          # ten minutes after it: past any margin


class Log:
    """A group's records of __consumer_offsets as a read left them: the newest commit of KEY and its watch."""

    def __init__(self, offset: int, watched_from: int):
        self.offset, self.watched_from = offset, watched_from

    def committed(self, key):
        return Commit(self.offset, "", int(LATER * 1000), None, 10 + self.offset, NO_MEMBER)

    def newest_offset(self, key):
        return self.offset

    def watched(self, key, own):
        return Watched(self.offset - self.watched_from + 1, self.watched_from, self.offset)


class Consumer:
    """A client of no group committing one offset further between every two reads zk2kafka makes."""

    def __init__(self, offset: int, stops_after: int | None = None):
        self.offset, self.first, self.stops_after, self.reads = offset, offset, stops_after, 0

    def _moves(self) -> None:
        self.reads += 1
        if self.stops_after is None or self.reads <= self.stops_after:
            self.offset += 1

    def fetch(self, names):                       # the OffsetFetch
        self._moves()
        return {name: {KEY: (self.offset, "")} for name in names}

    def log(self, names):                         # the read of __consumer_offsets
        self._moves()
        return {name: Log(self.offset, self.first) for name in names}, None


def judged(consumer: Consumer, committed: bool = True) -> tuple[dict, int]:
    stopped = {}
    group = GroupState(offsets={KEY: ZkOffset(5, "/consumers/g/offsets/orders/0", 1, "standard", ZK_WRITTEN)})
    held = consumer.fetch(["g"])
    judging = Judging(consumer.log, lambda: Margin(60.0), lambda mtime, at: None, 0.0,
                      consumer.fetch if committed else None)
    decide(["g"], {"g": group}, held, frozenset(), Authorship(None, "zk2kafka sync R"),
           lambda name, why, reason: stopped.update({name: (reason, why)}), judging)
    return stopped["g"], consumer.reads


def test_a_value_moved_between_the_two_reads_is_judged_as_it_stands_by_the_record_that_wrote_it():
    (reason, why), reads = judged(Consumer(30, stops_after=3))
    assert reason == "taken_over", why
    assert "orders-0 = 33" in why and "by a client of no consumer group seen consuming" in why, why
    assert reads == 4        # its OffsetFetch, a read that disagreed, one OffsetFetch and read more that agreed


def test_reads_that_never_agree_are_asked_again_a_bounded_number_of_times_and_differ():
    (reason, why), reads = judged(Consumer(30))
    assert reason == "differs" and "the newest commit record read holds" in why, why
    assert reads == 2 + 2 * AGREE_TRIES


def test_without_kafkas_values_to_ask_again_a_disagreement_differs_at_once():
    (reason, why), reads = judged(Consumer(30, stops_after=2), committed=False)
    assert reason == "differs" and "the newest commit record read holds 32, not Kafka's 31" in why, why
    assert reads == 2


def test_the_gate_asks_kafka_again_where_the_log_read_after_its_snapshot_holds_a_newer_value():
    consumer = Consumer(30, stops_after=3)
    kafka = {"g": KafkaGroup(offsets={KEY: consumer.fetch(["g"])["g"][KEY]})}

    class OffsetsLog:                              # the gate's reader: read on, its groups' logs as they stand
        groups = {}

        def read(self, budget):
            kafka["g"].log = self.groups["g"] = consumer.log(["g"])[0]["g"]

    reader = OffsetsLog()
    reader.read(1.0)
    assert agreed(kafka, reader, consumer.fetch) is None
    assert kafka["g"].offsets[KEY] == (33, "") and kafka["g"].log.committed(KEY).offset == 33
    assert consumer.reads == 4


class Reader:
    """The gate's reader after its read: the group's newest record holds 32, where Kafka answered 31."""

    def __init__(self):
        self.groups, self.reads = {"g": Log(32, 30)}, 0

    def read(self, budget):
        self.reads += 1


def test_the_gate_asks_again_of_a_partition_a_live_member_holds_too():
    # Holding it shows nothing: only the record of the member's commit does, so Kafka's value and the log
    # must agree for it as for any other.
    kafka = {"g": KafkaGroup(offsets={KEY: (31, "")}, assigned={KEY: "m-1"}, members=1)}
    asked = []
    reader = Reader()
    assert agreed(kafka, reader, lambda names: asked.append(names) or {"g": {KEY: (32, "")}}) is None
    assert asked == [["g"]] and kafka["g"].offsets[KEY] == (32, "")


def test_kafka_not_answering_again_leaves_the_gate_the_snapshots_values():
    def refused(names):
        raise KafkaTimeoutError("no answer")

    kafka, reader = {"g": KafkaGroup(offsets={KEY: (31, "")})}, Reader()
    assert agreed(kafka, reader, refused) is None
    assert kafka["g"].offsets[KEY] == (31, "") and reader.reads == 0
