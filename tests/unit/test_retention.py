"""The retention preflight per broker release: defaults before 2.0, commit-time expiry before 2.1, and the
Empty consumer groups whose offsets expire whatever is committed from 2.1 (KIP-211)."""

from __future__ import annotations

import pytest

from migrate.diff.retention import retention_preflight
from migrate.kafka.compat import BrokerFeatures


def group(name, state, protocol, planned=1, offsets=2):
    return {"group": name, "group_state": state, "protocol_type": protocol, "planned": planned, "offsets": offsets}


GROUPS = [group("fresh", None, None), group("standalone", "Empty", ""), group("went-empty", "Empty", "consumer"),
          group("in-sync-empty", "Empty", "consumer", planned=0), group("live", "Stable", "consumer", planned=0)]


@pytest.mark.parametrize("version", ["2.1", "2.8", "3.6", "3.9", None])
def test_empty_consumer_groups_are_named_from_kafka_2_1(version):
    out = retention_preflight(GROUPS, 10080, version, None, 10080 if version else None)
    assert [g["group"] for g in out["empty_consumer_groups"]] == ["went-empty", "in-sync-empty"]
    assert all(g["time_left_seconds"] is None and "became Empty" in g["time_left_unknown"]
               for g in out["empty_consumer_groups"])
    assert out["groups_created"] == 2   # fresh and standalone: expiry by commit time, renewable
    warning = next(w for w in out["warnings"] if "Empty consumer group(s)" in w)
    assert "went-empty, in-sync-empty" in warning and "cannot renew them" in warning
    assert "Time left unknown for 2: the broker did not say when the group became Empty" in warning


def test_the_time_left_of_an_empty_consumer_group_is_counted_from_when_it_became_empty():
    now = 1_800_000_000.0
    since = {"went-empty": int((now - 3 * 86400) * 1000)}   # Empty for 3 days of a 7-day window
    out = retention_preflight(GROUPS, 10080, "3.9", None, 10080, since, "1 group(s) have no state timestamp", now=now)
    named = {g["group"]: g for g in out["empty_consumer_groups"]}
    assert named["went-empty"]["time_left_seconds"] == 4 * 86400 and named["went-empty"]["time_left_unknown"] is None
    assert named["went-empty"]["empty_since"] == "2027-01-12T08:00:00Z"
    assert named["in-sync-empty"]["time_left_seconds"] is None
    assert named["in-sync-empty"]["time_left_unknown"] == "1 group(s) have no state timestamp"
    warning = next(w for w in out["warnings"] if "Empty consumer group(s)" in w)
    assert "Time left: went-empty 4.0 day(s); time left unknown for 1: 1 group(s) have no state timestamp" in warning
    gone = retention_preflight(GROUPS, 60, "3.9", None, 10080, since, None, now=now)
    assert {g["group"]: g["time_left_seconds"] for g in gone["empty_consumer_groups"]}["went-empty"] < 0
    assert "went-empty expired (due now)" in next(w for w in gone["warnings"] if "Empty consumer" in w)


@pytest.mark.parametrize("version", ["0.10.2", "1.1", "2.0"])
def test_before_2_1_every_offset_expires_by_commit_time(version):
    out = retention_preflight(GROUPS, 1440, version, None, 1440)
    assert out["empty_consumer_groups"] == []
    assert out["groups_created"] == 3   # the Empty consumer group's migrated offsets expire by commit time too
    assert out["expiry"].startswith("by commit time, for every offset")
    assert any("deletes every offset that long after its own commit" in w for w in out["warnings"])


def test_a_broker_that_cannot_tell_its_retention_gets_its_release_default():
    why = "the broker (Kafka 0.10.2) has no DescribeConfigs (Kafka 0.11+)"
    out = retention_preflight(GROUPS, None, "0.10.2", why, 1440)
    assert out["minutes"] is None and out["effective_minutes"] == 1440 and out["source"] == "release default"
    assert out["unknown_reason"] == why
    assert "1 day(s) (offsets.retention.minutes=1440) if unchanged (Kafka 0.10.2's default" in out["warnings"][0]
    assert any("cannot tell its own" in w and "server.properties" in w for w in out["warnings"])


def test_release_defaults_and_versions_come_from_the_announced_api_versions():
    assert BrokerFeatures((0, 10, 2), {}).default_retention_minutes == 1440
    assert BrokerFeatures((1, 1), {}).default_retention_minutes == 1440
    assert BrokerFeatures((2, 0), {}).default_retention_minutes == 10080
    assert BrokerFeatures(None, {}).default_retention_minutes is None
    # DescribeCluster (key 60) v0 only: kafka-python's describe_cluster cannot parse it; Metadata is used instead.
    f = BrokerFeatures((2, 8), {60: (0, 0), 9: (0, 7)})
    assert f.has(60) and not f.has(60, 1) and not f.has(9, 8) and f.release == "2.8"
