"""The small values every part of zk2kafka's Kafka side speaks in: a partition's key, what Kafka
holds for it, and the commit metadata that names the zk2kafka run that wrote a value."""

from __future__ import annotations

import re
from typing import NamedTuple

Key = tuple[str, int]   # (topic, partition)


class Committed(NamedTuple):
    """What Kafka holds for one partition of a group."""

    offset: int
    metadata: str | None


def label(key: Key) -> str:
    """How a partition is named in reasons and logs: `topic-partition`."""
    topic, partition = key
    return f"{topic}-{partition}"


def run_metadata(kind: str, run_id: str) -> str:
    """The commit metadata a run of `kind` writes unless --metadata says otherwise: "zk2kafka
    migrate <run>", "zk2kafka sync <run>", "zk2kafka renew <run>"."""
    return f"zk2kafka {kind} {run_id}"


# The default metadata of the runs whose values are read back as zk2kafka's by the run they name.
NAMES_A_RUN = re.compile(r"zk2kafka (migrate|sync) (\S+)")


def named_run(metadata: str | None) -> str | None:
    """The run a commit's metadata names in zk2kafka's default form ("zk2kafka migrate <run>"),
    or None."""
    named = NAMES_A_RUN.fullmatch(metadata or "")
    return named.group(2) if named else None
