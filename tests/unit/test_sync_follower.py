"""Follower's dry run is an explicit flag: a writing Follower without a journal is refused."""

from __future__ import annotations

import pytest

from migrate.sync.follower import Follower


def follower(journal, dry_run):
    return Follower(None, None, None, dict, dict, journal, "R1", "zk2kafka sync R1", 30.0, None,
                    dry_run=dry_run)


def test_a_writing_follower_needs_a_journal():
    with pytest.raises(ValueError, match="a sync that writes needs a journal"):
        follower(None, dry_run=False)
    assert follower(None, dry_run=True).dry_run


def test_dry_run_has_no_default():
    with pytest.raises(TypeError, match="dry_run"):
        Follower(None, None, None, dict, dict, None, "R1", "", 30.0, None)
