"""What a broker can answer (by release), and the workarounds for kafka-python 3.0.x's answers.

zk2kafka supports ZooKeeper-mode brokers from 0.10.2 to 3.9 and KRaft 4.x. Each asks
for different protocol versions, so what the snapshot and the writer send is chosen
from the API versions the broker announces (ApiVersions, Kafka 0.10+), not from what
kafka-python assumes:

| fact                   | asked with                 | where the broker lacks it                |
| ---------------------- | -------------------------- | ---------------------------------------- |
| brokers, cluster id    | DescribeCluster v1+ (3.7+) | Metadata (every release)                 |
| offsets.retention.min. | DescribeConfigs (0.11+)    | unknown; the release default is reported |
| group states           | ListGroups v4+ (2.6+)      | DescribeGroups of every listed group     |
| KIP-848 group members  | ConsumerGroupDescribe 4.0+ | not asked: no such groups (members.py)   |
| many groups' offsets   | one OffsetFetch v8+ (3.0+) | one OffsetFetch per group, pipelined     |
| delete one offset      | OffsetDelete (2.4+)        | refused with a clear reason              |

An answer kafka-python cannot parse is an `UnreadableAnswer` naming the call and the
broker's release, never a bare KeyError. The library's private names this needs are reached
through `migrate/kafka/_compat.py` (which checks them when imported), never directly.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import kafka.errors as Errors
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import KafkaError
from kafka.protocol.api_key import ApiKey

from migrate.errors import MigrateError
from migrate.kafka import _compat as lib
from migrate.kafka.values import Committed, Key
from migrate.kafka.wire.offset_fetch import FetchedGroup, OffsetFetchRequest

T = TypeVar("T")
# Wraps one request, e.g. in a retry policy: call(what, fn) returns fn()'s answer.
Call = Callable[[str, Callable[[], T]], T]


def _direct(what: str, fn: Callable[[], T]) -> T:
    return fn()


# Errors kafka-python raises when an answer does not have the shape it expects (e.g. 3.0.12's
# describe_cluster() pops `endpoint_type`, a DescribeCluster v1 field, from a v0 answer).
_PARSE_ERRORS = (KeyError, AttributeError, TypeError, IndexError, ValueError, struct.error)

# Release defaults of offsets.retention.minutes: 1 day before 2.0, 7 days since (KIP-186).
RETENTION_DEFAULT_BEFORE_2_0 = 1440
RETENTION_DEFAULT_SINCE_2_0 = 10080
HOW_VERSION_IS_KNOWN = ("inferred from the API versions the bootstrap broker announces "
                        "(ApiVersions), with kafka-python's table: "
                        "a release line such as 2.8, not a patch level")


class UnreadableAnswer(MigrateError):
    """kafka-python could not parse a broker's answer; carries the call and the broker's release."""

    def __init__(self, call: str, broker: str, cause: BaseException):
        super().__init__(f"{call}: kafka-python could not read the answer of a Kafka {broker} "
                         f"broker (release from its ApiVersions answer): "
                         f"{type(cause).__name__}: {cause}")
        self.call = call
        self.broker = broker


@dataclass(frozen=True)
class BrokerFeatures:
    """The API versions a broker announced, and the release they imply."""

    version: tuple[int, ...] | None  # kafka-python's inference, e.g. (2, 8) or (0, 10, 2)
    api_versions: dict[int, tuple[int, int]]     # api key -> (min, max) the broker accepts

    @classmethod
    def of(cls, admin: KafkaAdminClient) -> BrokerFeatures:
        """The bootstrap broker's features; kafka-python negotiates with every broker from these."""
        # Set by the bootstrap's ApiVersions exchange (kafka-python 3.0.x keeps it on the private
        # manager).
        data = lib.broker_version_data(admin)
        if data is None:
            return cls(None, {})
        api_versions = {int(k): tuple(v) for k, v in (data.api_versions or {}).items()}
        return cls(tuple(data.broker_version), api_versions)

    @property
    def release(self) -> str:
        return ".".join(map(str, self.version)) if self.version else "unknown"

    def max_version(self, api: ApiKey) -> int | None:
        """The highest version of `api` the broker accepts; None when it does not know the API."""
        found = self.api_versions.get(int(api))
        return None if found is None else found[1]

    def has(self, api: ApiKey, version: int = 0) -> bool:
        top = self.max_version(api)
        return top is not None and top >= version

    def at_least(self, *release: int) -> bool | None:
        """True/False when the release is known, None when not."""
        return None if self.version is None else tuple(self.version) >= release

    @property
    def default_retention_minutes(self) -> int | None:
        """offsets.retention.minutes of this release when nobody changed it."""
        since_2_0 = self.at_least(2, 0)
        if since_2_0 is None:
            return None
        return RETENTION_DEFAULT_SINCE_2_0 if since_2_0 else RETENTION_DEFAULT_BEFORE_2_0

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """fn() (a kafka-python call); an answer it cannot parse becomes UnreadableAnswer."""
        with self.reading(what):
            return fn()

    @contextmanager
    def reading(self, what: str):
        try:
            yield
        except KafkaError:
            raise
        except _PARSE_ERRORS as exc:
            raise UnreadableAnswer(what, self.release, exc) from exc


