"""ready-for-kraft's verdict, group by group: what a cluster that leaves ZooKeeper would leave
behind. Pure: the stores were read before (check.py).

KIP-866 copies topics, configs, ACLs and the like from ZooKeeper, and nothing under /consumers.
A group is ready when each of its ZooKeeper offsets is in Kafka with the same value, or its
partition was taken over by a new consumer in Kafka, on the evidence migrate/kafka/takeover.py
asks for: committed by a consumer after ZooKeeper's last write of it (a live member holding a
partition counts only when it shows it consumes: its commit, or its commits during the watch). A
live group takes over only those partitions, not every one the old group ever had: any other
offset of it must be in Kafka. Any other value Kafka holds is
DIFFERS, with both values, both times and who wrote Kafka's. And when no old consumer is
registered (ids/) or owns a partition (owners/); and when none of its offset znodes moved during
the watch (the quiet rule, migrate/zk/quiet.py). An offset whose topic or partition Kafka no
longer has is left behind, but names nothing to keep: it is listed, and blocks nothing; one whose
topic Kafka would not describe to zk2kafka is not gone, only not shown: it blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from migrate.kafka import takeover
from migrate.kafka.offsets_log.kept import Kept
from migrate.kafka.offsets_log.group import GroupLog
from migrate.kafka.values import Key
from migrate.zk import layouts
from migrate.zk.quiet import Moved, seconds, when

# The ways a group can fail the check, in the order the table shows them.
PROBLEMS = ("not_in_kafka", "registered", "written", "differs", "unreadable")
HEADINGS = {"not_in_kafka": "NOT-IN-KAFKA", "registered": "OLD-CONSUMER", "written": "WRITTEN",
            "differs": "DIFFERS", "unreadable": "UNREADABLE"}


@dataclass
class KafkaGroup:
    """What Kafka holds for a group: its state (None: Kafka has no such group), its members, the
    partitions assigned to them (each with the member holding it), its committed offsets with
    their metadata, and why it would not
    show them (None: it did); its protocol type, and what __consumer_offsets shows of it
    (kafka/offsets_log/: who committed each value, and when) or why that could not be read."""

    state: str | None = None
    offsets: dict[Key, tuple[int, str | None]] = field(default_factory=dict)
    refused: str | None = None
    members: int = 0
    assigned: dict[Key, str] = field(default_factory=dict)
    protocol_type: str | None = None
    log: GroupLog | None = None
    clocks_unknown: str | None = None


@dataclass(frozen=True)
class Evidence:
    """What a takeover is judged with besides the stores' values: whether zk2kafka watched the
    groups (commits during the watch then count, zk2kafka's own never: `own` are the custom
    --metadata its runs commit with), and the clock margin in force (the configured one widened
    by the measured lead of Kafka's clock over ZooKeeper's, migrate/kafka/clocks.py); `kept`: the
    member commits the state dir keeps (offsets_log/kept.py)."""

    watching: bool = False
    margin: float = takeover.MARGIN
    own: frozenset[str] = frozenset()
    kept: Kept | None = None


@dataclass
class Verdict:
    """One group's findings; `ready` when it has none of PROBLEMS."""

    group: str
    offsets: int = 0              # partitions with an offset in ZooKeeper
    in_kafka: int = 0             # of them, in Kafka with the same value
    taken_over: int = 0           # of them, taken over by a new consumer in Kafka
    consumers: int = 0            # old consumers registered under ids/
    owned: int = 0                # partitions owned under owners/
    kafka_state: str | None = None
    kafka_members: int = 0        # members of the Kafka group (either rebalance protocol)
    # "topic-p: ZooKeeper N, Kafka M (committed by a new consumer ..., after ZooKeeper's last
    # write ...)"
    taken_over_offsets: list[str] = field(default_factory=list)
    not_in_kafka: list[str] = field(default_factory=list)   # "topic-p (ZooKeeper N)"
    registered: list[str] = field(default_factory=list)     # "N in ids/", "N partitions owned"
    written: list[str] = field(default_factory=list)        # "path at HH:MM:SSZ"
    differs: list[str] = field(default_factory=list)        # "topic-p: ZooKeeper N, Kafka M (...)"
    foreign: int = 0              # of the differs, values zk2kafka did not write
    unreadable: list[str] = field(default_factory=list)     # "topic-p: STATUS: why"
    topic_gone: list[str] = field(default_factory=list)     # "topic-p (ZooKeeper N)": not blocking

    @property
    def ready(self) -> bool:
        return not any(getattr(self, p) for p in PROBLEMS)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ready": self.ready}


