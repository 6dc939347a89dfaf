"""Who is live in a Kafka group, and which partitions they hold, for either rebalance protocol.

A classic group (consumers with `group.protocol=classic`, every release) tells its members and their
assignments in DescribeGroups. A `consumer`-type group (KIP-848, `group.protocol=consumer`, Kafka
4.0+) is answered there as Dead with no members, or GROUP_ID_NOT_FOUND: its members and
assignments come from ConsumerGroupDescribe (wire/consumer_groups.py). ListGroups v5 tells the type;
a group Kafka lists whose classic answer is empty is asked again with ConsumerGroupDescribe where
the broker has it, so that no release's listing reads a live group as idle.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka.errors as Errors
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from migrate.kafka import _compat as lib
from migrate.kafka.compat import BrokerFeatures, Call, _direct, describe_groups
from migrate.kafka.values import Key
from migrate.kafka.wire import consumer_groups

log = logging.getLogger(__name__)
CONSUMER_TYPE = "consumer"   # ListGroups v5's group_type of a KIP-848 group
IDLE_STATES = frozenset({"Empty", "Dead"})   # states without members; any other means live


@dataclass(frozen=True)
class Members:
    """A group's live side: its state, member count, the partitions assigned to its members (each
    with the member holding it), and which protocol told it ("classic": DescribeGroups,
    "consumer": ConsumerGroupDescribe)."""

    state: str | None
    count: int
    assigned: Mapping[Key, str] = field(default_factory=dict)
    protocol: str = "classic"

    @property
    def live(self) -> bool:
        return self.count > 0 or (self.state is not None and self.state not in IDLE_STATES)


def describe(admin: KafkaAdminClient, features: BrokerFeatures, groups: Sequence[str],
             types: dict[str, str | None] | None = None,
             call: Call = _direct) -> dict[str, Members]:
    """Members of each of `groups` Kafka knows (a group it does not know is left out).

    `types`: ListGroups' group_type per group, where the broker gave one (v5, Kafka 4.0+).
    """
    types = types or {}
    consumer = [g for g in groups if types.get(g) == CONSUMER_TYPE]
    classic = [g for g in groups if types.get(g) != CONSUMER_TYPE]
    out: dict[str, Members] = {}
    if classic:
        described = describe_groups(admin, features, classic, call)
        for g, d in described.items():
            out[g] = _classic(g, d)
        # Listed without a type (ListGroups before v5) but empty in the classic answer: a
        # KIP-848 group reads so; ask the broker that knows them.
        consumer += [g for g in classic if g in out and not out[g].count
                     and types.get(g) is None and _has_describe(features)]
    if consumer and _has_describe(features):
        for g, m in consumer_describe(admin, features, consumer, call).items():
            if m is not None or g not in out:
                out[g] = m if m is not None else Members("Dead", 0, protocol=CONSUMER_TYPE)
    return out


def _has_describe(features: BrokerFeatures) -> bool:
    return consumer_groups.API_KEY in features.api_versions


def _classic(group: str, described: dict[str, Any]) -> Members:
    members = described.get("members") or []
    assigned: dict[Key, str] = {}
    if described.get("protocol_type") == "consumer":
        for member in members:
            try:
                for key in _assignment(member.get("member_assignment")):
                    assigned.setdefault(key, member.get("member_id") or "")
            except (struct.error, UnicodeDecodeError, TypeError, ValueError) as exc:
                log.warning("group %s: member %s: unreadable assignment: %s", group,
                            member.get("member_id"), exc)
    return Members(described.get("group_state"), len(members), assigned)


def _assignment(value) -> list[Key]:
    """A member_assignment as kafka-python leaves it: raw bytes, or decoded by it."""
    if value is None:
        return []
    if isinstance(value, (bytes, bytearray, memoryview)):
        return consumer_groups.classic_assignment(bytes(value))
    if hasattr(value, "partitions"):
        return [(tp.topic, tp.partition) for tp in value.partitions()]
    topics = value.get("assigned_partitions") if isinstance(value, dict) else None
    return [(t["topic"], p) for t in topics or [] for p in t["partitions"]]


def consumer_describe(admin: KafkaAdminClient, features: BrokerFeatures, groups: Sequence[str],
                      call: Call = _direct) -> dict[str, Members | None]:
    """ConsumerGroupDescribe of `groups`: Members, or None for a group that is not a `consumer`
    group (NOT_A_CONSUMER_GROUP). Another error is raised as Kafka's (retriable ones retried by
    `call`, after forgetting the coordinators that may have moved)."""
    def ask() -> dict[str, Members | None]:
        try:
            answers = lib.send_to_coordinators(admin, groups, consumer_groups.DescribeRequest)
            return {g.group_id: _described(g) for answer in answers for g in answer.value}
        except KafkaError as exc:
            if getattr(exc, "retriable", False):
                lib.forget_coordinators(admin, groups)
            raise

    return features.call("ConsumerGroupDescribe",
                         lambda: call("describe consumer groups", ask))


# Not a `consumer` group: none of that name, or a broker that lists the API but runs without the
# new group coordinator (Kafka 3.7-3.9 in ZooKeeper mode answers each group UNSUPPORTED_VERSION).
NOT_A_CONSUMER_GROUP = (Errors.GroupIdNotFoundError.errno, Errors.UnsupportedVersionError.errno)


def _described(g: consumer_groups.DescribedGroup) -> Members | None:
    if g.error_code in NOT_A_CONSUMER_GROUP:
        return None
    if g.error_code:
        raise Errors.for_code(g.error_code)(f"ConsumerGroupDescribe of group {g.group_id}: "
                                            f"{g.error_message}")
    assigned: dict[Key, str] = {}
    for m in g.members:
        for key in m.assigned:
            assigned.setdefault(key, m.member_id)
    return Members(g.state, len(g.members), assigned, CONSUMER_TYPE)
