"""The diff's contract: statuses, their precedence and what blocks.

The plan's rows (PLAN_SCHEMA, in migrate/diff/plan.py) carry them; every layer after
the diff (writer, reports, verify) reads those rows and never recomputes a status.
"""

from __future__ import annotations

MIGRATE = "MIGRATE"
IN_SYNC = "IN_SYNC"
CONFLICT = "CONFLICT"
BELOW_LOG_START = "BELOW_LOG_START"
ABOVE_LOG_END = "ABOVE_LOG_END"
UNKNOWN_PARTITION = "UNKNOWN_PARTITION"
# Kafka would not describe the topic to zk2kafka's principal: not gone, not shown (a blocker, naming
# the permission to grant).
TOPIC_NOT_AUTHORIZED = "TOPIC_NOT_AUTHORIZED"
MALFORMED = "MALFORMED"
UNREADABLE = "UNREADABLE"
GROUP_ACTIVE_KAFKA = "GROUP_ACTIVE_KAFKA"
GROUP_ACTIVE_ZK = "GROUP_ACTIVE_ZK"
KAFKA_ONLY = "KAFKA_ONLY"
# --translate-via-mm2 only: a readable offset no MirrorMaker 2 offset sync maps onto the target
# (older than its partition's first sync, or a partition without syncs).
UNTRANSLATABLE = "UNTRANSLATABLE"
# Kafka's value of the partition was committed by a new consumer after ZooKeeper's last write of it
# (the takeover rule, migrate/kafka/takeover.py): nothing to move, nothing blocked.
TAKEN_OVER = "TAKEN_OVER"
# The offset znode was last written before its topic was created (ZooKeeper's
# /brokers/topics/<topic>): it counts messages of a topic deleted since, not of this one.
TOPIC_RECREATED = "TOPIC_RECREATED"

# One status per row: the first that applies, in this order. A value that cannot be
# read or parsed says nothing else; a topic Kafka would not describe is neither there nor gone; a
# partition Kafka lacks cannot be committed; an offset of a
# topic deleted since means nothing in the topic of that name now; an offset outside the log is
# out of range even where Kafka holds the same (a consumer starting there resets itself);
# offsets that agree inside the log need nothing even in a live group; a live group blocks any
# write; only then is the value judged against Kafka's own offset: a new consumer's, on evidence,
# or another. An offset that could not be translated has no value on the target to judge, like a
# malformed one.
PRECEDENCE = (UNREADABLE, MALFORMED, UNTRANSLATABLE, TOPIC_NOT_AUTHORIZED, UNKNOWN_PARTITION,
              TOPIC_RECREATED,
              BELOW_LOG_START, ABOVE_LOG_END, IN_SYNC, GROUP_ACTIVE_KAFKA, GROUP_ACTIVE_ZK,
              TAKEN_OVER, CONFLICT, MIGRATE)
STATUSES = PRECEDENCE + (KAFKA_ONLY,)

BLOCKERS = frozenset({CONFLICT, BELOW_LOG_START, ABOVE_LOG_END, GROUP_ACTIVE_KAFKA, GROUP_ACTIVE_ZK,
                      MALFORMED, UNREADABLE, UNTRANSLATABLE, TOPIC_RECREATED, TOPIC_NOT_AUTHORIZED})

# What a row does to ZooKeeper's offset (the plan's `zk_change`): it keeps its offset (rows the
# run does not write there, and rows written with the offset ZooKeeper holds already), is set
# forwards or backwards (--rewrite-zk-offsets), or would be moved and is therefore not planned:
# a move of an old consumer's own offset is never implied by a conflict or range policy.
ZK_UNCHANGED, ZK_FORWARD, ZK_BACKWARD, ZK_BLOCKED = "unchanged", "forward", "backward", "blocked"
ZK_CHANGES = (ZK_UNCHANGED, ZK_FORWARD, ZK_BACKWARD, ZK_BLOCKED)



def blocked_groups(per_group: list[dict], most: int | None = None) -> dict[str, str]:
    """Each group with blocker rows (summary.json's per_group), with why in words: its blocker
    statuses counted and its first blocker row's reason. `most`: the first that many groups."""
    out = {}
    for g in per_group:
        if not g.get("blockers"):
            continue
        if most is not None and len(out) >= most:
            break
        counts = ", ".join(f"{k} {n:,}" for k, n in g["counts"].items() if k in BLOCKERS)
        first = g.get("first_blocker")
        out[g["group"]] = f"{counts}; first: {first}" if first else counts
    return out


# The plan's row schema, order and reading live in migrate/diff/plan.py; the diff writes what it
# defines.
from migrate.diff.plan import (BATCH_ROWS, COMMIT, NOTHING, PLAN_ORDER, PLAN_SCHEMA,  # noqa: E402,F401
                               SKIP, TRANSLATION_SCHEMA, plan_schema)