def judge(rows: Iterable[Mapping[str, Any]], kafka: Mapping[str, KafkaGroup],
          partitions: set[Key], moved: Iterable[Moved],
          liveness: Mapping[str, tuple[int, int]],
          zk2kafka_wrote: Callable[[str, Key, int, str | None], bool],
          evidence: Evidence = Evidence(),
          refused: Mapping[str, str] | None = None) -> list[Verdict]:
    """A Verdict per group, by name.

    `rows`: ZooKeeper's offset rows as the reader gives them (group, topic, partition, offset,
    status, reason, mtime, layout, path); `kafka`: per group; `partitions`: every (topic,
    partition) Kafka has; `moved`: offset znodes written during the watch; `liveness`: per
    group, (old consumers in ids/, partitions owned under owners/); `zk2kafka_wrote(group, key,
    offset, metadata)`: whether zk2kafka wrote that value to Kafka; `evidence`: the watch and the
    clock margin a takeover is judged with; `refused`: the topics Kafka would not describe to
    zk2kafka, with the permission to grant (never taken for gone: they block).
    """
    by_partition: dict[str, dict[Key, list[Mapping[str, Any]]]] = {}
    paths: dict[str, str] = {}
    for row in rows:
        by_partition.setdefault(row["group"], {}).setdefault((row["topic"], row["partition"]),
                                                             []).append(row)
        paths[row["path"]] = row["group"]
    verdicts = {name: Verdict(name) for name in set(by_partition) | set(liveness)}
    for name, found in by_partition.items():
        _offsets(verdicts[name], found, kafka.get(name, KafkaGroup()), partitions, zk2kafka_wrote,
                 evidence, refused or {})
    for name, (consumers, owned) in liveness.items():
        verdicts[name].consumers, verdicts[name].owned = consumers, owned
        if consumers:
            verdicts[name].registered.append(f"{consumers} in ids/")
        if owned:
            verdicts[name].registered.append(f"{owned} partition(s) owned under owners/")
    for m in sorted(moved, key=lambda m: m.path):
        if m.path in paths:
            verdicts[paths[m.path]].written.append(f"{m.path} at {when(m.at)}")
    return [verdicts[name] for name in sorted(verdicts)]


def _offsets(verdict: Verdict, found: dict[Key, list[Mapping[str, Any]]], held: KafkaGroup,
             partitions: set[Key], zk2kafka_wrote: Callable[..., bool],
             evidence: Evidence, refused: Mapping[str, str]) -> None:
    verdict.kafka_state, verdict.kafka_members = held.state, held.members
    for key, rows in sorted(found.items(), key=lambda item: (str(item[0][0]), item[0][1] or -1)):
        row = layouts.pick(rows)   # the row that stands for the partition, as diff and sync pick
        name = f"{key[0]}-{key[1]}" if key[1] is not None else row["path"]
        verdict.offsets += 1
        if row["status"] != layouts.OK or key[0] is None or key[1] is None:
            verdict.unreadable.append(f"{name}: {row['status']}: {row['reason']}")
            continue
        zk = row["offset"]
        if key[0] in refused:
            verdict.unreadable.append(f"{name}: TOPIC_NOT_AUTHORIZED: {refused[key[0]]}")
        elif held.refused is not None:
            verdict.unreadable.append(f"{name}: Kafka would not show the group's offsets: "
                                      f"{held.refused}")
        elif key in held.offsets and held.offsets[key][0] == zk:
            verdict.in_kafka += 1
        elif key not in held.offsets and key in held.assigned:
            # A live member holds it and has committed nothing of it: not shown consuming.
            verdict.differs.append(f"{name}: ZooKeeper {zk}, Kafka none ("
                                   f"{takeover.holding(held.assigned[key], held.log, None)})")
        elif key not in held.offsets:
            if key in partitions:
                verdict.not_in_kafka.append(f"{name} (ZooKeeper {zk})")
            else:
                verdict.topic_gone.append(f"{name} (ZooKeeper {zk})")
        else:
            offset, metadata = held.offsets[key]
            finding = takeover.judge(
                zk_written=seconds(row["mtime"]),
                seen=takeover.seen(held.log, key, offset, held.clocks_unknown, evidence.own,
                                  evidence.kept),
                margin=evidence.margin, watching=evidence.watching,
                zk2kafka=metadata if zk2kafka_wrote(verdict.group, key, offset, metadata) else None)
            if key in held.assigned and not finding.taken_over:
                finding = finding._replace(
                    words=takeover.holding(held.assigned[key], held.log, finding))
            line = f"{name}: ZooKeeper {zk}, Kafka {offset} ({finding.words})"
            if finding.taken_over:
                _taken_over(verdict, line)
            else:
                verdict.differs.append(line)
                verdict.foreign += finding.writer != takeover.ZK2KAFKA


def _taken_over(verdict: Verdict, line: str) -> None:
    verdict.taken_over += 1
    verdict.taken_over_offsets.append(line)
