"""The one reader of `__consumer_offsets`, as the group coordinator reads it.

The route of a record: `reader` fetches a partition's raw bytes (wire/fetch.py), at a cursor per
partition, split over processes by `shares` on a large first read; `records` slices the bytes into
batches and keeps the records of the followed groups; `partition` applies them in log order,
transactions held until their markers; `schema` says what each key and value mean; `group` keeps
what they say of one group: who was a member at each commit, the record behind each value, the
commits made while zk2kafka watched. `followed` is the long-lived reader `sync` keeps for its whole
run; `snapshot_rows` is what the Kafka snapshot takes from one read; `kept` is the members' commits
once seen, kept in the state dir for when the log cleaner has removed the records that showed them.

The takeover rule that weighs this evidence is migrate/kafka/takeover.py, the clocks it measures
migrate/kafka/clocks.py.
"""

from migrate.kafka.offsets_log.followed import BUSY, FollowedLog
from migrate.kafka.offsets_log.group import NO_MEMBER, Commit, GroupLog, Membership, Watched
from migrate.kafka.offsets_log.reader import OFFSETS_TOPIC, OffsetsLog, Unreadable, partition_for

__all__ = ["BUSY", "NO_MEMBER", "OFFSETS_TOPIC", "Commit", "FollowedLog", "GroupLog", "Membership",
           "OffsetsLog", "Unreadable", "Watched", "partition_for"]
