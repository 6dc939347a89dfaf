"""What ready-for-kraft reads of `__consumer_offsets` and of the clocks: the one reader
(migrate/kafka/offsets_log/) following the groups it judges, read while the watch waits, and
Kafka's lead over ZooKeeper measured from what the run read (migrate/kafka/clocks.py)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from kafka.errors import KafkaError

from migrate import group_map
from migrate.errors import MigrateError
from migrate.kafka import takeover
from migrate.kafka.clocks import Clocks, Lead
from migrate.kafka.offsets_log import OffsetsLog, Unreadable
from migrate.kafka.takeover import NO_RECORD
from migrate.ready.rules import KafkaGroup
from migrate.zk.brokers import Registration
from migrate.zk.clock import Probe

log = logging.getLogger(__name__)
READ_BUDGET = 300.0   # seconds reading __consumer_offsets may take in all (docs/performance.md)


def follow(offsets_log: OffsetsLog, mapping: group_map.GroupMap, groups: set[str],
           elsewhere: set[str]) -> str | None:
    """Follow the Kafka groups of `groups` (through the mapping) and the groups found elsewhere
    in the ensemble; why __consumer_offsets cannot be read (or None)."""
    try:
        renamed = mapping.resolve(sorted(groups))
    except MigrateError:
        renamed = {}   # refused again, and said, once ZooKeeper is read a second time
    try:
        offsets_log.follow({renamed.get(g, g) for g in groups} | elsewhere)
    except Unreadable as exc:
        return str(exc)
    return None


def mark(offsets_log: OffsetsLog) -> str | None:
    """The watch's start in __consumer_offsets; why it could not be marked (or None)."""
    try:
        offsets_log.mark_watch()
    except (Unreadable, KafkaError, MigrateError) as exc:
        return f"could not mark the watch's start in __consumer_offsets: {exc}"
    return None


def groups_found(searched) -> set[str]:
    """The groups the search of the ensemble found elsewhere."""
    return {r["group"] for tree in searched.trees for r in tree.rows}


class Reading:
    """__consumer_offsets read on a thread of its own while the watch waits (the read is mostly
    I/O and the watch idle), then finished on the caller's for what the watch added."""

    def __init__(self, offsets_log: OffsetsLog, budget: float = READ_BUDGET):
        self.reader, self.budget = offsets_log, budget
        self.started = time.monotonic()
        self.why: str | None = None
        self.thread = threading.Thread(target=self._read, name="zk2kafka-offsets-log",
                                       daemon=True)
        self.thread.start()

    def _read(self) -> None:
        self.why = self.reader.read(self.budget)

    def finish(self, groups: Iterable[str]) -> str | None:
        """Why the read could not be finished (or None), once `groups` are followed too."""
        self.thread.join()
        try:
            self.reader.follow(groups)
        except Unreadable as exc:
            return str(exc)
        left = self.budget - (time.monotonic() - self.started)
        return self.reader.read(max(left, 1.0))


def with_log(kafka: dict[str, KafkaGroup], offsets_log: OffsetsLog, why: str | None) -> None:
    """Each Kafka group's records of __consumer_offsets, or why they are unknown."""
    for name, held in kafka.items():
        held.log = offsets_log.groups.get(name) if why is None else None
        held.clocks_unknown = why if why is not None or held.log is not None else NO_RECORD


def agreed(kafka: dict[str, KafkaGroup], offsets_log: OffsetsLog,
           ask: Callable[[list[str]], Mapping[str, object]], budget: float = 30.0) -> str | None:
    """Where the newest commit record read of a value holds another value than Kafka answered
    (a consumer committed between the Kafka snapshot and the end of the read), Kafka's values of
    those groups asked again (`ask`) and the log read on (takeover.until_agreed): the
    value is judged as it stands now, by the record that wrote it (a partition assigned to a
    live member too: only its commits show it consuming). Why the read could not go on, or None
    (Kafka not answering again leaves the snapshot's values, judged as they are)."""
    def disagreeing() -> list[str]:
        return [name for name, held in kafka.items()
                if takeover.disagree(offsets_log.groups.get(name), held.offsets, held.offsets)]

    def ask_again(moved: list[str]) -> bool:
        log.info("ready-for-kraft: %d group(s) committed while __consumer_offsets was read; "
                 "their values are asked again and judged as they stand (the Kafka snapshot "
                 "keeps the values it read)", len(moved))
        try:
            again = ask(moved)
        except (KafkaError, MigrateError) as exc:
            log.warning("ready-for-kraft: could not ask Kafka's values again (%s): judged on "
                        "the snapshot's", exc)
            return False
        for name in moved:
            now = again.get(name)
            if isinstance(now, Mapping):   # else refused: judged on the snapshot's value
                held = kafka[name]
                held.offsets.update({k: tuple(v) for k, v in now.items() if k in held.offsets})
        return True

    return takeover.until_agreed(disagreeing, ask_again, lambda: offsets_log.read(budget))


def lead(clocks: Clocks, registered: list[Registration], final: list[dict],
         read_done: float, probed: Probe | str) -> Lead:
    """Kafka's lead over ZooKeeper, from what this run read: the records of __consumer_offsets,
    the brokers' registrations, the clock probe (or why there was none), and the znodes of the
    final read (each written before that read came back: the latest, written during the watch,
    bounds ZooKeeper's clock from below)."""
    for r in registered:
        clocks.broker_registered(r.broker, r.timestamp_ms, r.ctime_ms)
    clocks.zk_probed(probed)
    latest = max((row["mtime_s"] for row in final if row["mtime_s"] is not None), default=None)
    if latest is not None:
        clocks.zk_seen(int(latest * 1000), read_done)
    return clocks.lead()
