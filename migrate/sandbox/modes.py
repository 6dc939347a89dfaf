"""What a sandbox home holds: the release that wrote its data, and the mode it is in (ZooKeeper,
a KIP-866 phase, KRaft)."""

from __future__ import annotations

from pathlib import Path

from migrate.errors import SandboxError

# Which release wrote the data under a sandbox's home; kept after `down`.
VERSION_FILE = "kafka-version"
# The modes a sandbox is in: `sandbox kraft-migrate` moves it from the first to the last, phase by
# phase (`--to`, PHASES); MIGRATING while a step is under way, and after one failed. A home
# migrated to KRaft keeps MIGRATED_FILE after `down`, so that `up` does not start ZooKeeper mode
# over it.
ZOOKEEPER, MIGRATING, MIGRATION, KRAFT_BROKERS, KRAFT = (
    "zookeeper", "migrating", "migration", "kraft-brokers", "kraft")
MODES = {ZOOKEEPER: "ZooKeeper mode",
         MIGRATING: "half-way through a KIP-866 step (under way, or it failed)",
         MIGRATION: "migration mode (KIP-866, phase migration): the KRaft controller has migrated "
                    "the metadata; the broker runs in migration mode and the controller writes "
                    "every change back to ZooKeeper (dual-write); not yet KRaft brokers",
         KRAFT_BROKERS: "KRaft brokers, not finalized (KIP-866, phase kraft): the broker runs as "
                        "a KRaft broker, the controller still writes ZooKeeper (dual-write); "
                        "Kafka's guide can still revert to ZooKeeper mode",
         KRAFT: "KRaft mode, migrated in place from ZooKeeper (KIP-866) and finalized"}
# `kraft-migrate --to PHASE`, in the order they come: the mode each leaves the sandbox in.
PHASES = {"migration": MIGRATION, "kraft": KRAFT_BROKERS, "finalized": KRAFT}
MIGRATED_FILE = "migrated-to-kraft"


def phase_of(mode: str) -> str | None:
    """The `kraft-migrate --to` phase that leaves a sandbox in `mode`; None for ZooKeeper mode
    and for a step under way or failed."""
    return next((name for name, reached in PHASES.items() if reached == mode), None)


def recorded_version(home: Path) -> str | None:
    """The release whose data a sandbox home holds (written by its first start); None if fresh."""
    try:
        return (Path(home) / VERSION_FILE).read_text().strip() or None
    except OSError:
        return None


def refuse_other_release(home: Path, version: str) -> None:
    """Raise SandboxError when `home` holds another release's data than `version`'s.

    No downgrades, no mixes.
    """
    written = recorded_version(home)
    if written is not None and written != version:
        raise SandboxError(f"{home} holds the data of a Kafka {written} sandbox, not {version}; "
                           f"use another --state-dir, or remove {home} to start clean")
