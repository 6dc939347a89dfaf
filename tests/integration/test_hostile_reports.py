"""Hostile ZooKeeper trees through `zk2kafka diff` and its reports, on a real ZooKeeper, Kafka and Spark.

Nothing crashes; every offset znode is exactly one plan row with a status; and no name from ZooKeeper can
break a report: report.html has the very tags and attributes a benign tree gives (names only as text),
rows.csv reads back to the same names, reset-offsets.csv keeps four fields a line, report.md keeps its
column count on every table row.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import logging
import os
import re
import uuid
from contextlib import redirect_stdout
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings as hsettings, strategies as st

from migrate import cli
from migrate.diff import schema as s
from migrate.report.html_page import render_html
from migrate.report.view import ReportView

from support.hostile import NAME, PARTITION, VALUE, is_locked, tree, write_tree
from support.seeding import make_topic


REAL = f"hostile-{uuid.uuid4().hex[:8]}"   # one real topic, so hostile groups also get MIGRATE rows
REAL_PARTITIONS, MESSAGES = 3, 20

NASTY = ["<script>alert(1)", '"><img src=x onerror=alert(1)>', "<svg onload=alert(1)>", "<style>b{x",
         "a|b|c", "\\|", "|", "`rm -rf`", "``", "x\u2028y\u2029z", "\u202eevil\u200f", "\u200b", "&amp;&lt;",
         "' OR 1=1 --", "]]><!--", "{{7*7}}", "a,b\"c", "x" * 1000, "# h", "- [ ] x", "*b*_i_"]
# ZooKeeper takes no "/" in a name, so "</script>" cannot be one; the page embeds no script or JSON anyway.
NASTY_TREE = {
    **{name: {"topics": {REAL: {"0": b"5", "1": b"30"}}, "locked": False, "deep": False} for name in NASTY},
    "plain": {"topics": {name: {"0": b"1"} for name in NASTY[:6]} | {REAL: {name: b"1" for name in NASTY[:6]}},
              "locked": False, "deep": False},
    "<b>locked": {"topics": {REAL: {"2": b"3"}}, "locked": True, "deep": False},
}
TREES = tree(topics=NAME | st.just(REAL), partitions=PARTITION | st.sampled_from(["0", "1", "2"]),
             values=VALUE | st.integers(0, MESSAGES + 5).map(lambda n: str(n).encode()), groups=(4, 10),
             min_offsets=1)


@pytest.fixture
def real_topic(cluster, kafka_admin):
    if REAL not in kafka_admin.list_topics():
        make_topic(kafka_admin, cluster.bootstrap_server, REAL, REAL_PARTITIONS, MESSAGES)
    return REAL


@pytest.fixture(scope="module")
def chromium():
    """Headless Chromium when installed (always on CI): what the page logs, e.g. a CSP violation, is an error."""
    from support.browser import HeadlessChromium, binaries, require_binaries

    if binaries() is None and not os.environ.get("CI"):
        yield None   # html.parser still checks every page
        return
    browser = HeadlessChromium(*require_binaries())
    yield browser
    browser.close()


# Spark starts once per example (~7 s on 2 cores): few examples, each a tree of 4 to 10 groups.


@hsettings(max_examples=4, deadline=None, database=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@given(generated=TREES)
@example(generated=NASTY_TREE)
def test_hostile_tree_through_diff_gives_one_row_per_znode_and_reports_that_escape_every_name(
        cluster, zk, zk_chroot, real_topic, chromium, tmp_path_factory, generated):
    base = f"/r{uuid.uuid4().hex[:8]}"
    write_tree(zk, base, generated)
    state = tmp_path_factory.mktemp("state")
    out, handlers = io.StringIO(), logging.getLogger().handlers[:]
    try:
        with redirect_stdout(out):
            code = cli.main(["diff", "--zookeeper", zk_chroot + base, "--bootstrap-server", cluster.bootstrap_server,
                             "--state-dir", str(state), "--json", "-q"])
    finally:
        logging.getLogger().handlers[:] = handlers
    assert code in (0, 3), out.getvalue()
    result = json.loads(out.getvalue())
    report = Path(result["report"])

    # Every offset znode is one plan row with a status; a locked offsets/ is one UNREADABLE row.
    plan = pq.read_table(report / "plan.parquet")
    rows = plan.to_pylist()
    znodes = [path for group, spec in generated.items() for path in _offset_znodes(group, spec)]
    assert sorted(str(r["zk_path"]) for r in rows) == sorted(znodes)
    assert all(r["status"] in s.STATUSES and r["action"] in (s.COMMIT, s.NOTHING, s.SKIP) for r in rows)
    for r in rows:
        spec = generated[r["group"]]
        if not is_locked(spec):
            _, _, group, _, topic, partition = r["zk_path"].split("/")
            assert (r["group"], r["topic"]) == (group, topic)
            assert r["partition"] is None or str(r["partition"]) == partition
    summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
    assert summary["offsets"] == len(rows) == sum(summary["counts"].values())
    names = {r["group"] for r in rows} | {r["topic"] for r in rows if r["topic"] is not None}

    _check_csv(report, rows)
    _check_markdown((report / "report.md").read_text(encoding="utf-8"), names)
    _check_html((report / "report.html").read_text(encoding="utf-8"), summary, plan, names)
    if chromium is not None:   # an injected <img src=x> or <script> would break the page's CSP and log it
        assert chromium.load(report / "report.html") == []
        found = "return document.querySelectorAll('script, img, iframe, object, embed, a').length"
        assert chromium.evaluate(found) == 0


def _offset_znodes(group: str, spec: dict) -> list[str]:
    """The paths the plan must hold a row for: each offset znode, or the offsets/ the scan may not list."""
    if is_locked(spec):
        return [f"/consumers/{group}/offsets"]
    return [f"/consumers/{group}/offsets/{t}/{p}" for t, partitions in spec["topics"].items() for p in partitions]


def _check_csv(report: Path, rows: list[dict]) -> None:
    with open(report / "rows.csv", newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert table[0] == ["group", "topic", "partition", "zk_offset", "kafka_offset", "log_start", "log_end",
                        "status", "planned_offset", "zk_change", "zk_planned"]
    assert [(row[0], row[1], row[2], row[7]) for row in table[1:]] == [
        (r["group"], r["topic"] or "", "" if r["partition"] is None else str(r["partition"]), r["status"])
        for r in rows]
    # Kafka's tool splits reset-offsets.csv on "\n" and ",", with no quoting: names it cannot read are left out.
    # None written when nothing is (no empty file).
    path = report / "reset-offsets.csv"
    reset = path.read_text(encoding="utf-8").split("\n") if path.exists() else [""]
    assert path.exists() or not any(r["action"] == s.COMMIT and not re.search(r'[,"\r\n]', r["group"] + r["topic"])
                                    for r in rows)
    assert reset[-1] == "" and all(len(line.split(",")) == 4 for line in reset[:-1])
    assert sorted(tuple(line.split(",")) for line in reset[:-1]) == sorted(
        (r["group"], r["topic"], str(r["partition"]), str(r["planned_offset"])) for r in rows
        if r["action"] == s.COMMIT and not re.search(r'[,"\r\n]', r["group"] + r["topic"]))


def _check_markdown(md: str, names: set[str]) -> None:
    for name in names:   # raw HTML in Markdown would render: every name is escaped
        assert "<" not in name or name not in md, name
    table: list[int] = []
    for line in md.splitlines() + [""]:   # splitlines(): the strictest reader, it also breaks at \u2028
        if line.startswith("|"):
            # GitHub's rule: a pipe is a cell border unless a backslash precedes it.
            table.append(len(re.split(r"(?<!\\)\|", line)))
            assert re.search(r"(?<!\\)\|$", line), line
        elif table:
            assert len(set(table)) == 1, table
            table = []


class _Page(HTMLParser):
    """Tags with their attribute names, attribute values, and the text."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[str, ...]]] = []
        self.values: list[str] = []
        self.text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, tuple(sorted(name for name, _ in attrs))))
        self.values += [value or "" for _, value in attrs]

    def handle_endtag(self, tag):
        self.tags.append(("/" + tag, ()))

    def handle_data(self, data):
        self.text.append(data)


