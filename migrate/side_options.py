"""The checks of the options that choose a command's ZooKeeper side and whether a run writes it: a
live ensemble (`--zookeeper`), a copy of a server's data directory (`--zookeeper-data`), a
snapshot zk2kafka wrote (`--zk-snapshot`), written by the dual commit only where `--dual-commit`
names it (migrate/zk/side.py). Each takes the resolved settings (migrate/settings.py) and raises
one ConfigError.
"""

from __future__ import annotations

from typing import Any

from migrate.errors import ConfigError


def check_data_dir(s: Any) -> None:
    """--zookeeper-data: a source of its own, apart from a live ensemble."""
    if s.zookeeper_data is None:
        raise ConfigError("--zookeeper-data-log goes with --zookeeper-data DIR: "
                          "the dataDir whose logs it holds")
    if s.zookeeper is not None:
        raise ConfigError("--zookeeper and --zookeeper-data go apart: read a live ensemble or "
                          "a copy of a server's files, not both (either may come from "
                          "ZK2KAFKA_ZOOKEEPER, ZK2KAFKA_ZOOKEEPER_DATA or the --config file)")


def check_dual_commit(s: Any) -> None:
    """--dual-commit: ZooKeeper written, so not with what leaves it alone, and chosen where a plan
    is made (a plan or a run goes on by the road it recorded)."""
    if s.no_zk_write:
        why = "--translate-via-mm2 implies --no-zk-write" if s.translate_via_mm2 else \
            "--no-zk-write leaves ZooKeeper as it is"
        raise ConfigError(f"--dual-commit keeps ZooKeeper in agreement, and {why}: pass one of "
                          "them")
    for name, given, what in (("--plan", s.plan, "plan"), ("--resume", s.resume, "run")):
        if given:
            raise ConfigError(f"--dual-commit and {name} go apart: {name} takes the road its "
                              f"{what} recorded")


def check_snapshot(s: Any) -> None:
    """--zk-snapshot: a snapshot is read, never written (unless --dual-commit names the dual
    commit), and a run goes on by its own journal."""
    if s.rewrite_zk_offsets and not s.dual_commit:
        raise ConfigError("--rewrite-zk-offsets writes ZooKeeper, and the ZooKeeper side is a "
                          "snapshot (--zk-snapshot): there is no ZooKeeper to write, unless "
                          "--dual-commit writes the ensemble it was read from")
    for name, given in (("--plan", s.plan), ("--resume", s.resume), ("--run", s.run)):
        if given:
            raise ConfigError(f"--zk-snapshot and {name} go apart: {name} reads the ZooKeeper "
                              "side its plan or run recorded")
