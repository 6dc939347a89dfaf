"""The words both report pages share (status meanings, the run's facts, retention, counts), so
report.md and report.html say the same thing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from migrate.diff import schema as s
from migrate.durations import hours_text
from migrate.group_map import flags_text
from migrate.options import flag

MEANING = {
    s.MIGRATE: "Kafka has no committed offset; ZooKeeper's is valid: commit it",
    s.IN_SYNC: "Kafka already holds ZooKeeper's offset: nothing to do",
    s.TAKEN_OVER: "Kafka's offset was committed by a new consumer after ZooKeeper's last write "
                  "(a consumer group's, beyond --clock-margin): nothing to move",
    s.CONFLICT: "Kafka holds a different offset, not shown to be a new consumer's (the reason "
                "says who committed it and when): per --on-conflict",
    s.BELOW_LOG_START: "ZooKeeper offset below the log start (data deleted): per --out-of-range",
    s.ABOVE_LOG_END: "ZooKeeper offset above the log end: per --out-of-range",
    s.UNKNOWN_PARTITION: "topic or partition does not exist in Kafka: skipped",
    s.TOPIC_NOT_AUTHORIZED: "Kafka would not describe the topic to zk2kafka (no Describe on it): "
                            "not shown to be gone; grant the permission the reason names",
    s.MALFORMED: "znode value is not a non-negative 64-bit integer: skipped",
    s.UNREADABLE: "znode could not be read (NoAuth, vanished): skipped",
    s.GROUP_ACTIVE_KAFKA: "the Kafka group has live members: skipped (not covered by them unless "
                          "assigned to one)",
    s.GROUP_ACTIVE_ZK: "old consumers still registered in ZooKeeper: skipped",
    s.KAFKA_ONLY: "an offset in Kafka and none in ZooKeeper: informational",
    s.UNTRANSLATABLE: "no MirrorMaker 2 offset sync at or below the ZooKeeper offset "
                      "(older than the first sync, or no sync for the partition): skipped",
    s.TOPIC_RECREATED: "ZooKeeper's offset was last written before its topic was created (deleted "
                       "and created again since): it counts messages of the old topic: skipped",
}
ZK_TITLE = "ZooKeeper offsets the plan moves, or would"
ZK_HEADER = ("group", "topic", "partition", "ZooKeeper", "Kafka", "set to", "ZooKeeper's side")
NO_OFFSET_TITLE = "Partitions with no offset anywhere"
NO_OFFSET_HEADER = ("group", "topic", "partitions", "messages in the log",
                    "a new consumer (auto.offset.reset)")
NEW_CONSUMER = "earliest reads them; latest skips them; none fails to start"


def zk_changes(sm: dict[str, Any]) -> list[str]:
    """What the plan does to ZooKeeper's offsets, in a line or two: every row keeps its own, or
    how many are set forwards and backwards, and how many are not planned because they would be."""
    changes = sm.get("zk_changes") or {}
    moved = {c: changes.get(c, 0) for c in (s.ZK_FORWARD, s.ZK_BACKWARD)}
    blocked = changes.get(s.ZK_BLOCKED, 0)
    if sm.get("inputs", {}).get("no_zk_write"):
        lines = ["ZooKeeper: not written (--no-zk-write): every old consumer keeps its offset"]
    elif any(moved.values()):
        lines = [f"ZooKeeper: {moved[s.ZK_FORWARD]:,} row(s) set forwards, "
                 f"{moved[s.ZK_BACKWARD]:,} backwards (--rewrite-zk-offsets); every other row "
                 "keeps the old consumer's offset"]
    else:
        lines = ["ZooKeeper: every row keeps the old consumer's offset"]
    if blocked:
        lines.append(f"not planned: {blocked:,} row(s) would set an old consumer's ZooKeeper "
                     "offset away from its own (the reason says which way); --rewrite-zk-offsets "
                     "writes them there too, --no-zk-write commits them to Kafka alone")
    return lines


def no_offset(sm: dict[str, Any]) -> list[str]:
    """The partitions of the groups' topics that no offset covers, in a line."""
    found = sm.get("no_offset") or {}
    if not found.get("partitions"):
        return []
    return [f"no offset anywhere: {found['partitions']:,} partition(s) of the topics of "
            f"{found['groups']:,} group(s) ({found['messages']:,} message(s) in their logs): a new "
            f"consumer of the group starts there by its auto.offset.reset: {NEW_CONSUMER}"]


def zk_side(r: dict[str, Any]) -> str:
    """A plan row's ZooKeeper side, in words."""
    change = r["zk_change"]
    before, after = (f"{v:,}" if isinstance(v, int) else "?" for v in (r["zk_offset"],
                                                                        r["zk_planned"]))
    if change == s.ZK_BLOCKED:
        return f"kept: would be set {before} -> {after}; not planned (--rewrite-zk-offsets)"
    if change in (s.ZK_FORWARD, s.ZK_BACKWARD):
        return f"set {before} -> {after} ({change}s)"
    return "kept"


def zk_row(r: dict[str, Any]) -> tuple:
    """A row of ZK_HEADER."""
    return (r["group"], r["topic"], r["partition"], r["zk_offset"], r["kafka_offset"],
            r["zk_planned"], zk_side(r))


