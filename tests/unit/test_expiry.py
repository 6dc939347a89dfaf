"""When Kafka deletes the offsets of a group with no member, per release: before 2.1 each offset by its own
commit (or the expiry a v1 record set); from 2.1 (KIP-211) an Empty consumer group all at once, retention after
it became Empty; a group with no protocol type by commit time on every release, each group's clocks as its
records in __consumer_offsets give them (migrate/kafka/offsets_log/group.py)."""

from __future__ import annotations

import pytest

from migrate.diff.retention import COMMIT_CLOCK, EMPTY_CLOCK, expiry_lines, offsets_expire, retention_preflight
from migrate.ready.expiry import HeldGroup, expiring, window

from support.records import group_log

DAY_MS = 86_400_000
T0 = 1_800_000_000_000   # ms


@pytest.mark.parametrize("version", [(2, 1), (2, 8), (3, 9), (4, 1), None])
def test_an_empty_consumer_group_expires_all_at_once_retention_after_it_became_empty(version):
    commits = [(T0 + 5 * DAY_MS, None), (T0 + 6 * DAY_MS, None)]   # committed since: no matter
    assert offsets_expire(version, 10080, "consumer", "Empty", T0, commits) == (
        EMPTY_CLOCK, T0 + 7 * DAY_MS, T0 + 7 * DAY_MS, None)


@pytest.mark.parametrize("version", [(0, 10, 2), (1, 1), (2, 0)])
def test_before_2_1_every_offset_expires_by_its_own_commit_even_a_consumer_groups(version):
    commits = [(T0, None), (T0 + DAY_MS, None)]
    assert offsets_expire(version, 1440, "consumer", "Empty", T0 - 9 * DAY_MS, commits) == (
        COMMIT_CLOCK, T0 + DAY_MS, T0 + 2 * DAY_MS, None)


def test_the_expiry_a_v1_record_set_is_the_one_the_broker_goes_by():
    commits = [(T0, T0 + 3 * DAY_MS), (T0, None)]   # one commit asked for 3 days' retention
    assert offsets_expire((2, 0), 1440, "", "Empty", None, commits) == (COMMIT_CLOCK, T0 + DAY_MS, T0 + 3 * DAY_MS,
                                                                        None)


@pytest.mark.parametrize("version", [(1, 1), (2, 1), (3, 9)])
def test_a_group_only_a_migration_committed_to_expires_by_commit_time(version):
    assert offsets_expire(version, 60, "", "Empty", None, [(T0, None)]) == (COMMIT_CLOCK, T0 + 3_600_000,
                                                                            T0 + 3_600_000, None)


def test_what_cannot_be_told_says_why():
    assert offsets_expire((3, 9), 10080, "consumer", "Empty", None).unknown.startswith("the broker did not say")
    assert offsets_expire((3, 9), None, "consumer", "Empty", T0).unknown == "offsets.retention.minutes is unknown"
    assert offsets_expire((3, 9), 10080, "", "Empty", None, []).unknown.startswith("no commit of its offsets")
    assert offsets_expire((3, 9), None, "", "Empty", None, [(T0, None)]).unknown == (
        "offsets.retention.minutes is unknown")


def test_the_release_default_stands_in_for_a_broker_that_cannot_tell_its_retention():
    assert window(None, "0.10.2") == (1440, "release default")
    assert window(None, "2.0") == (10080, "release default")
    assert window(720, "0.11") == (720, "broker")
    assert window(None, None) == (None, None)


def test_ready_for_kraft_names_each_group_with_its_time_and_whether_a_renewal_helps():
    now = T0 / 1000
    clocks = {"went-empty": group_log("went-empty", T0 - DAY_MS, [T0]),
              "migrated": group_log("migrated", None, [T0 - 2 * DAY_MS, T0 - DAY_MS], protocol_type="")}
    held = [HeldGroup("went-empty", "Empty", "consumer", 1), HeldGroup("migrated", "Empty", "", 2),
            HeldGroup("unread", "Empty", "", 3)]
    out = expiring(held, clocks, None, 10080, "3.9", now, "/state/snapshots/zk-r.parquet")
    by = {g["group"]: g for g in out["groups"]}
    assert [g["group"] for g in out["groups"]] == ["migrated", "went-empty", "unread"]   # soonest first
    assert by["migrated"]["expires_at"] == "2027-01-20T08:00:00Z" and by["migrated"]["renewable"]
    assert by["migrated"]["all_expire_at"] == "2027-01-21T08:00:00Z"
    assert by["migrated"]["time_left_seconds"] == 5 * 86400
    assert by["went-empty"]["clock"] == EMPTY_CLOCK and not by["went-empty"]["renewable"]
    assert by["went-empty"]["time_left_seconds"] == 6 * 86400
    assert by["unread"]["expires_at"] is None and by["unread"]["unknown"].startswith("no commit")
    assert out["renew_every"] == "42h" and out["evidence"] == "/state/snapshots/zk-r.parquet"
    unread = expiring(held, {}, "reading __consumer_offsets took longer than 30s", 10080, "3.9", now, "e")
    assert {g["unknown"] for g in unread["groups"]} == {"reading __consumer_offsets took longer than 30s"}


