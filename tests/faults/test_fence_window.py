"""The fence by read's window: an old consumer's write between a run's first read of a znode and its
read after the Kafka commit.

A znode already holding the bytes a run would write is not rewritten: the run reads it again after
committing Kafka and must find it at the version and mzxid it read before. An old consumer that moves
it in between must fail the group and get Kafka put back, whether the run goes on (its fence reads the
move) or is killed in the window (its resume finds the move before committing anything again); every
other group converges, and the next run carries the consumer's value, so nothing is lost.
"""

from __future__ import annotations

import random

import pytest

from migrate.journal.journal import Journal
from migrate.kafka.writer import KafkaOffsetWriter
from migrate.write.dual_commit import CRASH_ENV

from support.cli import zk2kafka_json
from support.faults import Case, journaled_run, spawn

pytestmark = pytest.mark.integration

GROUPS = 300   # two write batches: the moves land in the first, the second is written after them
MOVED = 3      # groups whose old consumers go on in the window
READ_ON = 7    # how far each reads on: it stays inside the log, so the next run carries it (not out of range)


def fenced_keys(case: Case, groups: list[str]) -> dict[str, tuple[str, str, int]]:
    """A znode each of the first MOVED of these groups that the run fences (its bytes hold the run's value
    already) and whose consumer can read on inside the log; a group with no such znode is passed over (the seed
    puts trailing newlines and offsets at random)."""
    fenced, wanted = {}, set(groups)
    for key in sorted(case.expected):
        if (key[0] in wanted and key not in case.rewritten and len(fenced) < MOVED
                and case.expected[key] + READ_ON <= case.stores.messages):
            fenced.setdefault(key[0], key)
    assert fenced, f"none of {groups[:5]}... has a znode the run fences"
    return fenced


def move_on(case: Case, keys: dict[str, tuple[str, str, int]]) -> dict[tuple[str, str, int], int]:
    """Each key's old consumer reads on and commits to ZooKeeper; the values it wrote."""
    moved = {}
    for key in keys.values():
        moved[key] = case.expected[key] + READ_ON
        case.stores.zk.set(case.path(*key), str(moved[key]).encode())
    return moved


def caught_then_carried(case: Case, fault_log, done: dict, moved: dict[tuple[str, str, int], int]) -> None:
    """The groups moved failed with Kafka put back and the consumers' values standing; the others were
    written; a new run then carries every value, the consumers' included: nothing lost."""
    victims = {key[0] for key in moved}
    assert set(done["failed"]) == victims, done["failed"]
    for group in victims:
        assert "changed since the scan" in done["failed"][group] and "put back" in done["failed"][group], done
    kafka, zk = case.kafka_state(), case.zk_state()
    for key, offset in case.expected.items():
        if key[0] in victims:
            assert kafka[key] is None, (key, kafka[key])   # put back: the group had nothing in Kafka before
            assert int(zk[key][0]) == moved.get(key, offset), (key, zk[key])
        else:
            assert kafka[key] == offset and zk[key] == case.after_run(key), (key, kafka[key], zk[key])

    code, again, _ = zk2kafka_json("migrate", *case.args(), "--execute")
    assert code == 0 and again["state"] == "done", again
    kafka, zk = case.kafka_state(), case.zk_state()
    wanted = {**case.expected, **moved}
    lost = [key for key, offset in wanted.items() if kafka[key] != offset or int(zk[key][0]) != offset]
    fault_log.outcome(converged=not lost, lost=len(lost))
    assert not lost, [(key, wanted[key], kafka[key], zk[key]) for key in lost[:3]]
    code, verified, _ = zk2kafka_json("verify", *case.args())
    assert code == 0 and verified["verified"], verified.get("mismatched")


def test_an_old_consumer_moving_a_fenced_znode_after_the_kafka_commit_fails_its_group(stores, fault_log,
                                                                                      monkeypatch, capsys):
    case = stores.case("fence-move")
    case.seed(GROUPS, random.Random(f"{fault_log.seed}-fence-move"))
    real_commit, moved = KafkaOffsetWriter.commit_many, {}

    def commit_then_the_old_consumers_move(self, commits, metadata):
        sent = real_commit(self, commits, metadata)
        if not moved:   # the first batch: its groups are committed, their znodes not read again yet
            moved.update(move_on(case, fenced_keys(case, sorted(commits))))
            fault_log.fault("old consumer write in the fence's window", len(moved))
        return sent

    monkeypatch.setattr(KafkaOffsetWriter, "commit_many", commit_then_the_old_consumers_move)
    code, done, _ = zk2kafka_json("migrate", *case.args(), "--execute", "--parallelism", "1")
    monkeypatch.undo()
    assert code == 1 and moved, done
    caught_then_carried(case, fault_log, done, moved)


def test_an_old_consumer_moving_a_fenced_znode_while_the_run_is_killed_in_the_window(stores, fault_log,
                                                                                     monkeypatch, capsys):
    case = stores.case("fence-kill")
    case.seed(GROUPS, random.Random(f"{fault_log.seed}-fence-kill"))
    run_id = journaled_run(case.args(), case.state_dir, monkeypatch)
    killed = spawn(["migrate", *case.args(), "--execute", "--resume", run_id, "-q"],
                   {CRASH_ENV: "after-kafka-commit"})   # Kafka committed, no znode read again yet
    _, err = killed.communicate(timeout=300)
    assert killed.returncode == -9, err
    with Journal.open(case.state_dir) as journal:
        in_flight = sorted(g.name for g in journal.groups(run_id) if g.before_recorded)
    assert in_flight, "the kill came before any group was touched"
    moved = move_on(case, fenced_keys(case, in_flight))
    fault_log.fault("kill -9 zk2kafka + old consumer write in the fence's window")

    code, done, _ = zk2kafka_json("migrate", *case.args(), "--execute", "--resume", run_id)
    assert code == 1, done
    caught_then_carried(case, fault_log, done, moved)
