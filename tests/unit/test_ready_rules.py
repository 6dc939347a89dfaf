"""ready-for-kraft's verdict per group (migrate/ready/rules.py) and its text (migrate/report/ready.py), pure."""

from __future__ import annotations

from migrate.journal.authorship import named_run
from migrate.ready.rules import KafkaGroup, judge
from migrate.report.ready import text
from migrate.zk.quiet import Moved

T = "orders"


def row(group, partition, offset=10, status="OK", reason=None, layout="standard", mtime=1_000):
    return {"group": group, "topic": T, "partition": partition, "offset": offset, "status": status,
            "reason": reason, "mtime": mtime, "layout": layout,
            "path": f"/consumers/{group}/{'offsets' if layout == 'standard' else 'offset'}/{T}/{partition}"}


def wrote(group, key, offset, metadata):   # as check.py decides without a journal
    return named_run(metadata) is not None


PARTITIONS = {(T, 0), (T, 1)}


def verdicts(rows, kafka, moved=(), liveness=None):
    return {v.group: v for v in judge(rows, kafka, PARTITIONS, moved, liveness or {}, wrote)}


def test_each_offset_in_kafka_with_the_same_value_is_ready():
    v = verdicts([row("g", 0), row("g", 1, 11)],
                 {"g": KafkaGroup("Empty", {(T, 0): (10, "zk2kafka migrate R"), (T, 1): (11, "")})})["g"]
    assert v.ready and (v.offsets, v.in_kafka) == (2, 2)


def test_what_is_left_behind_is_named_per_finding():
    found = verdicts(
        [row("missing", 0), row("moved", 0, 120), row("bad", 0, None, "MALFORMED", "not an integer"),
         row("twice", 0), row("twice", 0, layout="kafka-1.1.0-offset", mtime=500)],
        {"moved": KafkaGroup("Empty", {(T, 0): (100, "zk2kafka migrate R")})})
    assert found["missing"].not_in_kafka == ["orders-0 (ZooKeeper 10)"] and not found["missing"].ready
    assert found["moved"].differs == ["orders-0: ZooKeeper 120, Kafka 100 (zk2kafka migrate R)"]
    assert found["bad"].unreadable == ["orders-0: MALFORMED: not an integer"]
    # two layouts of one partition are one offset, the newer znode's, as diff and sync pick it
    assert found["twice"].offsets == 1


def test_a_topic_gone_from_kafka_is_listed_and_blocks_nothing():
    v = judge([{**row("retired", 5), "topic": "legacy"}], {}, PARTITIONS, [], {}, wrote)[0]
    assert v.topic_gone == ["legacy-5 (ZooKeeper 10)"] and v.ready


def test_a_group_taken_over_by_new_consumers_is_ready_by_syncs_rules():
    found = verdicts([row("live", 0), row("theirs", 0)],
                     {"live": KafkaGroup("Stable", {}, assigned={(T, 0)}),
                      "theirs": KafkaGroup("Empty", {(T, 0): (5000, "")})})
    assert found["live"].ready and found["live"].taken_over == 1
    assert found["theirs"].ready and found["theirs"].taken_over == 1


def test_registered_consumers_and_writes_during_the_watch_block():
    found = verdicts([row("old", 0), row("v0", 0)],
                     {"old": KafkaGroup("Empty", {(T, 0): (10, "zk2kafka migrate R")}),
                      "v0": KafkaGroup("Empty", {(T, 0): (10, "zk2kafka migrate R")})},
                     moved=[Moved("/consumers/v0/offsets/orders/0", 1_800_000_000.0)],
                     liveness={"old": (1, 2), "idle-registered": (1, 0)})
    assert found["old"].registered == ["1 in ids/", "2 partition(s) owned under owners/"]
    assert found["v0"].written == ["/consumers/v0/offsets/orders/0 at 08:00:00Z"]
    assert not found["idle-registered"].ready, "a registered consumer without offsets is still one"


def test_kafka_refusing_to_show_a_group_is_not_checked_so_not_ready():
    v = verdicts([row("secret", 0)], {"secret": KafkaGroup("Empty", {}, refused="GroupAuthorizationFailedError")})
    assert not v["secret"].ready and "would not show" in v["secret"].unreadable[0]


