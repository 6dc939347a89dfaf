"""sync's Authorship: which Kafka values zk2kafka wrote, told by metadata and a real journal file."""

from __future__ import annotations

from migrate.journal.journal import Journal
from migrate.diff.plan import Planned
from migrate.journal.authorship import Authorship

K = ("orders", 0)


def journal_with(tmp_path, runs):
    """A journal in which each (run, kind, custom metadata or None, {group: {key: offset}}) wrote its offsets."""
    journal = Journal.open(tmp_path)
    for run_id, kind, metadata, written in runs:
        journal.create_run(run_id, kind, "", {"metadata": metadata}, {})
        journal.record_mirrored_many(run_id, {
            group: [(Planned(t, p, o, f"/consumers/{group}/offsets/{t}/{p}", 1, "standard"), None)
                    for (t, p), o in offsets.items()]
            for group, offsets in written.items()})
    return journal


def test_default_metadata_is_ours_only_when_the_journal_holds_the_named_run(tmp_path):
    with journal_with(tmp_path, [("R1", "sync", None, {"g": {K: 100}}), ("M1", "migrate", None, {})]) as journal:
        who = Authorship(journal, "zk2kafka sync R2")
        assert who.foreign("g", {K: (100, "zk2kafka sync R1")}, [K], {}) == []
        assert who.foreign("g", {K: (7, "zk2kafka migrate M1")}, [K], {}) == []      # any offset the run wrote
        assert who.foreign("g", {K: (100, "zk2kafka sync NOPE")}, [K], {}) == [K]    # names no run of ours
        assert who.foreign("g", {K: (100, "zk2kafka migrate R1")}, [K], {}) == [K]   # R1 was a sync run
        assert who.foreign("g", {K: (5000, "")}, [K], {}) == [K]                     # a consumer's commit


def test_custom_metadata_is_ours_only_for_the_offset_a_run_journaled(tmp_path):
    with journal_with(tmp_path, [("R1", "sync", "", {"g": {K: 100}})]) as journal:
        who = Authorship(journal, "")
        assert who.foreign("g", {K: (100, "")}, [K], {}) == []
        assert who.foreign("g", {K: (5000, "")}, [K], {}) == [K]       # same metadata, an offset no run wrote
        assert who.foreign("h", {K: (100, "")}, [K], {}) == [K]        # another group
        assert who.foreign("g", {K: (5000, "")}, [K], {K: 5000}) == []  # this run's own commit, not yet journaled


def test_a_run_started_after_the_journal_was_read_is_found(tmp_path):
    with journal_with(tmp_path, [("R1", "sync", None, {})]) as journal:
        who = Authorship(journal, "zk2kafka sync R1")
        assert who.foreign("g", {K: (1, "zk2kafka sync R1")}, [K], {}) == []
        journal.create_run("R2", "migrate", "", {"metadata": None}, {})
        assert who.foreign("g", {K: (1, "zk2kafka migrate R2")}, [K], {}) == []


def test_without_a_journal_only_the_default_form_counts(tmp_path):
    who = Authorship(None, "zk2kafka sync R9")
    assert who.foreign("g", {K: (1, "zk2kafka migrate X")}, [K], {}) == []
    assert who.foreign("g", {K: (1, "")}, [K], {}) == [K]
    assert who.foreign("g", {K: (1, "")}, [], {}) == []   # only the keys asked about
