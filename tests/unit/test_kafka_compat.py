"""compat's choices from announced API versions, with a stand-in admin (the real brokers: test_legacy_brokers.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kafka.errors import GroupAuthorizationFailedError, NotCoordinatorError
from kafka.protocol.api_key import ApiKey

from migrate.kafka import compat

from support.kafka_answers import CodecAdmin, fetch_answer

NOT_COORDINATOR, GROUP_AUTHORIZATION_FAILED = 16, 30


class Admin:
    """Records which kafka-python entry points were used; answers like a broker of the given API versions."""

    def __init__(self, version, apis):
        self._manager = SimpleNamespace(broker_version_data=SimpleNamespace(broker_version=version, api_versions=apis),
                                        run=self._run, call_soon=self._call_soon)
        self.config = {"max_in_flight_requests_per_connection": 5}
        self.used = []

    def _run(self, coro, *args):
        import asyncio
        return asyncio.run(coro(*args))

    def _call_soon(self, coro, *args):
        import asyncio
        return asyncio.ensure_future(coro(*args))

    def describe_cluster(self):
        self.used.append("DescribeCluster")
        raise KeyError("endpoint_type")   # kafka-python 3.0.12 on a v0 answer

    async def _get_cluster_metadata(self, topics):
        self.used.append("Metadata")
        return {"brokers": [{"node_id": 2}, {"node_id": 1}], "cluster_id": "c"}


def apis(**versions):
    return {int(getattr(ApiKey, name)): (0, top) for name, top in versions.items()}


def test_cluster_facts_come_from_metadata_where_describe_cluster_is_v0_or_missing():
    for announced in (apis(DescribeCluster=0), apis()):
        admin = Admin((2, 8), announced)
        facts = compat.describe_cluster(admin, compat.BrokerFeatures.of(admin))
        assert admin.used == ["Metadata"] and facts == compat.ClusterFacts([1, 2], "c", "Metadata")


def test_describe_cluster_v1_is_asked_and_an_unparsable_answer_is_one_error_naming_call_and_release():
    admin = Admin((3, 7), apis(DescribeCluster=1))
    with pytest.raises(compat.UnreadableAnswer, match=r"^DescribeCluster: kafka-python could not read the answer of "
                                                      r"a Kafka 3\.7 broker .*KeyError: 'endpoint_type'$"):
        compat.describe_cluster(admin, compat.BrokerFeatures.of(admin))


def test_offset_fetch_is_batched_only_from_v8():
    admin = CodecAdmin(lambda request: fetch_answer(request, {}), version=8)
    assert compat.fetch_group_offsets(admin, compat.BrokerFeatures.of(admin), ["a", "b"]) == ({"a": {}, "b": {}}, {})
    assert [request.groups for request in admin.sent] == [["a", "b"]]


def test_before_v8_one_offset_fetch_per_group_each_with_its_own_error():
    held = {"a": {("t", 0): (5, "", 0)}, "c": {("t", 1): (6, "m", 0)}}
    admin = CodecAdmin(lambda request: fetch_answer(request, held, {"b": GROUP_AUTHORIZATION_FAILED}), version=7)
    found, errors = compat.fetch_group_offsets(admin, compat.BrokerFeatures.of(admin), ["a", "b", "c"])
    assert found == {"a": {("t", 0): (5, "")}, "c": {("t", 1): (6, "m")}}
    assert list(errors) == ["b"] and isinstance(errors["b"], GroupAuthorizationFailedError)
    assert sorted(request.groups for request in admin.sent) == [["a"], ["b"], ["c"]]
    # A retriable error is raised, for the retry policy to send the round again.
    admin = CodecAdmin(lambda request: fetch_answer(request, {}, {"a": NOT_COORDINATOR}), version=7)
    with pytest.raises(NotCoordinatorError):
        compat.fetch_group_offsets(admin, compat.BrokerFeatures.of(admin), ["a", "b"])


def test_settings_and_deletes_the_release_lacks_are_reasons_not_errors():
    admin = Admin((0, 10, 2), apis(OffsetFetch=2))
    features = compat.BrokerFeatures.of(admin)
    assert compat.broker_setting(admin, features, 0, "offsets.retention.minutes") == compat.BrokerSetting(
        None, "the broker (Kafka 0.10.2) has no DescribeConfigs (Kafka 0.11+)")
    assert "has no OffsetDelete (Kafka 2.4+)" in compat.can_delete_offsets(features)
    assert compat.can_delete_offsets(compat.BrokerFeatures((2, 4), apis(OffsetDelete=0))) is None
    assert not compat.states_in_list(features) and compat.states_in_list(compat.BrokerFeatures((2, 6),
                                                                                               apis(ListGroups=4)))


def test_group_states_come_from_describe_groups_before_list_groups_v4():
    class Groups(Admin):
        def list_groups(self):
            self.used.append("ListGroups")
            return [{"group_id": "a", "protocol_type": "consumer"}, {"group_id": "b", "protocol_type": ""}]

        def describe_groups(self, groups):
            self.used.append(f"DescribeGroups {groups}")
            return {"a": {"group_state": "Stable"}, "b": {"group_state": "Empty"}}

    admin = Groups((2, 4), apis(ListGroups=3))
    assert compat.group_states(admin, compat.BrokerFeatures.of(admin)) == {"a": "Stable", "b": "Empty"}
    assert admin.used == ["ListGroups", "DescribeGroups ['a', 'b']"]