def test_ready_for_kraft_renews_a_renamed_group_by_its_old_name_through_the_mapping():
    """sync renews by ZooKeeper name: a renamed group's Kafka group is renewed through the mapping, repeated; a
    Kafka group named as an old group that maps elsewhere is not one sync with the mapping renews."""
    from migrate.report.ready import expiry

    clocks = {g: group_log(g, None, [T0], protocol_type="") for g in ("billing-v2", "plain", "legacy-billing")}
    held = [HeldGroup(g, "Empty", "", 1) for g in clocks]
    found = expiring(held, clocks, None, 10080, "3.9", T0 / 1000, "e")
    data = {"expiry": found, "group_map": {"renamed": {"legacy-billing": "billing-v2"},
                                           "flags": ["--map-group", "legacy-(.*)=\\1-v2"]}}
    (renew,) = [line for line in expiry(data) if "keep those by commit time" in line]
    assert ("`zk2kafka sync --execute --group legacy-billing --group plain --map-group 'legacy-(.*)=\\1-v2'"
            " --renew-every 42h`") in renew, renew
    # Once ZooKeeper is gone, renew: the same ZooKeeper names, the mapping taken from the journal, not repeated.
    (after,) = [line for line in expiry(data) if "once ZooKeeper is gone" in line]
    assert after == ("  once ZooKeeper is gone, keep those alive from Kafka and this state dir's journal: `zk2kafka "
                     "renew --execute --group legacy-billing --group plain --renew-every 42h` (docs/sync.md, \"After "
                     "ZooKeeper\")"), after
    plain = {"expiry": found, "group_map": {"renamed": {}, "flags": []}}
    (renew,) = [line for line in expiry(plain) if "keep those by commit time" in line]
    assert "--group billing-v2 --group legacy-billing --group plain --renew-every 42h`" in renew, renew


def test_the_diff_lists_the_first_few_expiring_groups_and_counts_the_rest():
    now = T0 / 1000
    groups = [{"group": f"e{i}", "group_state": "Empty", "protocol_type": "consumer", "planned": 0, "offsets": 1}
              for i in range(6)] + [{"group": "fresh", "group_state": None, "protocol_type": None, "planned": 1,
                                     "offsets": 1}]
    since = {f"e{i}": T0 - i * DAY_MS for i in range(6)}
    out = retention_preflight(groups, 10080, "3.9", None, 10080, since, None, now=now)
    assert [g["group"] for g in out["expiring"]] == [*(f"e{i}" for i in range(6)), "fresh"]
    assert out["expiring"][1]["expires_at"] == "2027-01-21T08:00:00Z"
    assert out["empty_consumer_groups"][1]["expires_at"] == "2027-01-21T08:00:00Z"
    assert out["expiring"][-1]["after_commit_minutes"] == 10080 and out["expiring"][-1]["expires_at"] is None
    lines = expiry_lines(out)
    assert lines[0].startswith("expiry: 7 group(s) whose offsets Kafka deletes with no consumer")
    assert lines[2] == "  e1: at 2027-01-21T08:00:00Z (6.0 day(s); since it became Empty)"
    assert lines[-1] == "  ... and 2 more (report.md, summary.json retention.expiring)"
    assert expiry_lines(retention_preflight([], 10080, "3.9", None, 10080)) == []


def test_the_renewal_advised_is_never_below_what_renew_every_takes():
    """A quarter of the retention window, but not below --renew-every's floor: a 2-minute window (a test cluster's)
    advises 1m, which renew and sync take, not 30s, which they refuse."""
    from migrate.diff.retention import renewal_period
    from migrate.durations import duration_text
    from migrate.options import OPTIONS_BY_NAME
    from migrate.durations import parse_duration

    floor = OPTIONS_BY_NAME["renew_every"].floor
    for minutes, shown in ((10080, "42h"), (1440, "6h"), (8, "2m"), (2, "1m"), (None, "6h")):
        advised = duration_text(renewal_period(minutes))
        assert advised == shown
        assert parse_duration(advised, "--renew-every", floor) >= floor
    found = expiring([HeldGroup("g", "Empty", "", 1)], {"g": group_log("g", None, [T0], protocol_type="")}, None, 2,
                     "3.9", T0 / 1000, "e")
    assert found["renew_every"] == "1m"
