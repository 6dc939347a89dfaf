"""sync through --map-group: each group mirrored into the Kafka group it maps to; a group a later re-scan
finds whose mapping collides is refused by name, journaled skipped, and the others go on; the renames found
later reach the run's journal, where rollback and status read them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from migrate.group_map import GroupMap, GroupMapRefused, parse_rule
from migrate.journal.journal import Journal
from migrate.sync.follower import Follower
from migrate.sync.renames import SyncRenames


def mapping(*rules: str) -> GroupMap:
    return GroupMap(tuple(parse_rule(r) for r in rules), rules)


class Listing:
    """The ZooKeeper side's group list, which the test changes between re-scans."""

    def __init__(self, *groups: str):
        self.listed = list(groups)

    def groups(self) -> list[str]:
        return sorted(self.listed)


class JournalSeen:
    """What the Follower journals of a re-scan: renames added, groups set skipped."""

    def __init__(self):
        self.renames: dict[str, str] = {}
        self.skipped: dict[str, str] = {}

    def add_renames(self, run_id, renamed):
        self.renames.update(renamed)

    def set_group(self, run_id, group, state, reason=None):
        assert state == "skipped"
        self.skipped[group] = reason

    def runs(self):   # Authorship asks for none here
        return []


def follower(reader, journal, renames, kafka_states=None, owns=lambda group: True):
    kafka = SimpleNamespace(admin=None, policy=None, features=None)   # never called by a re-scan's start
    return Follower(None, reader, kafka, lambda: dict(kafka_states or {}), dict, journal, "R1",
                    "zk2kafka sync R1", 30.0, None, dry_run=False, status_every=None, renames=renames,
                    owns=owns)


def test_a_group_found_later_that_would_meet_a_followed_one_is_refused_by_name_and_the_others_go_on():
    reader, journal = Listing("legacy-billing", "audit"), JournalSeen()
    renames = SyncRenames(mapping(r"legacy-(.*)=\1-v2", r"eu\.(.*)=\1-v2"))
    f = follower(reader, journal, renames)
    f.begin_rescan(0.0)
    assert renames.renamed == {"legacy-billing": "billing-v2"}
    assert journal.renames == {"legacy-billing": "billing-v2"}   # before any commit under the new name
    assert renames.kafka_name("audit") == "audit" and f.kafka.kafka_name("legacy-billing") == "billing-v2"

    # A later re-scan lists two more groups: eu.billing maps onto the Kafka group legacy-billing is
    # mirrored into; eu.audit maps to a name nobody takes.
    reader.listed += ["eu.billing", "eu.audit"]
    f.sweep = None
    f.begin_rescan(0.0)
    assert renames.renamed == {"legacy-billing": "billing-v2", "eu.audit": "audit-v2"}
    assert journal.renames == renames.renamed
    refused = f.groups["eu.billing"]
    assert refused.stop_reason == "map_refused"
    assert refused.stopped == journal.skipped["eu.billing"]
    assert "'eu.billing', mapped to 'billing-v2'" in refused.stopped
    assert "'legacy-billing'" in refused.stopped and "one Kafka group cannot take the offsets of two" in refused.stopped
    assert set(journal.skipped) == {"eu.billing"}
    assert [n for n, g in sorted(f.groups.items()) if g.stopped is None] == ["audit", "eu.audit", "legacy-billing"]

    # Refused once: the next re-scan neither says it again nor admits it.
    f.sweep = None
    f.begin_rescan(0.0)
    assert "eu.billing" not in renames.renamed and set(journal.skipped) == {"eu.billing"}


def test_groups_found_by_one_rescan_that_would_meet_are_all_refused_and_a_name_kept_counts():
    renames = SyncRenames(mapping(r"(eu|us)\.billing=billing", r"old-(.*)=\1"))
    assert renames.admit(["x"]) == ({}, {})
    renamed, refused = renames.admit(["x", "eu.billing", "us.billing", "old-x", "old-y"])
    assert renamed == {"old-y": "y"}
    assert set(refused) == {"eu.billing", "us.billing", "old-x"}
    assert "groups 'eu.billing' and 'us.billing', found by one re-scan, would meet in Kafka group 'billing'" \
        in refused["eu.billing"]
    assert "group 'old-x', mapped to 'x', would meet group 'x'" in refused["old-x"]
    # A group that keeps its name, found after another was mapped onto that name, is refused in turn.
    renamed, refused = renames.admit(["y"])
    assert renamed == {} and "group 'y', which keeps its name, would meet group 'old-y'" in refused["y"]


def test_a_new_that_comes_out_empty_refuses_that_group_alone():
    renames = SyncRenames(mapping(r"legacy-(a*)(.*)=\1"))
    renamed, refused = renames.admit(["legacy-aa", "legacy-b"])
    assert renamed == {"legacy-aa": "aa"}
    assert "maps to an empty name" in refused["legacy-b"]


def test_each_shard_refuses_the_same_groups_and_stops_only_its_own():
    listing = ("eu.billing", "us.billing", "kept")
    rules = mapping(r"(eu|us)\.billing=billing")
    stopped = {}
    for shard in ("eu.billing", "us.billing"):
        journal = JournalSeen()
        f = follower(Listing(*listing), journal, SyncRenames(rules), owns=lambda g, shard=shard: g == shard)
        f.begin_rescan(0.0)
        stopped[shard] = set(journal.skipped)
    assert stopped == {"eu.billing": {"eu.billing"}, "us.billing": {"us.billing"}}


def test_liveness_is_judged_on_the_kafka_group_a_group_maps_to():
    journal = JournalSeen()
    f = follower(Listing("legacy-billing", "billing"), journal, SyncRenames(mapping(r"legacy-(.*)=\1-v2")),
                 kafka_states={"legacy-billing": "Stable", "billing-v2": "Stable"})
    f.begin_rescan(0.0)
    # The old name's Kafka group is nobody's business here; the new group's members take it over.
    assert f.groups["legacy-billing"].stop_reason == "kafka_members"
    assert f.groups["legacy-billing"].stopped.startswith("Kafka group 'billing-v2' is Stable: consumers joined")
    assert f.groups["billing"].stopped is None


def test_the_groups_listed_at_start_are_refused_as_diff_refuses_them():
    with pytest.raises(GroupMapRefused, match="'eu.billing' and 'us.billing' are both mapped to 'billing'"):
        mapping(r"(eu|us)\.billing=billing").resolve(["eu.billing", "us.billing"])


def test_renames_found_later_reach_the_sync_runs_journal(tmp_path):
    with Journal.open(tmp_path) as journal:
        journal.create_run("R1", "sync", "", {"group_map": {"a": "a-v2"}}, {})
        journal.add_renames("R1", {"b": "b-v2"})
        run = journal.run("R1")
        assert run.settings["group_map"] == {"a": "a-v2", "b": "b-v2"}
        assert run.to_json()["renamed"] == {"a": "a-v2", "b": "b-v2"}
