"""When sync's retention clock reads __consumer_offsets again (migrate/sync/expiry_clock.py): soon
after a followed group comes or changes state, as the follower's `version` tells it; not after a
read that ran out of its budget, which waits the full interval. On a clock of its own: the reading
loop's waits advance it, and a read takes the seconds it is given."""

from __future__ import annotations

import pytest

from migrate.sync import expiry_clock
from migrate.sync.expiry_clock import BUDGET, EVERY, GAP, Expiry, ExpiryClock


class Clock:
    """time.monotonic for the loop, and the loop's halt: each wait is a second; the loop ends
    once `until` is passed."""

    def __init__(self, until: float):
        self.now, self.until = 1000.0, until

    def monotonic(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.now += 1.0
        return self.now > self.until


def reads(monkeypatch, took: float, change_at: float, until: float) -> list[float]:
    """The times the loop began a read, each read taking `took`; the groups' version changes
    `change_at` seconds after the start."""
    clock = Clock(1000.0 + until)
    began = []

    def read(admin, features, followed, kafka_names):
        began.append(clock.now - 1000.0)
        clock.now += took
        return Expiry(), None

    monkeypatch.setattr(expiry_clock, "read", read)
    monkeypatch.setattr(expiry_clock.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(expiry_clock.compat.BrokerFeatures, "of", staticmethod(lambda admin: None))
    clock_of_groups = ExpiryClock(None, lambda: {"g": None}, str, str, per_group=True,
                                  version=lambda: clock.now - 1000.0 >= change_at)
    clock_of_groups.halt = clock
    clock_of_groups._loop()
    return began


def test_a_state_change_reads_again_soon(monkeypatch):
    began = reads(monkeypatch, took=2.0, change_at=100.0, until=300.0)
    assert began[0] == 1.0
    assert len(began) == 2 and 100.0 <= began[1] <= 100.0 + GAP + 1


@pytest.mark.parametrize("took", [BUDGET, BUDGET + 5])
def test_after_a_read_that_ran_out_of_budget_a_state_change_waits_the_interval(monkeypatch, took):
    began = reads(monkeypatch, took=took, change_at=100.0, until=EVERY + 200.0)
    assert began[0] == 1.0
    assert len(began) == 2 and began[1] >= 1.0 + took + EVERY


def test_without_a_change_the_next_read_waits_the_interval(monkeypatch):
    began = reads(monkeypatch, took=2.0, change_at=1e9, until=EVERY + 100.0)
    assert len(began) == 2 and began[1] >= 3.0 + EVERY
