"""What zk2kafka wrote into Kafka, as the journal holds it: per Kafka group, the last value a
migrate or sync run of this state dir committed to each partition, and the group and run that
journaled it."""

from __future__ import annotations

from typing import NamedTuple

from migrate.journal.journal import COMMITTED, DONE, VERIFIED, Journal
from migrate.kafka.values import Key
from migrate.zk.reader import Selection

# The runs whose commits are zk2kafka's values in Kafka (a rollback puts back others' values).
WRITING_KINDS = ("migrate", "sync")


class Written(NamedTuple):
    """An offset a run committed: the value, the run, and the group as the run journaled it (its
    ZooKeeper name, which a --map-group run committed under another Kafka name)."""

    offset: int
    run: str
    journal_group: str


def written(journal: Journal, selection: Selection) -> dict[str, dict[Key, Written]]:
    """Kafka group -> (topic, partition) -> the last value zk2kafka committed there, of the
    groups and topics `selection` keeps (groups matched by their journaled, ZooKeeper, name).

    Only groups a run journaled as written (committed or verified) count; a run a rollback put
    back whole does not. A renamed group is told under the Kafka name its run's mapping gave it.
    """
    out: dict[str, dict[Key, Written]] = {}
    for run in journal.runs():   # oldest first: a later run's value is the one Kafka holds
        if run.kind not in WRITING_KINDS or _rolled_back(journal, run.run_id):
            continue
        renamed = run.settings.get("group_map") or {}
        names = [g.name for g in journal.groups(run.run_id)
                 if g.state in (COMMITTED, VERIFIED) and selection.group(g.name)]
        for name, parts in journal.partitions_of(run.run_id, names).items():
            held = out.setdefault(renamed.get(name, name), {})
            for p in parts:
                if selection.topic(p.topic):
                    held[p.key] = Written(p.offset, run.run_id, name)
    return {group: keys for group, keys in out.items() if keys}


def _rolled_back(journal: Journal, run_id: str) -> bool:
    rollback = journal.rollback_of(run_id)
    return rollback is not None and rollback.state == DONE
