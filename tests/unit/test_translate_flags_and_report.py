"""--translate-via-mm2's flags (checked once, ZooKeeper never written) and a translated plan's report:
ZooKeeper's offset and the translated one side by side, the redelivery window beside them."""

from __future__ import annotations

import csv
import json

import pyarrow as pa
import pytest

from migrate.diff import schema as s
from migrate.errors import ConfigError
from migrate.kafka.offset_syncs import DEFAULT, IDENTITY, remote_name, upstream_name
from migrate.report.files import write_reports
from migrate.settings import load_settings

from support.reports import CURRENT, row, summary, write_plan

MM2 = {"translate_via_mm2": "old", "mm2_target_alias": "new",
       "offset_syncs_bootstrap_server": "old-kafka:9092"}


def test_translation_implies_no_zk_write():
    settings = load_settings(MM2, environ={})
    assert settings.no_zk_write is True
    assert settings.replication_policy == "default"
    assert load_settings({}, environ={}).no_zk_write is False


def test_translation_needs_the_syncs_cluster_not_the_target_alias():
    with pytest.raises(ConfigError, match="--offset-syncs-bootstrap-server"):
        load_settings({k: v for k, v in MM2.items() if k != "offset_syncs_bootstrap_server"}, environ={})
    assert load_settings({k: v for k, v in MM2.items() if k != "mm2_target_alias"}, environ={}).mm2_target_alias is None


def test_the_target_alias_is_read_from_the_syncs_topics_names():
    from migrate.kafka.offset_syncs import target_aliases

    assert target_aliases(["orders", "mm2-offset-syncs.new.internal", "__consumer_offsets",
                           "mm2-offset-syncs.dr.east.internal", "mm2-offset-syncs..internal"]) == ["dr.east", "new"]


@pytest.mark.parametrize("flags, message", [
    ({"translate_via_mm2": "old cluster"}, "not a cluster alias"),
    ({"offset_syncs_bootstrap_server": "old-kafka"}, "not host:port"),
])


def test_translation_flags_are_checked(flags, message):
    with pytest.raises(ConfigError, match=message):
        load_settings({**MM2, **flags}, environ={})


def test_replication_policy_names():
    assert remote_name("orders", "old", DEFAULT) == "old.orders"
    assert upstream_name("old.orders", "old", DEFAULT) == "orders"
    assert upstream_name("old.a.b", "old", DEFAULT) == "a.b"
    assert upstream_name("orders", "old", DEFAULT) is None       # not a copy from `old`
    assert upstream_name("old.", "old", DEFAULT) is None
    assert remote_name("orders", "old", IDENTITY) == upstream_name("orders", "old", IDENTITY) == "orders"


def translated(r, upstream_topic, upstream, window, sync=(None, None)):
    return {**r, "upstream_topic": upstream_topic, "upstream_offset": upstream, "sync_upstream": sync[0],
            "sync_downstream": sync[1], "redelivery_window": window}


def test_translated_report_shows_upstream_and_translated_side_by_side(tmp_path):
    rows = [translated(row("g1", "old.orders", 0, s.MIGRATE, 51, planned=51, lag=10), "orders", 200, 49,
                       (150, 50)),
            translated(row("g1", "old.orders", 1, s.UNTRANSLATABLE, None,
                           reason="no MirrorMaker 2 offset sync for orders partition 1"), "orders", 10, None)]
    sm = summary(rows)
    sm["inputs"]["translation"] = {"source_alias": "old", "replication_policy": "default", "syncs": 3,
                                   "synced_partitions": 1, "syncs_topic": "mm2-offset-syncs.new.internal",
                                   "offset_syncs_bootstrap_server": "old-kafka:9092"}
    sm["redelivery"] = {"reread_at_most": 49, "widest_window": 49}
    files = write_reports(tmp_path, sm, pa.Table.from_pylist(rows, schema=s.plan_schema(True)))
    with files["rows"].open(newline="") as f:
        got = list(csv.DictReader(f))
    assert [(r["source_topic"], r["zk_offset"], r["topic"], r["translated_offset"], r["reread_at_most"],
             r["status"]) for r in got] == [("orders", "200", "old.orders", "51", "49", s.MIGRATE),
                                           ("orders", "10", "old.orders", "", "", s.UNTRANSLATABLE)]
    md = files["markdown"].read_text()
    assert "| g1 | orders | old.orders | 0 | 200 | 51 | 49 |" in md
    assert "mm2-offset-syncs.new.internal" in md and "ZooKeeper is not written" in md
    assert "read at most 49 messages a second time, at most 49 on one partition" in md
    assert "| `UNTRANSLATABLE` | 1 | yes |" in md
    html = files["html"].read_text()
    assert "Translated through MirrorMaker 2" in html and "<td class=n>200</td><td class=n>51</td>" in html


def test_a_translated_plan_is_executed_only_through_the_same_translation(tmp_path):
    from migrate.diff import plan as p

    report = write_plan(tmp_path)
    summary = json.loads((report / "summary.json").read_text())
    summary["inputs"].update(no_zk_write=True, translation={
        "source_alias": "old", "mm2_target_alias": "new", "replication_policy": "default",
        "offset_syncs_bootstrap_server": "old-kafka:9092"})
    (report / "summary.json").write_text(json.dumps(summary))
    plan = p.ReviewedPlan.load(str(report), tmp_path)
    same = {**CURRENT, "no_zk_write": True, "translate_via_mm2": "old", "mm2_target_alias": "new",
            "replication_policy": "default", "offset_syncs_bootstrap_server": "old-kafka:9092"}
    assert plan.refusals(same, 86400) == []
    (other,) = plan.refusals({**same, "mm2_target_alias": "dr"}, 86400)
    assert "--mm2-target-alias 'new' in the plan, 'dr' now" in other
    # Not given, the target alias is the plan's.
    assert plan.refusals({**same, "mm2_target_alias": None}, 86400) == []
    (untranslated,) = plan.refusals({**same, "no_zk_write": False, "translate_via_mm2": None}, 86400)
    assert "--translate-via-mm2 'old' in the plan, none now" in untranslated
    # An untranslated plan is not executed through a translation either.
    assert p.ReviewedPlan.load(str(write_plan(tmp_path / "plain")), tmp_path / "plain").refusals(
        {**CURRENT, "translate_via_mm2": "old"}, 86400)
