"""renew's view of what zk2kafka wrote, from a real journal file: the last value per Kafka group and partition, a
renamed group under its Kafka name, a run rolled back whole and groups not written left out."""

from __future__ import annotations

from migrate.diff.plan import Planned
from migrate.journal.journal import DONE, FAILED, Journal
from migrate.renew.written import Written, written
from migrate.zk.reader import Selection

K0, K1, OTHER = ("orders", 0), ("orders", 1), ("audit", 0)


def run(journal: Journal, run_id: str, kind: str, offsets: dict, renamed: dict | None = None) -> None:
    journal.create_run(run_id, kind, "", {"group_map": renamed} if renamed else {}, {})
    journal.record_mirrored_many(run_id, {
        group: [(Planned(t, p, o, f"/consumers/{group}/offsets/{t}/{p}", 1, "standard"), None)
                for (t, p), o in keys.items()] for group, keys in offsets.items()})


def test_the_last_run_wins_and_a_renamed_group_is_told_by_its_kafka_name(tmp_path):
    with Journal.open(tmp_path) as journal:
        run(journal, "M1", "migrate", {"a": {K0: 10, K1: 11}, "legacy": {K0: 5}}, renamed={"legacy": "fresh"})
        run(journal, "S1", "sync", {"a": {K0: 12}})
        assert written(journal, Selection()) == {
            "a": {K0: Written(12, "S1", "a"), K1: Written(11, "M1", "a")},
            "fresh": {K0: Written(5, "M1", "legacy")}}
        # The selection names groups as ZooKeeper did (as the diff selected them), topics as they are.
        assert set(written(journal, Selection(groups=("legacy",)))) == {"fresh"}
        assert written(journal, Selection(groups=("fresh",))) == {}
        assert written(journal, Selection(topics=("audit",))) == {}


def test_runs_rolled_back_whole_and_groups_not_written_are_left_out(tmp_path):
    with Journal.open(tmp_path) as journal:
        run(journal, "M1", "migrate", {"a": {K0: 10}, "b": {OTHER: 3}})
        run(journal, "M2", "migrate", {"c": {K0: 7}})
        journal.create_run("R1", "rollback", "", {}, {}, rolls_back="M2")
        journal.set_run("R1", DONE)
        journal.set_group("M1", "b", FAILED, "refused")
        run(journal, "X1", "rollback", {"d": {K0: 1}})   # not a writing run's value
        assert written(journal, Selection()) == {"a": {K0: Written(10, "M1", "a")}}
