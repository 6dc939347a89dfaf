"""Putting a failed group back: what this run wrote of it, in both stores, returned to the values
journaled before it wrote, then both stores read back; the words say what was read, not what was
meant (an offset someone else moved since is theirs: it is left as it is, and named)."""

from __future__ import annotations

from migrate.errors import MigrateError
from migrate.journal import journal as j
from migrate.write.kafka_half import KafkaHalf, committed_offset, shown


class PutBackFailed(MigrateError):
    """A store refused the put-back, or reads back another value than the one put back."""

    def __init__(self, group: str, reason: str):
        super().__init__(f"group {group}: {reason}")
        self.group, self.reason = group, reason


def put_back(group: str, parts: list[j.Partition], kafka: KafkaHalf, zk) -> str:
    """Put back what this run wrote of `group` (`zk`: the dual commit's ZooKeeper half); what both
    stores hold then, read back, in words.

    Raises PutBackFailed when Kafka refuses or reads back wrong, ZkChanged when ZooKeeper does, or
    what an outage raises.
    """
    wrong = kafka.put_back(group, parts)
    if wrong is not None:
        raise PutBackFailed(group, wrong)
    zk.put_back(group, parts)
    held = kafka.writer.committed(group)
    kafka_other = [f"{p.topic}-{p.partition} holds {shown(committed_offset(held.get(p.key)))} "
                   f"({shown(p.before_kafka_offset)} before the run)"
                   for p in parts if committed_offset(held.get(p.key)) != p.before_kafka_offset]
    zk_other = zk.not_as_before(parts)
    if not zk.writes:
        zk_said = "ZooKeeper was not written"
    elif zk_other:
        zk_said = "ZooKeeper: " + _few(zk_other)
    else:
        zk_said = "ZooKeeper holds its values from before the run"
    if not kafka_other and not zk_other:
        if zk.writes:
            return "Kafka and ZooKeeper hold their values from before the run (read back)"
        return f"Kafka holds its values from before the run; {zk_said} (read back)"
    kafka_said = ("Kafka: " + _few(kafka_other) if kafka_other
                  else "Kafka holds its values from before the run")
    return (f"{kafka_said}; {zk_said} (read back; what differs, someone else moved since: it is "
            "left as it is)")


def _few(items: list[str]) -> str:
    return ", ".join(items[:3]) + (" ..." if len(items) > 3 else "")
