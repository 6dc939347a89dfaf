"""migrate/diff/plan.py's pure parts: a reviewed plan's identity, and why one is refused."""

from __future__ import annotations

import time

import pytest

from migrate.diff import plan as p
from migrate.errors import PlanRefused

from support.reports import CURRENT, write_plan


def test_a_plan_is_found_by_run_id_plan_id_or_report_dir(tmp_path):
    report = write_plan(tmp_path)
    by_run = p.ReviewedPlan.load("20261123T010203Z-3f2a", tmp_path)
    assert by_run.id.startswith("20261123T010203Z-3f2a@") and len(by_run.id.split("@")[1]) == p.SHORT_HASH
    assert p.ReviewedPlan.load(by_run.id, tmp_path).id == by_run.id == p.ReviewedPlan.load(str(report), tmp_path).id
    assert not by_run.refusals(CURRENT, 86400)


def test_a_plan_is_found_by_its_file_too_and_a_scan_is_named_as_such(tmp_path):
    report = write_plan(tmp_path)
    assert p.ReviewedPlan.load(str(report / p.PLAN_FILE), tmp_path).run == "20261123T010203Z-3f2a"
    scan = tmp_path / "20261123T000000Z-0000"
    scan.mkdir()
    (scan / "scan.json").write_text("{}")
    with pytest.raises(PlanRefused, match=r"20261123T000000Z-0000 is a scan's run, which plans nothing: run a "
                                          r"diff first \(`zk2kafka diff`\)"):
        p.ReviewedPlan.load("20261123T000000Z-0000", tmp_path)
    with pytest.raises(PlanRefused, match=r"no run 20991231T000000Z-0000 in .*; a diff's last line names its plan"):
        p.ReviewedPlan.load("20991231T000000Z-0000", tmp_path)
    with pytest.raises(PlanRefused, match="not a plan id"):
        p.ReviewedPlan.load(str(report / "summary.json"), tmp_path)


def test_a_changed_byte_or_another_id_is_refused(tmp_path):
    report = write_plan(tmp_path)
    good = p.ReviewedPlan.load("20261123T010203Z-3f2a", tmp_path).id
    with pytest.raises(PlanRefused, match="not the one named"):
        p.ReviewedPlan.load(good[:-4] + ("0000" if not good.endswith("0000") else "1111"), tmp_path)
    with open(report / p.PLAN_FILE, "ab") as f:
        f.write(b"\0")
    with pytest.raises(PlanRefused, match="was altered since the diff wrote it"):
        p.ReviewedPlan.load("20261123T010203Z-3f2a", tmp_path)


def test_other_stores_policies_selection_or_age_are_refused(tmp_path):
    write_plan(tmp_path, created=time.time() - 30 * 3600)
    plan = p.ReviewedPlan.load("20261123T010203Z-3f2a", tmp_path)
    assert plan.refusals(CURRENT, 2 * 86400) == []
    (old,) = plan.refusals(CURRENT, 86400)
    assert "older than --max-plan-age 24h" in old and "--max-plan-age 38h" in old
    elsewhere = plan.refusals({**CURRENT, "zk_root": "/other", "on_conflict": "kafka", "groups": ["x"]}, 3 * 86400)
    assert [r.split(" (")[0] for r in elsewhere] == ["made against other stores", "made with other policies",
                                                     "another selection"]
    # A selection from a config file an exported ZK2KAFKA_CONFIG names is not on the command line: said where.
    assert "'x' now): the selection now is that of the flags and of the --config file " \
           "(ZK2KAFKA_CONFIG may name one); leave it out" in elsewhere[2]