@dataclass(frozen=True)
class ClusterFacts:
    brokers: list[int]
    cluster_id: str | None
    via: str   # "DescribeCluster vN" or "Metadata"


def describe_cluster(admin: KafkaAdminClient, features: BrokerFeatures) -> ClusterFacts:
    """Broker ids and the cluster id.

    kafka-python 3.0.12's describe_cluster() sends DescribeCluster at the broker's version but
    parses only the v1 answer (Kafka 3.7+): on 2.8-3.6, which answer v0, it raises
    KeyError('endpoint_type'). Below v1 (or where DescribeCluster is missing, before 2.8) the same
    facts come from Metadata, which every release answers.
    """
    if features.has(ApiKey.DescribeCluster, 1):
        answer = features.call("DescribeCluster", admin.describe_cluster)
        return ClusterFacts(sorted(b["broker_id"] for b in answer.get("brokers", [])),
                            answer.get("cluster_id"),
                            f"DescribeCluster v{features.max_version(ApiKey.DescribeCluster)}")
    answer = features.call("Metadata", lambda: lib.cluster_metadata(admin))
    return ClusterFacts(sorted(b["node_id"] for b in answer.get("brokers", [])),
                        answer.get("cluster_id"), "Metadata")


@dataclass(frozen=True)
class BrokerSetting:
    value: str | None
    why_unknown: str | None = None


def broker_setting(admin: KafkaAdminClient, features: BrokerFeatures, broker: int, key: str,
                   call: Call = _direct) -> BrokerSetting:
    """One broker config value, or why it cannot be known (DescribeConfigs is Kafka 0.11+).

    `call` wraps the request (e.g. a retry policy); a refusal (not authorized) is a reason, not an
    error.
    """
    if not features.has(ApiKey.DescribeConfigs):
        return BrokerSetting(None, f"the broker (Kafka {features.release}) has no DescribeConfigs "
                                   f"(Kafka 0.11+)")
    resource = ConfigResource(ConfigResourceType.BROKER, str(broker), [key])
    try:
        configs = features.call("DescribeConfigs", lambda: call(
            "describe broker configs",
            lambda: admin.describe_configs([resource], config_filter="all")))
    except KafkaError as exc:
        return BrokerSetting(None, f"DescribeConfigs of broker {broker} failed: "
                                   f"{type(exc).__name__}: {exc}")
    entry = configs.get("broker", {}).get(str(broker), {}).get(key)
    if not entry or entry.get("value") is None:
        return BrokerSetting(None, f"broker {broker} did not return {key}")
    return BrokerSetting(str(entry["value"]))


def list_groups(admin: KafkaAdminClient, features: BrokerFeatures,
                call: Call = _direct) -> list[dict[str, Any]]:
    """Every group the brokers know: group_id, protocol_type, and group_state.

    ListGroups v4+ (Kafka 2.6+) carries group_state; before 2.6 it is absent and DescribeGroups
    must tell it (see describe_groups).
    """
    return features.call("ListGroups", lambda: call("list groups", admin.list_groups))


def states_in_list(features: BrokerFeatures) -> bool:
    """Whether ListGroups answers carry each group's state (v4, Kafka 2.6+)."""
    return features.has(ApiKey.ListGroups, 4)


def describe_groups(admin: KafkaAdminClient, features: BrokerFeatures, groups: Sequence[str],
                    call: Call = _direct) -> dict[str, dict[str, Any]]:
    """DescribeGroups (every release), one request per coordinator."""
    return features.call("DescribeGroups", lambda: call(
        "describe groups", lambda: admin.describe_groups(list(groups))))


