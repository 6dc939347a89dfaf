"""How each command paces Python's cyclic collector (migrate/heap.py)."""

import gc

import pytest

from migrate import commands, heap
from migrate.settings import Settings


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


@pytest.mark.parametrize("command, expected", [
    ("diff", heap.RARELY), ("ready-for-kraft", heap.RARELY), ("migrate", heap.RARELY),
    ("sync", (700, 10, 10)), ("renew", (700, 10, 10)),
])
def test_a_command_that_runs_once_collects_rarely_and_a_service_keeps_the_defaults(
        monkeypatch, thresholds, command, expected):
    gc.set_threshold(700, 10, 10)
    seen = []
    name = command.replace("-", "_")
    monkeypatch.setattr(commands, name, lambda settings: seen.append(gc.get_threshold()))
    commands.run(command, Settings(), {})
    assert seen == [expected]
    assert gc.get_threshold() == (700, 10, 10)   # as they were: the next command in this process
