"""Follower's dry run is an explicit flag: a writing Follower without a journal is refused. ZooKeeper's clock is
measured again at each re-scan."""

from __future__ import annotations

import pytest

from migrate.sync.decide import Takeover
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


def test_each_rescan_measures_zookeepers_clock_again_before_it_reads():
    probes = []

    class Listing:
        def groups(self):
            probes.append("listed")
            return []

    f = Follower(None, Listing(), None, dict, dict, None, "R1", "", 30.0, None, dry_run=True, status_every=None,
                 takeover=Takeover(probe=lambda: probes.append("probed")))
    for _ in range(2):
        f.sweep = None
        f.begin_rescan(0.0)
    assert probes == ["probed", "listed", "probed", "listed"]