def group_states(admin: KafkaAdminClient, features: BrokerFeatures,
                 call: Call = _direct, chunk: int = 1000) -> dict[str, str]:
    """{group: state} of every group Kafka knows, on any release.

    From ListGroups v4+ (Kafka 2.6+), else DescribeGroups of every listed group (before 2.6
    ListGroups carries no state, and a state of None must not read as "no such group" while
    consumers are live).
    """
    listed = list_groups(admin, features, call)
    if states_in_list(features):
        return {g["group_id"]: g.get("group_state") for g in listed}
    names = [g["group_id"] for g in listed]
    out: dict[str, str] = {}
    for i in range(0, len(names), chunk):
        described = describe_groups(admin, features, names[i:i + chunk], call)
        out.update({g: d.get("group_state") for g, d in described.items()})
    return out


class GroupOffsets(NamedTuple):
    """Committed offsets of many groups, and the groups Kafka refused to show."""

    found: dict[str, dict[Key, Committed]]
    refused: dict[str, KafkaError]  # {group: the error Kafka gave for it}


def offset_fetch_batches(features: BrokerFeatures) -> bool:
    """Whether one OffsetFetch can ask for many groups (v8, Kafka 3.0+, KIP-709)."""
    return features.has(ApiKey.OffsetFetch, 8)


def fetch_group_offsets(admin: KafkaAdminClient, features: BrokerFeatures,
                        groups: Sequence[str]) -> GroupOffsets:
    """Committed offsets of `groups` in one round, on zk2kafka's own codec
    (wire/offset_fetch.py): `found` as {group: {(topic, partition): Committed}}.

    From Kafka 3.0 (OffsetFetch v8) one OffsetFetch per coordinator for its groups; before,
    one per group (v2+ for "all partitions", Kafka 0.10.2+), pipelined on kafka-python's IO loop,
    each with its own answer or error. A group Kafka refuses (its error, or a partition's) is in
    `refused`; a retriable refusal is raised, for the retry policy to send the round again.
    """
    if not groups:
        return GroupOffsets({}, {})
    refused: dict[str, KafkaError] = {}
    fetched: dict[str, FetchedGroup] = {}
    if offset_fetch_batches(features):
        answers = features.call("OffsetFetch", lambda: lib.send_to_coordinators(
            admin, groups, OffsetFetchRequest))
    else:
        by_group, refused = _one_per_group(admin, features, lib.send_to_coordinator(admin),
                                           {g: (g, OffsetFetchRequest([g])) for g in groups})
        answers = list(by_group.values())
    for answer in answers:
        fetched.update(answer.value)
    found: dict = {}
    for group in groups:
        if group in refused:
            continue
        with features.reading("OffsetFetch"):
            got = fetched[group]   # Kafka answers every group asked: a KeyError is unreadable
        if not got.error:
            found[group] = got.offsets
            continue
        where = (f"partition {got.failed_partition[0]}-{got.failed_partition[1]}"
                 if got.failed_partition else f"group '{group}'")
        error = Errors.for_code(got.error)(f"OffsetFetch failed for {where}")
        if getattr(error, "retriable", False):
            raise error
        refused[group] = error
    return GroupOffsets(found, refused)


def _one_per_group(admin: KafkaAdminClient, features: BrokerFeatures, coroutine_fn,
                   calls: dict[str, tuple]) -> tuple[dict[str, Any], dict[str, KafkaError]]:
    """An OffsetFetch per group, pipelined on the IO loop: the answers, and the groups Kafka
    refused; a retriable error is raised."""
    window = max(1, int(admin.config.get("max_in_flight_requests_per_connection", 5)) - 1)
    answers: dict[str, Any] = {}
    refused: dict[str, KafkaError] = {}
    for group, answer in lib.pipelined(admin, coroutine_fn, calls, window).items():
        if isinstance(answer, KafkaError):
            if getattr(answer, "retriable", False):
                raise answer
            refused[group] = answer
        elif isinstance(answer, BaseException):
            with features.reading("OffsetFetch"):
                raise answer
        else:
            answers[group] = answer
    return answers, refused


def can_delete_offsets(features: BrokerFeatures) -> str | None:
    """None when the broker has OffsetDelete (Kafka 2.4+, KIP-496).

    Otherwise why one committed offset cannot be deleted.
    """
    if features.has(ApiKey.OffsetDelete):
        return None
    return (f"the broker (Kafka {features.release}) has no OffsetDelete (Kafka 2.4+): "
            "a single committed offset cannot be removed; it expires after "
            "offsets.retention.minutes (from 1.1 a whole empty group can be deleted with "
            "kafka-consumer-groups --delete)")
