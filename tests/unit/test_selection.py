"""Selection: --group, --exclude-group and --topic are full matches, as Java's matches() in Kafka's tools."""

from __future__ import annotations

from migrate.zk.reader import Selection


def test_selection_is_a_full_match_as_in_kafkas_tools():
    excluding = Selection(exclude_groups=("test",))
    assert not excluding.group("test")
    assert excluding.group("contest-billing") and excluding.group("test-1")
    only = Selection(groups=("billing",), topics=("orders",))
    assert only.group("billing") and not only.group("billing-eu") and not only.group("old-billing")
    assert only.topic("orders") and not only.topic("orders-dlq") and not only.topic("preorders")
    prefixed = Selection(groups=("billing.*",), exclude_groups=(".*-test",))
    assert prefixed.group("billing-eu") and not prefixed.group("billing-test") and not prefixed.group("a-billing")
    assert Selection(topics=("orders",)).topic(None)   # a row whose topic is not known yet is kept for later
