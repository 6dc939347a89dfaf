"""Which of ready-for-kraft's DIFFERS findings zk2kafka made itself, read from the journal.

A value zk2kafka wrote to Kafka that differs from ZooKeeper's has two stories: ZooKeeper moved
after the write (something still commits there), or the run meant Kafka to differ (`--out-of-range
clamp`, `--on-conflict kafka|max` with `--no-zk-write`, a translation by MirrorMaker 2's offset
syncs) and ZooKeeper was left as it was. The journal tells them apart: the run recorded the
znode's mzxid as its scan read it; when the znode still has it, ZooKeeper has not moved since.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from migrate.journal.authorship import named_run
from migrate.journal.journal import Journal
from migrate.ready.rules import KafkaGroup, Verdict

# The options of a run that make Kafka's value differ from ZooKeeper's on purpose, as flags.
POLICIES = (("out_of_range", "--out-of-range", ("clamp", "commit")),
            ("on_conflict", "--on-conflict", ("kafka", "max")),
            ("translate_via_mm2", "--translate-via-mm2", None),
            ("no_zk_write", "--no-zk-write", None))


def own_differences(journal: Journal | None, verdicts: Iterable[Verdict],
                    rows: Iterable[Mapping[str, Any]],
                    kafka: Mapping[str, KafkaGroup]) -> dict[str, list[str]]:
    """Per group with DIFFERS findings, those zk2kafka's own run made, each as
    "topic-p: run R committed Kafka M while ZooKeeper held N, unchanged since (--policy ...)"."""
    differing = {v.group for v in verdicts if v.differs}
    if journal is None or not differing:
        return {}
    out: dict[str, list[str]] = {}
    for row in rows:
        group, key = row["group"], (row["topic"], row["partition"])
        held = kafka.get(group, KafkaGroup()).offsets.get(key)
        if group not in differing or held is None or held[0] == row["offset"]:
            continue
        run = named_run(held[1])
        found = journal.run(run) if run else None
        if found is None:
            continue
        wrote = next((p for p in journal.partitions(run, group)
                      if (p.topic, p.partition) == key and p.offset == held[0]
                      and p.zk_path == row["path"]), None)
        if wrote is not None and wrote.zk_mzxid is not None and wrote.zk_mzxid == row["mzxid"]:
            out.setdefault(group, []).append(
                f"{key[0]}-{key[1]}: run {run} committed Kafka {held[0]} while ZooKeeper held "
                f"{row['offset']}, unchanged since ({_policies(found.settings)})")
    return out


def _policies(settings: Mapping[str, Any]) -> str:
    shown = []
    for name, flag, values in POLICIES:
        value = settings.get(name)
        if values is None and value:
            shown.append(flag if value is True else f"{flag} {value}")
        elif values is not None and value in values:
            shown.append(f"{flag} {value}")
    return " ".join(shown) or "its own policies"