def _data(found, ready):
    return {"run": "R", "report": "/s/reports/R", "source": "zk:2181/kafka/consumers", "groups": len(found),
            "offsets": sum(v.offsets for v in found), "ready": ready, "watched": {"quiet_for": 120.0},
            "not_ready": [v.group for v in found if not v.ready], "verdicts": [v.to_json() for v in found]}


def test_the_text_tables_the_groups_rarest_finding_first_and_says_what_to_do():
    found = judge([row("a-plain", 0), row("z-v0", 0)], {}, PARTITIONS,
                  [Moved("/consumers/z-v0/offsets/orders/0", 1_800_000_000.0)], {"reporting": (1, 2)}, wrote)
    out = text(_data(found, False))
    assert out.splitlines()[0] == ("ready-for-kraft: NOT READY: 3 of 3 group(s) under zk:2181/kafka/consumers "
                                   "would leave offsets behind in ZooKeeper (watched 2m for writes; exit 3)")
    table = out.split("\n\n")[1].splitlines()
    assert table[0].split() == ["GROUP", "NOT-IN-KAFKA", "OLD-CONSUMER", "WRITTEN", "DIFFERS", "UNREADABLE"]
    assert [line.split() for line in table[1:]] == [["z-v0", "1", "-", "1", "-", "-"],
                                                   ["reporting", "-", "1", "-", "-", "-"],
                                                   ["a-plain", "1", "-", "-", "-", "-"]]
    assert "written during the watch: a client that does not register still commits" in out
    assert "a reviewed plan (`zk2kafka diff --group z-v0 --group a-plain`; review it" in out
    assert "then `zk2kafka migrate --execute --plan <its run> --group z-v0 --group a-plain`" in out
    assert "a rolling switch with `zk2kafka sync --execute --group z-v0 --group a-plain`" in out
    assert out.endswith("run=R report=/s/reports/R")


def test_ready_says_what_was_checked():
    found = judge([row("g", 0)], {"g": KafkaGroup("Empty", {(T, 0): (10, "")})}, PARTITIONS, [], {}, wrote)
    assert text(_data(found, True)).startswith("ready-for-kraft: ready: every ZooKeeper offset of the 1 group(s)")


def test_a_live_group_takes_over_only_the_partitions_its_members_are_assigned():
    # ZooKeeper holds orders and invoices; the new consumers in Kafka subscribe to orders only
    rows = [row("g", 0, 10), row("g", 1, 11), {**row("g", 0, 7), "topic": "invoices",
                                               "path": "/consumers/g/offsets/invoices/0"}]
    kafka = {"g": KafkaGroup("Stable", {(T, 0): (15, "")}, members=2, assigned={(T, 0), (T, 1)})}
    v = judge(rows, kafka, PARTITIONS | {("invoices", 0)}, [], {}, wrote)[0]
    assert not v.ready and v.not_in_kafka == ["invoices-0 (ZooKeeper 7)"]
    assert v.taken_over_offsets == ["orders-0: ZooKeeper 10, Kafka 15 (assigned to a live member)",
                                    "orders-1: ZooKeeper 11, Kafka none (assigned to a live member)"]
    assert (v.taken_over, v.kafka_state, v.kafka_members) == (2, "Stable", 2)


def test_a_live_groups_unassigned_partition_already_in_kafka_is_ready():
    kafka = {"g": KafkaGroup("Stable", {(T, 1): (11, "zk2kafka migrate R")}, members=1,
                             assigned={(T, 0)})}
    v = verdicts([row("g", 0), row("g", 1, 11)], kafka)["g"]
    assert v.ready and (v.in_kafka, v.taken_over) == (1, 1)


def test_a_value_a_new_consumer_committed_is_named_as_taken_over():
    v = verdicts([row("g", 0)], {"g": KafkaGroup("Empty", {(T, 0): (5000, "")})})["g"]
    assert v.ready and v.taken_over_offsets == ["orders-0: ZooKeeper 10, Kafka 5000 (committed by a new consumer)"]