def _check_html(page: str, summary: dict, plan: pa.Table, names: set[str]) -> None:
    seen = _Page(page)
    benign = _Page(_benign_page(summary, plan, names))
    assert seen.tags == benign.tags   # no element, attribute or closing tag came from a name
    assert not any(tag in ("script", "iframe", "img", "object", "embed", "a", "link") for tag, _ in seen.tags)
    for name in names:   # plain ASCII words and numbers may occur in attribute values by chance ("en", "100")
        if re.search(r'[^\x00-\x7f]|[<>"&]', name):
            assert not any(name in value for value in seen.values), name
    text = "\n".join(seen.text)
    for group in {g["group"] for g in summary["per_group"]}:   # every group is in the per-group table, as text
        assert group in text, group


def _benign_page(summary: dict, plan: pa.Table, names: set[str]) -> str:
    """The page for the same plan with every name, reason and warning replaced by plain words."""
    plain = {name: f"n{i}" for i, name in enumerate(sorted(names))}

    def rename(column: str) -> pa.Array:
        return pa.array([plain.get(v, v) for v in plan.column(column).to_pylist()], pa.string())

    benign_plan = (plan.set_column(plan.schema.get_field_index("group"), "group", rename("group"))
                   .set_column(plan.schema.get_field_index("topic"), "topic", rename("topic"))
                   .set_column(plan.schema.get_field_index("reason"), "reason",
                               pa.array(["r"] * plan.num_rows, pa.string())))
    benign = copy.deepcopy(summary)
    # The warnings' own words, their `code spans` included; a name's backticks are escaped in them (\`), plain here.
    benign["warnings"] = [w.replace("\\`", "'") for w in summary["warnings"]]
    for g in benign["per_group"]:
        g["group"] = plain[g["group"]]
    return render_html(ReportView.build(benign, benign_plan))
