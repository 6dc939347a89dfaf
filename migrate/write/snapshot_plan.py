"""The settings a run of a plan writes with. A plan read from a snapshot (`--zk-snapshot`,
migrate/zk/side.py) writes Kafka alone, and checks the ZooKeeper it was read from again when it
still answers: a znode moved since the snapshot is not written over, as with a reviewed plan.
One made with `--dual-commit` is the dual commit's, run as a live diff's plan is: it writes the
ensemble the snapshot was read from (--zookeeper, compared by identity as any plan's stores are),
each znode conditioned on the version and mzxid the snapshot read, and only while the snapshot
is not older than --max-plan-age."""

from __future__ import annotations

import dataclasses
from typing import Any

from migrate import stores
from migrate.errors import ConfigError, MigrateError
from migrate.settings import Settings
from migrate.zk.side import SNAPSHOT, too_old


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
    if inputs.get("dual_commit"):
        return _dual_commit(dataclasses.replace(settings, **own_root), side)
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


def _dual_commit(settings: Settings, side: dict[str, Any]) -> tuple[Settings, str]:
    """A snapshot's plan made with --dual-commit: written as a live diff's plan is, into the
    --zookeeper given (its identity is the plan's stores', compared as any plan's). Raises
    ConfigError without --zookeeper, MigrateError for a snapshot older than --max-plan-age."""
    if settings.zookeeper is None:
        raise ConfigError("the plan keeps ZooKeeper in agreement (--dual-commit, from the "
                          f"snapshot {side.get('snapshot')}): give the ensemble it was read from "
                          f"({side.get('zookeeper')}) with --zookeeper")
    old = too_old(side, settings.max_plan_age)
    if old:
        raise MigrateError(f"the plan keeps ZooKeeper in agreement (--dual-commit), and {old}; "
                           "nothing was written")
    return settings, (f"the dual commit (--dual-commit) into ZooKeeper {settings.zookeeper}, "
                      "each znode at the version and mzxid the snapshot read: a group with one "
                      "moved since is not written, or put back")
