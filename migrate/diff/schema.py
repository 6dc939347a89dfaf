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
MALFORMED = "MALFORMED"
UNREADABLE = "UNREADABLE"
GROUP_ACTIVE_KAFKA = "GROUP_ACTIVE_KAFKA"
GROUP_ACTIVE_ZK = "GROUP_ACTIVE_ZK"
KAFKA_ONLY = "KAFKA_ONLY"
# --translate-via-mm2 only: a readable offset no MirrorMaker 2 offset sync maps onto the target
# (older than its partition's first sync, or a partition without syncs).
UNTRANSLATABLE = "UNTRANSLATABLE"

# One status per row: the first that applies, in this order. A value that cannot be
# read or parsed says nothing else; a partition Kafka lacks cannot be committed; offsets
# that already agree need nothing even in a live group; a live group blocks any write;
# only then is the value judged against the log and against Kafka's own offset. An offset that
# could not be translated has no value on the target to judge, like a malformed one.
PRECEDENCE = (UNREADABLE, MALFORMED, UNTRANSLATABLE, UNKNOWN_PARTITION, IN_SYNC,
              GROUP_ACTIVE_KAFKA, GROUP_ACTIVE_ZK,
              BELOW_LOG_START, ABOVE_LOG_END, CONFLICT, MIGRATE)
STATUSES = PRECEDENCE + (KAFKA_ONLY,)

BLOCKERS = frozenset({CONFLICT, BELOW_LOG_START, ABOVE_LOG_END, GROUP_ACTIVE_KAFKA, GROUP_ACTIVE_ZK,
                      MALFORMED, UNREADABLE, UNTRANSLATABLE})

# The plan's row schema, order and reading live in migrate/diff/plan.py; the diff writes what it
# defines.
from migrate.diff.plan import (BATCH_ROWS, COMMIT, NOTHING, PLAN_ORDER, PLAN_SCHEMA,  # noqa: E402,F401
                               SKIP, TRANSLATION_SCHEMA, plan_schema)