def test_a_review_reads_each_groups_state_and_each_planned_partitions_log_once(tmp_path):
    from migrate.write.review import PartitionSeen, Review

    write_plan(tmp_path)
    review = Review.of_plan(tmp_path / "20261123T010203Z-3f2a" / p.PLAN_FILE, {"g"})
    assert review.groups == {"g": p.GroupSeen(None, 0)} and review.partitions == {
        ("t", 0): PartitionSeen(None, None, None)}
    seen = review.groups["g"]
    assert seen.matches("Dead", 0) and not seen.matches("Empty", 0) and not seen.matches(None, 1)
    assert Review.of_plan(tmp_path / "20261123T010203Z-3f2a" / p.PLAN_FILE, {"other"}).groups == {}


def test_a_reviewed_offset_out_of_the_log_now_or_a_topic_created_again_is_drift():
    from migrate.journal import journal as j
    from migrate.write.review import LogNow, PartitionSeen, Review

    created = 1_700_000_000_000
    review = Review({"g": p.GroupSeen("Empty", 0)},
                    {("t", 0): PartitionSeen(0, 100, created), ("t", 1): PartitionSeen(0, 100, created),
                     ("u", 0): PartitionSeen(50, 60, None)}, {"t": created})
    parts = [j.Partition("t", 0, 10, "/z0", 0, "standard"), j.Partition("t", 1, 100, "/z1", 0, "standard")]
    still = LogNow({("t", 0): (0, 120), ("t", 1): (5, 120)}, {"t": created})
    assert review.log_moved(parts, still) is None
    trimmed = LogNow({("t", 0): (50, 120), ("t", 1): (5, 120)}, {"t": created})
    assert review.log_moved(parts, trimmed) == (
        "Kafka's log moved since the plan: t-0: 10 is below the log start 50 now (was 0: retention or deleteRecords)")
    recreated = LogNow({("t", 0): (0, 20), ("t", 1): (0, 20)}, {"t": created + 60_000})
    assert review.log_moved(parts, recreated) == (
        "Kafka's log moved since the plan: topic t was created again since the plan (2023-11-14T22:13:20Z then, "
        "2023-11-14T22:14:20Z now); t-0: its log end went back from 100 to 20 (the topic recreated or truncated); "
        "t-1: 100 is past the log end 20 now (was 100)")
    gone = LogNow({("t", 0): "UnknownTopicOrPartitionError: ...", ("t", 1): (0, 120)}, {"t": None})
    assert review.log_moved(parts, gone).startswith(
        "Kafka's log moved since the plan: topic t was deleted since the plan; t-0: no log bounds now")
    # Reviewed out of the log already (--out-of-range commit): it was reviewed as such, and is no drift.
    committed_below = [j.Partition("u", 0, 10, "/z2", 0, "standard")]
    assert review.log_moved(committed_below, LogNow({("u", 0): (55, 70)}, {})) is None


def test_refusals_name_the_flags_as_typed_and_values_as_written(tmp_path):
    write_plan(tmp_path)
    plan = p.ReviewedPlan.load("20261123T010203Z-3f2a", tmp_path)
    (selection,) = plan.refusals({**CURRENT, "groups": ["billing", "audit.*"]}, 86400)
    assert "--group none in the plan, 'billing', 'audit.*' now" in selection and "--groups" not in selection
    (policies,) = plan.refusals({**CURRENT, "no_zk_write": True}, 86400)
    assert "--no-zk-write not given in the plan, given now" in policies


def test_resume_changes_name_the_flags_as_typed():
    from migrate.write.guards import changes

    assert changes({"groups": ["bulk-.*"], "on_conflict": "skip"}, {"groups": [], "on_conflict": "zk"},
                   ("groups", "on_conflict")) == ["--group: 'bulk-.*' then, none now",
                                                  "--on-conflict: 'skip' then, 'zk' now"]


def test_kafka_offsets_that_moved_say_no_offset_not_none():
    from migrate.journal import journal as j
    from migrate.write.kafka_half import moved

    part = j.Partition("orders", 0, 120, "/p", 0, "standard", kafka_offset=None)
    assert moved([part], {("orders", 0): (120, "")}) == (
        "Kafka offsets changed since the plan: orders-0 no offset -> 120")