def no_offset_count(found: dict[str, Any]) -> str:
    """How many partitions, of how many groups, and where all of them are listed."""
    return (f"{found['partitions']:,} partition(s) of {found['groups']:,} group(s); every one in "
            "no-offset.csv")


def no_offset_row(g: dict[str, Any]) -> tuple:
    """An entry of summary.json's no_offset, as NO_OFFSET_HEADER lists it."""
    shown = ", ".join(map(str, g["partitions"][:20])) + (" ..." if len(g["partitions"]) > 20
                                                         else "")
    return g["group"], g["topic"], shown, g["messages"], NEW_CONSUMER
TRANSLATED_TITLE = "Translated through MirrorMaker 2's offset syncs"
TRANSLATED_HEADER = ("group", "source topic", "target topic", "partition", "ZooKeeper offset",
                     "translated", "re-read at most")


EMPTY_GROUPS_TITLE = "Empty consumer groups: their offsets expire whatever is committed"
GROUPS_ORDER = "most blockers, then most lag, first"


class Fact(NamedTuple):
    """One line of the run's facts at the top of a page."""

    label: str
    text: str


def plan_line(sm: dict[str, Any], quote: str = "") -> list[str]:
    """The plan's identity, for the change ticket, and how to execute exactly this plan."""
    if not sm.get("plan_id"):
        return []
    plan_id = f"{quote}{sm['plan_id']}{quote}"
    mapping = flags_text(sm.get("inputs", {}))   # a renamed plan runs with its mapping
    command = f"{quote}zk2kafka migrate --execute --plan {sm['plan_id']}{mapping}{quote}"
    return [f"Plan {plan_id}: quote it in the change ticket; {command} writes exactly this plan.",
            ""]


def facts(sm: dict[str, Any]) -> list[Fact]:
    """Where the figures come from: when, which stores and releases, and how long it took."""
    inputs, kafka, spark = sm["inputs"], sm["kafka"], sm["spark"]
    cluster = kafka.get("cluster_id") or "unknown"
    return [Fact("created", sm["created"]),
            Fact("ZooKeeper", zookeeper_side(inputs)),
            Fact("Kafka", f"{inputs.get('bootstrap_server')} (cluster {cluster}; "
                          f"{kafka['groups_in_kafka']:,} groups, "
                          f"{kafka['active_groups']:,} active)"),
            Fact("broker release", _broker(kafka)),
            *_translation(inputs.get("translation"), sm.get("redelivery")),
            Fact("retention", _retention(sm["retention"])),
            Fact("Spark", f"{spark['master']}: start {spark['startup_seconds']:.1f}s, "
                          f"diff {spark['diff_seconds']:.1f}s"),
            Fact("versions", ", ".join(f"{k} {v}" for k, v in sm["versions"].items()))]


def zookeeper_side(inputs: dict[str, Any]) -> str:
    """Where a plan's ZooKeeper side came from: the ensemble it read, or the snapshot, read when
    and by which command, and what that means for liveness and ZooKeeper's writes."""
    side = inputs.get("zookeeper_side")
    if not side:   # a plan of an older zk2kafka
        return f"{inputs.get('zookeeper')} (root {inputs.get('zk_root')})"
    read = (f"{side['source']} (root {side['zk_root']}), read at {side['read_at']} "
            f"by {side['read_by']}")
    if side["from"] != "snapshot":
        return read
    copy = " from a copy of its data directory" if side["kind"] == "data directory" else ""
    return (f"the snapshot {side['snapshot']}: {read}{copy}; {side['liveness']}; "
            f"{side['zk_write']}")


def _translation(translation: dict[str, Any] | None,
                 redelivery: dict[str, int] | None) -> list[Fact]:
    if not translation:
        return []
    again = [] if redelivery is None else [Fact("redelivery", (
        f"the planned commits let the groups read at most {redelivery['reread_at_most']:,} "
        f"messages a second time, at most {redelivery['widest_window']:,} on one partition"))]
    return [Fact("MirrorMaker 2", (
        f"offsets translated from source alias {translation['source_alias']} "
        f"({translation['replication_policy']} replication policy) through "
        f"{translation['syncs']:,} offset syncs of {translation['synced_partitions']:,} "
        f"partitions in {translation['syncs_topic']} on "
        f"{translation['offset_syncs_bootstrap_server']}; ZooKeeper is not written")), *again]


def translated_row(r: dict[str, Any]) -> tuple:
    """A translated row as TRANSLATED_HEADER lists it."""
    return (r["group"], r["upstream_topic"], r["topic"], r["partition"], r["upstream_offset"],
            r["zk_offset"], r["redelivery_window"])


def _broker(kafka: dict[str, Any]) -> str:
    version = kafka.get("broker_version")
    if not version:
        return "unknown (the broker's ApiVersions answer matched no known release)"
    source = kafka.get("broker_version_source") or "inferred from its ApiVersions answer"
    return f"Kafka {version}, {source}"


