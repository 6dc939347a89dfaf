"""Private names of kafka-python and kazoo are reached through one `_compat` module per library, checked at import."""

from __future__ import annotations

import importlib
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient
from kazoo.client import KazooClient

from migrate.errors import LibraryMismatch
from migrate.kafka import _compat as kafka_compat
from migrate.zk import _compat as zk_compat

PACKAGE = Path(__file__).resolve().parents[2] / "migrate"
PRIVATE = re.compile(r"\._manager\b|\._coordinators\b|(?<!self)\._call\(|_prefix_root|\._async_\w+"
                     r"|\._get_cluster_metadata|[\"']_(manager|coordinators)[\"']")


@pytest.mark.parametrize("module, cls, name, library", [
    (kafka_compat, KafkaAdminClient, "_find_coordinator_id", "kafka-python"),
    (zk_compat, KazooClient, "_call", "kazoo"),
])
def test_a_renamed_private_name_fails_at_import_with_one_line_naming_the_release(monkeypatch, module, cls, name,
                                                                                 library):
    owner = next(c for c in cls.__mro__ if name in vars(c))   # kafka-python defines it on a mixin
    monkeypatch.delattr(owner, name)
    with pytest.raises(LibraryMismatch) as info:
        importlib.reload(module)
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 1
    assert message.startswith(f"{library} {version(library)} lacks {cls.__name__}.{name}, which zk2kafka uses")
    assert f"tested with {library} {module.TESTED}" in message
    monkeypatch.undo()
    importlib.reload(module)   # the installed release has every name again


def test_the_installed_releases_have_every_name_and_are_the_tested_minor():
    for module, library in ((kafka_compat, "kafka-python"), (zk_compat, "kazoo")):
        importlib.reload(module)
        assert version(library).startswith(module.TESTED + ".")


def test_no_module_outside_the_compat_modules_touches_a_private_library_name():
    users = [f"{p.relative_to(PACKAGE)}:{n}" for p in PACKAGE.rglob("*.py") if p.name != "_compat.py"
             for n, line in enumerate(p.read_text("utf-8").splitlines(), 1) if PRIVATE.search(line)]
    assert not users, f"private kafka-python or kazoo names outside _compat.py: {users}"


def test_forgetting_a_coordinator_drops_those_groups_only():
    from types import SimpleNamespace as NS

    from kafka.protocol.metadata.find_coordinator import CoordinatorType

    cache = {(CoordinatorType.GROUP, "a"): 1, (CoordinatorType.GROUP, "b"): 1, (CoordinatorType.TRANSACTION, "a"): 2}
    admin = NS(_manager=NS(cluster=NS(_coordinators=cache)))
    kafka_compat.forget_coordinators(admin, ["a", "gone"])
    assert cache == {(CoordinatorType.GROUP, "b"): 1, (CoordinatorType.TRANSACTION, "a"): 2}


def test_the_polling_handler_answers_as_kazoos_select():
    import socket

    from kazoo.handlers.utils import selector_select

    from migrate.zk.client import PollingHandler

    select = PollingHandler().select
    ours, theirs = socket.socketpair()
    try:
        for rlist, wlist in (([ours], []), ([], [ours]), ([ours, theirs], [])):
            assert select(rlist, wlist, [], 0) == selector_select(rlist, wlist, [], 0)
        theirs.send(b"x")   # readable
        assert select([ours], [], [], 0) == selector_select([ours], [], [], 0) == ([ours], [], [])
        theirs.close()      # hung up: readable for a reader, writable for a writer
        for rlist, wlist in (([ours], []), ([], [ours])):
            assert select(rlist, wlist, [], 0) == selector_select(rlist, wlist, [], 0)
        with pytest.raises(ValueError):
            select([ours], [], [], -1)
    finally:
        ours.close()
