"""The settings a run of a plan writes with. A plan read from a snapshot (`--zk-snapshot`,
migrate/zk/side.py) never writes ZooKeeper, and checks the ZooKeeper it was read from again when it
still answers: a znode moved since the snapshot is not written over, as with a reviewed plan."""

from __future__ import annotations

import dataclasses
from typing import Any

from migrate import stores
from migrate.errors import MigrateError
from migrate.settings import Settings
from migrate.zk.side import SNAPSHOT


def for_writing(settings: Settings, inputs: dict[str, Any]) -> tuple[Settings, str | None]:
    """The settings a run of a plan writes with, and, for a plan read from a snapshot, what it
    checks ZooKeeper against (None for a live plan; a phrase otherwise).

    From a snapshot, ZooKeeper is never written (--no-zk-write); the ZooKeeper it was read from is
    read again if it still answers (the one --zookeeper gives, else the recorded one), so a znode
    moved since is not written over. Without one that answers, Kafka alone is checked.
    Raises MigrateError when a --zookeeper given is another ensemble than the snapshot's.
    """
    side = inputs.get("zookeeper_side") or {}
    if side.get("from") != SNAPSHOT:
        return settings, None
    # The plan's own root unless one is given (a reviewed plan refuses another).
    own_root = {} if "zk_root" in settings.given or settings.path_template else {
        "zk_root": side.get("zk_root") or settings.zk_root}
    settings = dataclasses.replace(settings, no_zk_write=True, **own_root)
    given = settings.zookeeper
    address = given or side.get("zookeeper")
    if address is None:
        return settings, ("ZooKeeper not re-checked: the snapshot was read from a copy of a data "
                          "directory, and no --zookeeper is given")
    probe = dataclasses.replace(settings, zookeeper=address)
    try:
        now = stores.reach(probe.connection, kafka=False)
    except (MigrateError, *stores.OUTAGES) as exc:
        if given:
            raise
        return dataclasses.replace(settings, zookeeper=None), (
            f"ZooKeeper not re-checked: {address} does not answer ({exc}); Kafka alone is checked")
    recorded = stores.Stores.from_json(side.get("stores"))
    differs = stores.differences(recorded, now, {"zookeeper": side.get("zookeeper"),
                                                 "bootstrap_server": settings.bootstrap_server},
                                 probe.connection) if recorded else []
    if differs and not given:
        return dataclasses.replace(settings, zookeeper=None), (
            f"ZooKeeper not re-checked: {address} answers as another ensemble than the "
            f"snapshot's ({'; '.join(differs)})")
    if differs:
        raise MigrateError(f"--zookeeper {address} is not the ZooKeeper the snapshot was read "
                           f"from ({'; '.join(differs)}); nothing was written")
    return probe, (f"re-checked against ZooKeeper {address}: a znode moved since the snapshot "
                   "is not written over")
