"""Who wrote an offset Kafka holds: zk2kafka (a run in the journal) or someone else, a new
consumer that took the group over. Follow mode writes only over zk2kafka's own values.
"""

from __future__ import annotations

from migrate.journal import journal as j
from migrate.kafka.takeover import Finding
from migrate.kafka.values import NAMES_A_RUN, Key, label, named_run, run_metadata

__all__ = ["Authorship", "differs", "named_run", "other_run", "taken_over"]

Held = dict[Key, tuple[int, str]]   # what Kafka holds for a group: key -> (offset, metadata)


class Authorship:
    """Tells whether an offset Kafka holds is one zk2kafka wrote, from its commit metadata and
    the journal.

    The default metadata names the run ("zk2kafka sync <run>", "zk2kafka migrate <run>"): the
    value is zk2kafka's when the journal holds that run. A custom --metadata names no run and
    may be what consumers send as well (""), so the value is zk2kafka's only where a run
    journaled with that metadata committed exactly that offset for that partition. Without a
    journal (a dry run, which writes nothing) the default form alone counts, and a custom one
    does not.
    """

    def __init__(self, journal: j.Journal | None, metadata: str):
        self.journal, self.metadata = journal, metadata
        self._runs: dict[str, str] | None = None   # writing run -> the metadata it commits with

    def foreign(self, group: str, held: Held, keys: list[Key],
                mirrored: dict[Key, int]) -> list[Key]:
        """Those of `keys` for which Kafka holds a value (in `held`) that zk2kafka did not write."""
        doubtful = [k for k in keys if k in held and not self._this_run(held[k], mirrored.get(k))]
        if not doubtful:
            return []
        written: dict[str, dict[Key, int]] = {}   # run -> its journaled offsets: read once per call
        out = [k for k in doubtful if not self._ours(group, k, held[k], written)]
        if out and self.journal is not None:
            # A run started since they were read may be the writer: read them once more.
            self._runs = None
            out = [k for k in out if not self._ours(group, k, held[k], written)]
        return out

    def other_runs(self, held: Held, keys: list[Key]) -> dict[Key, str]:
        """Those of `keys` whose value in `held` names, in its metadata, a zk2kafka run this
        state dir's journal does not hold (another --state-dir's): key -> the metadata."""
        if self.journal is None:
            return {}
        runs = self._writing_runs()
        out = {}
        for key in keys:
            metadata = held[key][1] if key in held else None
            named = NAMES_A_RUN.fullmatch(metadata or "")
            if named is not None and named.group(2) not in runs:
                out[key] = metadata
        return out

    def custom_metadata(self) -> frozenset[str]:
        """The custom --metadata the journal's runs commit with: a commit during a watch that
        carries one is zk2kafka's (takeover.seen's `own`), as is one naming a run."""
        if self.journal is None:
            return frozenset()
        return frozenset(m for m in self._writing_runs().values() if named_run(m) is None)

    def _this_run(self, value: tuple[int, str], mirrored: int | None) -> bool:
        offset, metadata = value
        return metadata == self.metadata and mirrored == offset

    def _ours(self, group: str, key: Key, value: tuple[int, str | None],
              written: dict[str, dict[Key, int]]) -> bool:
        offset, metadata = value
        named = NAMES_A_RUN.fullmatch(metadata or "")
        if self.journal is None:
            return named is not None
        runs = self._writing_runs()
        if named is not None and runs.get(named.group(2)) == metadata:
            return True
        for run_id, written_with in runs.items():
            if written_with == (metadata or ""):
                if run_id not in written:
                    parts = self.journal.partitions(run_id, group)
                    written[run_id] = {p.key: p.offset for p in parts}
                if written[run_id].get(key) == offset:
                    return True
        return False

    def _writing_runs(self) -> dict[str, str]:
        if self._runs is None:
            self._runs = {}
            for run in self.journal.runs():
                if run.kind in ("migrate", "sync"):
                    custom = run.settings.get("metadata")
                    default = run_metadata(run.kind, run.run_id)
                    self._runs[run.run_id] = custom if custom is not None else default
        return self._runs


def taken_over(foreign: list[Key], held: Held, wanted: dict[Key, int],
               findings: dict[Key, Finding]) -> str:
    """Why sync leaves a group to a new consumer: the values Kafka holds that zk2kafka did not
    write, and the evidence that a new consumer committed them (migrate/kafka/takeover.py)."""
    shown = "; ".join(f"{label(k)} = {held[k][0]} (ZooKeeper {wanted.get(k)}; "
                      f"{findings[k].words})" for k in foreign[:3])
    return f"taken over: Kafka holds {shown}, so the group is left to the new consumer"


def differs(foreign: list[Key], held: Held, wanted: dict[Key, int],
            findings: dict[Key, Finding]) -> str:
    """Why sync leaves alone a group whose Kafka values zk2kafka did not write and no new consumer
    is shown to have committed: writing over them would move someone's offset, and following them
    would drop ZooKeeper's."""
    shown = "; ".join(f"{label(k)} = {held[k][0]} (ZooKeeper {wanted.get(k)}; "
                      f"{findings[k].words})" for k in foreign[:3] if not findings[k].taken_over)
    return (f"differs: Kafka holds {shown}: not written by zk2kafka, and no new consumer is shown "
            "to own it; sync writes only over values zk2kafka wrote, so the group is left alone: "
            "decide which value its new consumers start from (runbooks/troubleshooting.md)")


def other_run(keys: list[Key], held: Held, wanted: dict[Key, int]) -> str:
    """Why sync leaves a group to another zk2kafka run: the values that run wrote."""
    shown = ", ".join(f"{label(k)} = {held[k][0]} ({held[k][1]}; ZooKeeper {wanted.get(k)})"
                      for k in keys[:3])
    return (f"written by another zk2kafka run: Kafka holds {shown}, a run this state dir's"
            " journal does not hold (another --state-dir); sync writes only over values of the"
            " runs it knows, so the group is left alone: follow it with that run's --state-dir")