def _retention(retention: dict[str, Any]) -> str:
    """The retention the broker reported, or why it could not and what its release's default
    is; and the clock."""
    minutes, default = retention.get("minutes"), retention.get("release_default_minutes")
    why = retention.get("unknown_reason")
    if minutes is not None:
        text = f"offsets.retention.minutes={minutes:,} (read from the broker)"
    elif default is not None:
        text = (f"offsets.retention.minutes unknown: {why or 'the broker did not say'}; "
                f"Kafka {retention.get('broker_version')}'s default is {default:,}")
    else:
        text = "offsets.retention.minutes unknown" + (f": {why}" if why else "")
    return f"{text}; offsets expire {retention['expiry']}" if retention.get("expiry") else text


def empty_groups(sm: dict[str, Any]) -> list[dict[str, Any]]:
    """The Empty consumer groups the retention preflight found: their offsets can expire."""
    return sm.get("retention", {}).get("empty_consumer_groups") or []


def within(g: dict[str, Any]) -> str:
    minutes = g.get("expires_within_minutes")
    return "unknown" if minutes is None else f"{minutes:,} minutes of becoming Empty"


def time_left(g: dict[str, Any]) -> str:
    if g.get("time_left_seconds") is not None:
        return hours_text(g["time_left_seconds"])
    return f"unknown: {g.get('time_left_unknown') or 'the broker does not say'}"


def shown(count: int, total: int) -> str:
    """How much of a bounded table is on the page."""
    return f"{total:,}" if count >= total else f"first {count:,} of {total:,}"


def statuses(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n:,}" for name, n in counts.items())


def policies(given: dict[str, Any]) -> list[tuple[str, str]]:
    """The plan's policies in the words of their flags, as an operator types them:
    (`--on-conflict`, `skip`), (`--allow-live-zk-consumers`, `no`)."""
    def word(value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        return "none" if value is None else str(value)

    return [(flag(name), word(value)) for name, value in given.items()]


RENAMED_SHOWN = 20   # renamed groups the terminal lists


def renamed(mapping: dict | None) -> list[str]:
    """The groups a mapping renames, as `old -> new` (none: no line, the output as it was)."""
    if mapping is None:
        return []
    renamed = list(mapping["renamed"].items())
    lines = [f"renamed: {len(renamed):,} group(s) judged against a Kafka group of another name"
             + (":" if renamed else " (no rule matched a selected group)")]
    lines += [f"  {old} -> {new}" for old, new in renamed[:RENAMED_SHOWN]]
    if len(renamed) > RENAMED_SHOWN:
        lines.append(f"  ... and {len(renamed) - RENAMED_SHOWN:,} more (summary.json "
                     "inputs.group_map.renamed)")
    return lines


def clocks(found: dict | None) -> list[str]:
    """The takeover rule's clocks, as the verdicts rest on them (summary.json's `clocks`): the
    margin in force and what measured it; nothing where the run judged no takeover."""
    if not found:
        return []

    def ahead(bound: dict | None, which: str) -> list[str]:
        seconds = round(bound["seconds"], 1) + 0.0 if bound else None   # no -0.0
        return [f"{which} {seconds:+.1f}s ({bound['by']})"] if bound else []

    said = []
    for broker, b in sorted(found["kafka"].items()):
        of_host = ahead(b.get("ahead_at_least"), "at least") + ahead(b.get("ahead_at_most"),
                                                                     "at most")
        of_zk = ahead(b.get("ahead_of_zookeeper_at_least"), "at least")
        said.append(f"broker {broker} ahead by " + " and ".join(of_host or ["?"])
                    + (f", and of ZooKeeper's clock by {of_zk[0]}" if of_zk else ""))
    zk = found["zookeeper"]
    lo, hi = zk.get("ahead_at_least"), zk.get("ahead_at_most")
    of_host = ahead(lo, "at least") + ahead(hi, "at most")
    if lo and hi and lo["by"] == hi["by"]:   # both by the clock probe: said once
        of_host = [f"at least {round(lo['seconds'], 1) + 0.0:+.1f}s and at most "
                   f"{round(hi['seconds'], 1) + 0.0:+.1f}s ({lo['by']})"]
    if of_host:
        said.append("ZooKeeper ahead by " + " and ".join(of_host))
    if zk.get("not_measured_from_above"):
        said.append(f"ZooKeeper's clock not bounded from above: {zk['not_measured_from_above']}, "
                    f"so a ZooKeeper behind is not seen")
    tail = ("; nothing bounded Kafka's lead from above: the margin is assumed on that side"
            if found["assumed"] else "")
    return [f"clocks: the takeover's margin {found['effective_margin']:g}s (--clock-margin "
            f"{found['margin']:g}s widened by Kafka's lead over ZooKeeper, as measured against "
            f"this host's clock: {'; '.join(said) or 'nothing measured'}){tail}"]


def plan_clocks(sm: dict[str, Any]) -> list[str]:
    """A plan's clocks line, where it judged a takeover (rows CONFLICT or TAKEN_OVER)."""
    counts = sm.get("counts") or {}
    return clocks(sm.get("clocks")) if counts.get("CONFLICT") or counts.get("TAKEN_OVER") else []
