"""Report files from a hand-made plan: exact CSVs, escaping on both pages, bounded tables, lag buckets."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser

import pyarrow.parquet as pq
import pytest

from migrate.diff import schema as s
from migrate.report.files import write_reports
from migrate.report.view import MAX_BLOCKER_ROWS, MAX_GROUPS, lag_histogram

from support.reports import row, summary, table


ROWS = [
    row("g1", "orders", 0, s.MIGRATE, 40, planned=40, lag=60),
    row("g1", "orders", 1, s.IN_SYNC, 100, lag=0, kafka=100),
    row("g1", "orders", 2, s.CONFLICT, 10, lag=90, kafka=20, reason="Kafka holds 20"),
    row("g2", "pay|ments", 0, s.MIGRATE, 5, planned=5, lag=95),
    row("g,comma", "orders", 0, s.MIGRATE, 7, planned=7, lag=93),
    row("<script>alert(1)</script>", "orders", 0, s.MALFORMED, reason="value 'x\ny' is not an offset"),
    row("g3", "orders", 0, s.ABOVE_LOG_END, 150, lag=-50),
]


@pytest.fixture
def written(tmp_path):
    sm = summary(ROWS)
    files = write_reports(tmp_path, sm, table(ROWS))
    return tmp_path, sm, files


def test_reset_offsets_is_exactly_what_kafka_consumer_groups_reads(written):
    out, sm, files = written
    assert files["reset_offsets"].read_text() == "g1,orders,0,40\ng2,pay|ments,0,5\n"
    # The group with a comma is left out, and the operator is told.
    assert any("1 planned offset(s) left out of reset-offsets.csv" in w for w in sm["warnings"])
    assert json.loads(files["summary"].read_text())["warnings"] == sm["warnings"]


def test_rows_csv_has_every_row_in_standard_csv(written):
    _, _, files = written
    text = files["rows"].read_text()
    # The columns scripts rely on, in their order, then what each row does to ZooKeeper's offset.
    header = "group,topic,partition,zk_offset,kafka_offset,log_start,log_end,status,planned_offset,zk_change,zk_planned"
    assert text.splitlines()[0] == header
    parsed = list(csv.reader(files["rows"].open(newline="")))[1:]
    assert ["g1", "orders", "0", "40", "", "0", "100", "MIGRATE", "40", "unchanged", ""] in parsed
    assert ["g,comma", "orders", "0", "7", "", "0", "100", "MIGRATE", "7", "unchanged", ""] in parsed
    assert len(parsed) == len(ROWS)


def test_markdown_escapes_cells_and_counts_every_status(written):
    _, _, files = written
    md = files["markdown"].read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md and "<script>" not in md
    assert "value 'x y' is not an offset" in md                    # no line break inside a table row
    assert "| `MIGRATE` | 3 |" in md and "| `CONFLICT` | 1 | yes |" in md
    assert "Blockers: 3.**" in md
    # Every row of a table has as many cells as its header: no stray pipe split one.
    for block in md.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        assert len({len(re.findall(r"(?<!\\)\|", line)) for line in rows}) <= 1, block


def test_markdown_rows_stay_one_line_for_any_line_boundary(tmp_path):
    rows = [row("g\u2028h\u2029i\x85j", "t\x1ct", 0, s.MALFORMED, reason="bad\u2028value")]
    md = write_reports(tmp_path, summary(rows), table(rows))["markdown"].read_text()
    assert "| g h i j | t t |" in md and "bad value" in md   # str.splitlines() breaks at all of these


def test_html_is_self_contained_and_escaped(written):
    _, _, files = written
    page = files["html"].read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "default-src 'none'" in page
    for banned in ("http://", "https://", "src=", "@import"):
        assert banned not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert page.count("<svg") == 3

    class Check(HTMLParser):
        stack: list[str] = []
        void = {"meta", "br", "img", "input", "link", "hr"}

        def handle_starttag(self, tag, attrs):
            if tag not in self.void:
                self.stack.append(tag)

        def handle_endtag(self, tag):
            assert self.stack.pop() == tag

    parser = Check()
    parser.feed(page)
    # <html> and <body> stay open only if the page was cut short.
    assert parser.stack == []


def test_pages_bound_their_tables(tmp_path):
    rows = [row(f"g{i:04d}", "t", p, s.CONFLICT, 1, lag=i, kafka=2) for i in range(MAX_GROUPS + 20) for p in range(2)]
    files = write_reports(tmp_path, summary(rows), table(rows))
    md = files["markdown"].read_text()
    assert f"## Blockers (first {MAX_BLOCKER_ROWS} of {len(rows):,})" in md
    assert f"## Groups (first {MAX_GROUPS} of {MAX_GROUPS + 20}" in md
    # Equal blockers, so most lag first: the groups made last lead, the first 20 fall off the page.
    groups = md.split("## Groups")[1]
    assert groups.index(f"| g{MAX_GROUPS + 19:04d} |") < groups.index(f"| g{MAX_GROUPS + 18:04d} |")
    assert "| g0019 |" not in groups and "| g0020 |" in groups
    assert len(files["rows"].read_text().splitlines()) == len(rows) + 1


def test_a_plan_that_commits_nothing_writes_no_empty_csv(tmp_path):
    rows = [row("g1", "orders", 0, s.IN_SYNC, 100, lag=0, kafka=100)]
    files = write_reports(tmp_path, summary(rows), table(rows))
    assert "reset_offsets" not in files and not (tmp_path / "reset-offsets.csv").exists()
    assert all(path.stat().st_size for path in tmp_path.iterdir())


def test_a_group_name_with_backticks_makes_no_code_span_of_a_warning(tmp_path):
    from migrate.diff.retention import retention_preflight, selection_flags
    from migrate.settings import Settings

    rows = [row("a`b`c", "orders", 0, s.MIGRATE, 40, planned=40, lag=60)]
    sm = summary(rows)
    sm["retention"] = retention_preflight(sm["per_group"], 1440, "3.9", None, 10080,
                                          selection=selection_flags(Settings(groups=("x`y",))))
    sm["warnings"] = list(sm["retention"]["warnings"])
    page = write_reports(tmp_path, sm, table(rows))["html"].read_text()
    (warning,) = re.findall(r'<p class="warn">(.*?)</p>', page)
    assert "(a`b`c)" in warning and warning.count("<code>") == 1
    assert "<code>zk2kafka sync --execute --renew-every 6h --group &#x27;x`y&#x27;</code>" in warning


def test_html_shows_code_spans_of_warnings_as_code(tmp_path):
    sm = summary(ROWS, warnings=["keep them alive with `zk2kafka sync --renew-every` <soon>"])
    page = write_reports(tmp_path, sm, table(ROWS))["html"].read_text()
    assert "with <code>zk2kafka sync --renew-every</code> &lt;soon&gt;" in page
    assert "`" not in page.split("<body>")[1]


def test_lag_histogram_buckets_by_digits():
    rows = [row("g", "t", i, s.MIGRATE, 1, planned=1, lag=lag) for i, lag in
            enumerate([0, 0, 5, 9, 10, 999, 1000, 12345, -3])]
    rows.append(row("g", "t", 99, s.KAFKA_ONLY, lag=7))           # Kafka-only rows have no ZooKeeper lag
    assert lag_histogram(table(rows)) == [("< 0", 1), ("0", 2), ("1–9", 2), ("10–99", 1), ("100–999", 1),
                                          ("1k–10k", 1), ("10k–100k", 1)]
    assert lag_histogram(table(rows[:2])) == [("0", 2)]


def test_plan_parquet_round_trip_keeps_reset_file_stable(tmp_path):
    pq.write_table(table(ROWS), tmp_path / "plan.parquet")
    again = pq.read_table(tmp_path / "plan.parquet")
    files = write_reports(tmp_path, summary(ROWS), again)
    assert files["reset_offsets"].read_text().splitlines() == ["g1,orders,0,40", "g2,pay|ments,0,5"]


def test_report_names_the_broker_release_and_the_empty_consumer_groups(tmp_path):
    """On the pages: Empty consumer groups are listed with their window and why the time left is unknown;
    and the broker release and how it is known, and the release default where the broker cannot tell."""
    from migrate.diff.retention import retention_preflight

    sm = summary(ROWS)
    for g in sm["per_group"]:
        if g["group"] == "g2":
            g["group_state"], g["protocol_type"] = "Empty", "consumer"
    sm["kafka"].update(broker_version="2.8", broker_version_source="inferred from ApiVersions")
    sm["retention"] = retention_preflight(sm["per_group"], 10080, "2.8", None, 10080)
    sm["warnings"] = list(sm["retention"]["warnings"])
    files = write_reports(tmp_path, sm, table(ROWS))
    md, page = files["markdown"].read_text(), files["html"].read_text()
    for text in (md, page):
        assert "Kafka 2.8, inferred from ApiVersions" in text
        assert "Empty consumer groups: their offsets expire whatever is committed (1)" in text
        assert "10,080 minutes of becoming Empty" in text
        assert "unknown: the broker did not say when the group became Empty" in text
    assert re.search(r"\| g2 \| consumer \| 1 \| 1 \| 10,080 minutes of becoming Empty \| unknown: ", md)

    old = summary(ROWS)
    old["kafka"].update(broker_version="0.10.2")
    old["retention"] = retention_preflight(old["per_group"], None, "0.10.2",
                                           "the broker (Kafka 0.10.2) has no DescribeConfigs (Kafka 0.11+)", 1440)
    files = write_reports(tmp_path, old, table(ROWS))
    md = files["markdown"].read_text()
    assert ("offsets.retention.minutes unknown: the broker (Kafka 0.10.2) has no DescribeConfigs (Kafka 0.11+); "
            "Kafka 0.10.2's default is 1,440; offsets expire by commit time, for every offset (before Kafka 2.1)") in md
    assert "Empty consumer groups" not in md


def test_every_page_says_what_happens_to_zookeeper_and_names_the_uncovered_partitions(tmp_path):
    rows = [row("g1", "orders", 0, s.CONFLICT, 80, planned=30, kafka=30, zk_change=s.ZK_BACKWARD, zk_planned=30),
            row("g1", "orders", 1, s.CONFLICT, 30, kafka=80, zk_change=s.ZK_BLOCKED, zk_planned=80),
            row("g1", "orders", 2, s.MIGRATE, 5, planned=5)]
    sm = summary(rows)
    sm["zk_changes"] = {s.ZK_FORWARD: 0, s.ZK_BACKWARD: 1, s.ZK_BLOCKED: 1}
    sm["no_offset"] = {"partitions": 2, "groups": 1, "messages": 300, "file": str(tmp_path / "no-offset.csv"),
                       "per_group": [{"group": "g1", "topic": "orders", "partitions": [3, 4], "messages": 300}]}
    (tmp_path / "no-offset.csv").write_text("group,topic,partition,log_start,log_end\ng1,orders,3,0,150\n")
    files = write_reports(tmp_path, sm, table(rows))
    assert files["no_offset"] == tmp_path / "no-offset.csv"
    md, page = files["markdown"].read_text(), files["html"].read_text()
    for text in (md, page):
        assert "ZooKeeper: 0 row(s) set forwards, 1 backwards (--rewrite-zk-offsets)" in text
        assert "not planned: 1 row(s) would set an old consumer&#x27;s ZooKeeper offset" in text or \
            "not planned: 1 row(s) would set an old consumer's ZooKeeper offset" in text
        assert "set 80 -&gt; 30 (backwards)" in text
        assert "kept: would be set 30 -&gt; 80; not planned (--rewrite-zk-offsets)" in text
        assert "no offset anywhere: 2 partition(s) of the topics of 1 group(s)" in text
        assert "earliest reads them; latest skips them; none fails to start" in text
    assert "| g1 | orders | 3, 4 | 300 |" in md
    parsed = list(csv.reader(files["rows"].open(newline="")))[1:]
    assert ["g1", "orders", "0", "80", "30", "0", "100", "CONFLICT", "30", "backward", "30"] in parsed
    assert ["g1", "orders", "1", "30", "80", "0", "100", "CONFLICT", "", "blocked", "80"] in parsed


def test_both_pages_show_the_policies_in_the_words_of_the_flags(tmp_path):
    sm = {**summary(ROWS), "policies": {"on_conflict": "skip", "out_of_range": "clamp", "offset_semantics": "next",
                                        "allow_live_zk_consumers": False, "rewrite_zk_offsets": True}}
    files = write_reports(tmp_path, sm, table(ROWS))
    html, markdown = files["html"].read_text(), files["markdown"].read_text()
    policies = html[html.index("<h2>Policies</h2>"):]
    for shown in ("<code>--on-conflict</code>: skip", "<code>--out-of-range</code>: clamp",
                  "<code>--offset-semantics</code>: next", "<code>--allow-live-zk-consumers</code>: no",
                  "<code>--rewrite-zk-offsets</code>: yes"):
        assert shown in policies
    assert markdown.split("## Policies\n\n", 1)[1].split("\n\n", 1)[0].splitlines() == [
        "- `--on-conflict`: skip", "- `--out-of-range`: clamp", "- `--offset-semantics`: next",
        "- `--allow-live-zk-consumers`: no", "- `--rewrite-zk-offsets`: yes"]
    for python in ("on_conflict", "allow_live_zk_consumers", "False", "True"):
        assert python not in policies and python not in markdown.split("## Policies", 1)[1]


def test_both_pages_say_where_the_zookeeper_side_came_from(tmp_path):
    sm = summary(ROWS)
    sm["inputs"]["zookeeper_side"] = {
        "from": "snapshot", "kind": "data directory", "source": "/backup/zk1/data",
        "zk_root": "/kafka/consumers", "read_at": "2026-01-02T03:04:05Z", "read_by": "scan R1",
        "snapshot": "/state/snapshots/zk-R1.parquet",
        "liveness": "liveness (ids/, owners/) as the snapshot recorded it when read, not checked now",
        "zk_write": "ZooKeeper is not written (--no-zk-write implied: the ZooKeeper side is a snapshot)"}
    files = write_reports(tmp_path, sm, table(ROWS))
    md, page = files["markdown"].read_text(), files["html"].read_text()
    said = ("ZooKeeper: the snapshot /state/snapshots/zk-R1.parquet: /backup/zk1/data (root /kafka/consumers), "
            "read at 2026-01-02T03:04:05Z by scan R1 from a copy of its data directory; liveness (ids/, owners/) "
            "as the snapshot recorded it when read, not checked now; ZooKeeper is not written")
    assert f"- {said}" in md
    assert f"<li>{said}" in page
