"""The dry-run report in reports/<run>/: summary.json, rows.csv, reset-offsets.csv, report.md, report.html.

Everything is computed from summary.json's dict and the plan (plan.parquet, or a table);
nothing here re-judges a row. The plan is read a batch at a time, in its order: files that
scale with it (rows.csv, reset-offsets.csv) are written as it goes, and the pages show
bounded extracts (the CSVs hold the rest).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from migrate.diff import plan as p
from migrate.diff import schema as s

ROWS_COLUMNS = ("group", "topic", "partition", "zk_offset", "kafka_offset", "log_start", "log_end", "status",
                "planned_offset")
BLOCKER_COLUMNS = ("group", "topic", "partition", "status", "reason")
MAX_GROUPS = 200          # rows of the per-group table on the pages
MAX_BLOCKER_ROWS = 100    # blocker rows listed on the pages
TOP_LAG_GROUPS = 20       # bars of the lag-by-group chart

MEANING = {
    s.MIGRATE: "Kafka has no committed offset; ZooKeeper's is valid: commit it",
    s.IN_SYNC: "Kafka already holds ZooKeeper's offset: nothing to do",
    s.CONFLICT: "Kafka holds a different offset: per --on-conflict",
    s.BELOW_LOG_START: "ZooKeeper offset below the log start (data deleted): per --out-of-range",
    s.ABOVE_LOG_END: "ZooKeeper offset above the log end: per --out-of-range",
    s.UNKNOWN_PARTITION: "topic or partition does not exist in Kafka: skipped",
    s.MALFORMED: "znode value is not a non-negative 64-bit integer: skipped",
    s.UNREADABLE: "znode could not be read (NoAuth, vanished): skipped",
    s.GROUP_ACTIVE_KAFKA: "the Kafka group has live members: skipped",
    s.GROUP_ACTIVE_ZK: "old consumers still registered in ZooKeeper: skipped",
    s.KAFKA_ONLY: "an offset in Kafka and none in ZooKeeper: informational",
}

STATUS_COLOUR = {
    s.MIGRATE: "#2b7bb9", s.IN_SYNC: "#3a9d5d", s.KAFKA_ONLY: "#8a8f98", s.UNKNOWN_PARTITION: "#b0a060",
}
BLOCKER_COLOUR = "#c8453b"


Plan = pa.Table | Path   # PLAN_SCHEMA rows in PLAN_ORDER: a table, or plan.parquet


def write_reports(out: Path, summary: dict[str, Any], plan: Plan) -> dict[str, Path]:
    """Write every report file into `out` and return their paths by kind.

    A name Kafka's tool cannot parse from reset-offsets.csv adds a warning to
    `summary["warnings"]` (the caller prints those too) before summary.json is written.
    """
    files = {"summary": out / "summary.json", "rows": out / "rows.csv", "reset_offsets": out / "reset-offsets.csv",
             "markdown": out / "report.md", "html": out / "report.html"}
    write_rows(plan, files["rows"])
    left_out = write_reset_offsets(plan, files["reset_offsets"])
    if left_out:
        summary["warnings"].append(
            f"{left_out} planned offset(s) left out of reset-offsets.csv: their group or topic name holds a comma, "
            "quote or line break, which kafka-consumer-groups --from-file cannot parse")
    view = ReportView.build(summary, plan)
    files["markdown"].write_text(render_markdown(view), encoding="utf-8")
    files["html"].write_text(render_html(view), encoding="utf-8")
    files["summary"].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return files


def write_rows(plan: Plan, path: Path) -> None:
    """Every plan row, the columns an operator sorts and filters in a spreadsheet."""
    options = pacsv.WriteOptions(include_header=False, quoting_style="needed")
    with path.open("wb") as out:
        out.write((",".join(ROWS_COLUMNS) + "\n").encode())   # Arrow quotes header names; spreadsheets need not
        with pacsv.CSVWriter(out, _schema(ROWS_COLUMNS), write_options=options) as rows:
            for batch in p.plan_batches(plan, list(ROWS_COLUMNS)):
                rows.write_batch(batch)


def write_reset_offsets(plan: Plan, path: Path) -> int:
    """Rows to commit as `group,topic,partition,offset`, no header: kafka-consumer-groups --reset-offsets
    --from-file reads exactly that (it splits lines on commas, without quoting). Returns the rows left out."""
    columns = ["group", "topic", "partition", "planned_offset"]
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    left_out = 0
    with pacsv.CSVWriter(path, _schema(columns), write_options=options) as out:
        for batch in p.plan_batches(plan, ["action", *columns]):
            commits = batch.filter(pc.equal(batch.column("action"), p.COMMIT)).select(columns)
            parsable = pc.invert(pc.or_(_unparsable(commits.column("group")), _unparsable(commits.column("topic"))))
            kept = commits.filter(parsable)
            out.write_batch(kept)
            left_out += commits.num_rows - kept.num_rows
    return left_out


def _schema(columns) -> pa.Schema:
    return pa.schema([p.PLAN_SCHEMA.field(name) for name in columns])


def _unparsable(names: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.match_substring_regex(names, r'[,"\r\n]')


@dataclass(frozen=True)
class ReportView:
    """What both pages show: the summary plus the few bounded extracts of the plan they need."""

    summary: dict[str, Any]
    blocker_rows: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    lag_histogram: list[tuple[str, int]]
    top_lag: list[tuple[str, int]]

    @classmethod
    def build(cls, summary: dict[str, Any], plan: Plan) -> ReportView:
        blocker_rows, histogram = [], LagHistogram()
        blocker_statuses = pa.array(sorted(s.BLOCKERS))
        for batch in p.plan_batches(plan, list(dict.fromkeys([*BLOCKER_COLUMNS, "lag"]))):
            histogram.add(batch)
            if len(blocker_rows) < MAX_BLOCKER_ROWS:   # the first ones in plan order
                blockers = batch.filter(pc.is_in(batch.column("status"), value_set=blocker_statuses))
                blocker_rows += blockers.slice(0, MAX_BLOCKER_ROWS - len(blocker_rows)).select(
                    list(BLOCKER_COLUMNS)).to_pylist()
        groups = sorted(summary["per_group"], key=lambda g: (-g["blockers"], -(g["lag"] or 0), g["group"]))
        top_lag = [(g["group"], g["lag"]) for g in sorted(groups, key=lambda g: -(g["lag"] or 0))[:TOP_LAG_GROUPS]
                   if g["lag"]]
        return cls(summary, blocker_rows, groups[:MAX_GROUPS], histogram.buckets(), top_lag)


class LagHistogram:
    """Offsets per order of magnitude of lag (log end minus the ZooKeeper offset), for rows that have one,
    counted a batch of plan rows at a time."""

    def __init__(self):
        self.negative, self.zero, self.digits = 0, 0, Counter()

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        lag = pc.drop_null(batch.filter(pc.not_equal(batch.column("status"), s.KAFKA_ONLY)).column("lag"))
        self.negative += pc.sum(pc.less(lag, 0)).as_py() or 0
        self.zero += pc.sum(pc.equal(lag, 0)).as_py() or 0
        positive = pc.filter(lag, pc.greater(lag, 0))
        # Digit count is exact where log10 of a large int64 is not.
        digits = pc.utf8_length(pc.cast(positive, pa.string()))
        self.digits.update({row["values"]: row["counts"] for row in pc.value_counts(digits).to_pylist()})

    def buckets(self) -> list[tuple[str, int]]:
        buckets = [("< 0", self.negative), ("0", self.zero)]
        for n in range(1, max(self.digits, default=0) + 1):
            label = f"{10 ** (n - 1)}–{10 ** n - 1}" if n <= 3 else f"{_si(10 ** (n - 1))}–{_si(10 ** n)}"
            buckets.append((label, self.digits.get(n, 0)))
        return buckets if buckets[0][1] else buckets[1:]   # "< 0" only when some offset is past the log end


def lag_histogram(plan: Plan) -> list[tuple[str, int]]:
    """LagHistogram of a whole plan."""
    histogram = LagHistogram()
    for batch in p.plan_batches(plan, ["status", "lag"]):
        histogram.add(batch)
    return histogram.buckets()


def _si(n: int) -> str:
    for unit, size in (("T", 10 ** 12), ("G", 10 ** 9), ("M", 10 ** 6), ("k", 10 ** 3)):
        if n >= size:
            return f"{n // size}{unit}"
    return str(n)


# ---- Markdown ---------------------------------------------------------------------------------------------------

def render_markdown(view: ReportView) -> str:
    sm = view.summary
    lines = [f"# zk2kafka {sm['command']}: run {sm['run']}", "", *_plan_line(sm, "`"),
             *(f"- {label}: {value}" for label, value in _facts(sm)), "",
             f"**{sm['offsets']:,} offsets in {sm['groups']:,} groups. Planned: commit "
             f"{sm['planned']['commit_offsets']:,} offsets in {sm['planned']['commit_groups']:,} groups. "
             f"Blockers: {sm['blockers']:,}.**", ""]
    lines += [f"> **Warning:** {_md(w)}" for w in sm["warnings"]]
    empty = _empty_groups(sm)
    if empty:
        lines += ["", f"## Empty consumer groups: their offsets expire whatever is committed ({len(empty):,})", "",
                  "| group | protocol | offsets | to commit | expires within | time left |",
                  "|---|---|--:|--:|---|---|"]
        lines += [f"| {_md(g['group'])} | {_md(g['protocol_type'])} | {g['offsets']:,} | {g['planned']:,} | "
                  f"{_md(_within(g))} | {_md(_time_left(g))} |" for g in empty[:MAX_GROUPS]]
    lines += ["", "## Offsets per status", "", "| status | offsets | blocks the run | meaning |", "|---|--:|---|---|"]
    lines += [f"| `{name}` | {n:,} | {'yes' if name in s.BLOCKERS else ''} | {MEANING[name]} |"
              for name, n in sm["counts"].items() if n]
    if view.blocker_rows:
        lines += ["", f"## Blockers ({_shown(len(view.blocker_rows), sm['blockers'])})", "",
                  "| group | topic | partition | status | reason |", "|---|---|--:|---|---|"]
        lines += [f"| {_md(r['group'])} | {_md(r['topic'])} | {_num(r['partition'])} | `{r['status']}` | "
                  f"{_md(r['reason'])} |" for r in view.blocker_rows]
    lines += ["", f"## Groups ({_shown(len(view.groups), sm['groups'])}; most blockers, then most lag, first)", "",
              "| group | offsets | to commit | blockers | Kafka state | ZK consumers | lag | statuses |",
              "|---|--:|--:|--:|---|--:|--:|---|"]
    lines += [f"| {_md(g['group'])} | {g['offsets']:,} | {g['planned']:,} | {g['blockers']:,} | "
              f"{_md(g['group_state'] or 'none')} | {g['zk_consumers'] or 0} | {_num(g['lag'])} | "
              f"{_md(_statuses(g['counts']))} |" for g in view.groups]
    lines += ["", "## Policies", ""]
    lines += [f"- `{k}`: {_md(str(v))}" for k, v in sm["policies"].items()]
    lines += ["", "## Files", "",
              "- `rows.csv`: every row with ZooKeeper and Kafka offsets, log bounds, status and planned offset",
              "- `plan.parquet`: the full plan, with reasons and znode versions",
              "- `reset-offsets.csv`: the planned commits for `kafka-consumer-groups.sh --reset-offsets "
              "--from-file reset-offsets.csv --group <each group>` (not `--all-groups`: it lists only groups "
              "Kafka already knows; and Kafka's tool leaves ZooKeeper as it is)",
              "- `summary.json`: these figures, for gating", ""]
    return "\n".join(lines)


def _plan_line(sm: dict[str, Any], quote: str = "") -> list[str]:
    """The plan's identity, for the change ticket, and how to execute exactly this plan."""
    if not sm.get("plan_id"):
        return []
    return [f"Plan {quote}{sm['plan_id']}{quote}: quote it in the change ticket; "
            f"{quote}zk2kafka migrate --execute --plan {sm['plan_id']}{quote} writes exactly this plan.", ""]


def _facts(sm: dict[str, Any]) -> list[tuple[str, str]]:
    inputs, kafka, spark = sm["inputs"], sm["kafka"], sm["spark"]
    return [("created", sm["created"]),
            ("ZooKeeper", f"{inputs.get('zookeeper')} (root {inputs.get('zk_root')})"),
            ("Kafka", f"{inputs.get('bootstrap_server')} (cluster {kafka.get('cluster_id') or 'unknown'}; "
                      f"{kafka['groups_in_kafka']:,} groups, {kafka['active_groups']:,} active)"),
            ("broker release", _broker(kafka)),
            ("retention", _retention(sm["retention"])),
            ("Spark", f"{spark['master']}: start {spark['startup_seconds']:.1f}s, diff {spark['diff_seconds']:.1f}s"),
            ("versions", ", ".join(f"{k} {v}" for k, v in sm["versions"].items()))]


def _broker(kafka: dict[str, Any]) -> str:
    version = kafka.get("broker_version")
    if not version:
        return "unknown (the broker's ApiVersions answer matched no known release)"
    return f"Kafka {version}, {kafka.get('broker_version_source') or 'inferred from its ApiVersions answer'}"


def _retention(retention: dict[str, Any]) -> str:
    """The retention the broker reported, or why it could not and what its release's default is; and the clock."""
    minutes, default = retention.get("minutes"), retention.get("release_default_minutes")
    if minutes is not None:
        text = f"offsets.retention.minutes={minutes:,} (read from the broker)"
    elif default is not None:
        text = (f"offsets.retention.minutes unknown: {retention.get('unknown_reason') or 'the broker did not say'}; "
                f"Kafka {retention.get('broker_version')}'s default is {default:,}")
    else:
        text = "offsets.retention.minutes unknown" + (f": {retention['unknown_reason']}"
                                                      if retention.get("unknown_reason") else "")
    return f"{text}; offsets expire {retention['expiry']}" if retention.get("expiry") else text


# Every line boundary str.splitlines() knows, not only \r and \n: a line-based reader must see a row as one line.
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def _md(text: Any) -> str:
    """A value safe inside a Markdown table cell: no pipe, no line break, no raw HTML."""
    return _LINE_BREAKS.sub(" ", html.escape(str(text), quote=False).replace("|", "\\|")) if text is not None else ""


def _empty_groups(sm: dict[str, Any]) -> list[dict[str, Any]]:
    return sm.get("retention", {}).get("empty_consumer_groups") or []


def _within(g: dict[str, Any]) -> str:
    minutes = g.get("expires_within_minutes")
    return "unknown" if minutes is None else f"{minutes:,} minutes of becoming Empty"


def _time_left(g: dict[str, Any]) -> str:
    if g.get("time_left_seconds") is not None:
        return f"{g['time_left_seconds'] / 3600:,.1f} h"
    return f"unknown: {g.get('time_left_unknown') or 'the broker does not say'}"


def _num(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else ""


def _shown(shown: int, total: int) -> str:
    return f"{total:,}" if shown >= total else f"first {shown:,} of {total:,}"


def _statuses(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n:,}" for name, n in counts.items())


# ---- HTML -------------------------------------------------------------------------------------------------------

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:72rem;
  padding:0 1rem;color:#1d2330}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{padding:.25rem .5rem;border-bottom:1px solid #e3e6ea;
  text-align:left;vertical-align:top}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.tiles{display:flex;gap:1rem;flex-wrap:wrap}.tile{border:1px solid #e3e6ea;border-radius:6px;padding:.6rem 1rem}
.tile b{display:block;font-size:1.5rem}.blocker b{color:#c8453b}.warn{background:#fff4e0;border-left:4px solid #e0a030;
  padding:.5rem 1rem;margin:.5rem 0}.facts{color:#4a5161}.charts{display:flex;gap:2rem;flex-wrap:wrap}
code{font-size:.9em}svg text{font:11px system-ui,sans-serif;fill:#1d2330}
"""


def render_html(view: ReportView) -> str:
    """One self-contained page: no script, no external request; charts are inline SVG."""
    sm = view.summary
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>zk2kafka {e(sm['command'])} {e(sm['run'])}</title><style>{CSS}</style></head><body>",
           f"<h1>zk2kafka {e(sm['command'])}: run {e(sm['run'])}</h1>", *(f"<p>{e(t)}</p>" for t in _plan_line(sm)),
           '<ul class="facts">' + "".join(f"<li>{e(k)}: {e(v)}</li>" for k, v in _facts(sm)) + "</ul>",
           '<div class="tiles">',
           _tile("offsets", sm["offsets"]), _tile("groups", sm["groups"]),
           _tile("offsets to commit", sm["planned"]["commit_offsets"]),
           _tile("groups to commit", sm["planned"]["commit_groups"]),
           _tile("blockers", sm["blockers"], "tile blocker" if sm["blockers"] else "tile"), "</div>"]
    out += [f'<p class="warn"><strong>Warning:</strong> {e(w)}</p>' for w in sm["warnings"]]
    empty = _empty_groups(sm)
    if empty:
        out.append(f"<h2>Empty consumer groups: their offsets expire whatever is committed ({len(empty):,})</h2>")
        out.append(_table(("group", "protocol", "offsets", "to commit", "expires within", "time left"),
                          [(g["group"], g["protocol_type"], g["offsets"], g["planned"], _within(g), _time_left(g))
                           for g in empty[:MAX_GROUPS]], numeric={2, 3}))

    statuses = [(name, n) for name, n in sm["counts"].items() if n]
    out += ['<h2>Offsets per status</h2><div class="charts">',
            bar_chart("Offsets per status", [(n_, v) for n_, v in statuses],
                      [BLOCKER_COLOUR if n_ in s.BLOCKERS else STATUS_COLOUR.get(n_, "#2b7bb9") for n_, _ in statuses]),
            "<table><tr><th>status</th><th class=n>offsets</th><th>meaning</th></tr>"]
    out += [f"<tr><td><code>{e(name)}</code></td><td class=n>{n:,}</td><td>{e(MEANING[name])}</td></tr>"
            for name, n in statuses]
    out += ["</table></div>", "<h2>Lag</h2><div class=\"charts\">",
            bar_chart("Offsets by lag (log end minus ZooKeeper offset)", view.lag_histogram),
            bar_chart(f"Top {len(view.top_lag)} groups by lag", view.top_lag, horizontal=True), "</div>"]

    if view.blocker_rows:
        out.append(f"<h2>Blockers ({_shown(len(view.blocker_rows), sm['blockers'])})</h2>")
        out.append(_table(("group", "topic", "partition", "status", "reason"),
                          [(r["group"], r["topic"], r["partition"], r["status"], r["reason"])
                           for r in view.blocker_rows], numeric={2}))
    out.append(f"<h2>Groups ({_shown(len(view.groups), sm['groups'])}; most blockers, then most lag, first)</h2>")
    out.append(_table(("group", "offsets", "to commit", "blockers", "Kafka state", "ZK consumers", "lag", "statuses"),
                      [(g["group"], g["offsets"], g["planned"], g["blockers"], g["group_state"] or "none",
                        g["zk_consumers"] or 0, g["lag"], _statuses(g["counts"])) for g in view.groups],
                      numeric={1, 2, 3, 5, 6}))
    out.append("<h2>Policies</h2><ul>" + "".join(f"<li><code>{e(k)}</code>: {e(str(v))}</li>"
                                                 for k, v in sm["policies"].items()) + "</ul>")
    out.append("<p class=facts>Every row is in <code>rows.csv</code> and <code>plan.parquet</code> beside this page; "
               "<code>summary.json</code> holds these figures for gating.</p></body></html>")
    return "\n".join(out) + "\n"


def _tile(label: str, n: int, cls: str = "tile") -> str:
    return f'<div class="{cls}"><b>{n:,}</b>{html.escape(label)}</div>'


def _table(headers: tuple[str, ...], rows: list[tuple], numeric: set[int] = frozenset()) -> str:
    def cell(i: int, v: Any) -> str:
        text = f"{v:,}" if isinstance(v, int) else ("" if v is None else html.escape(str(v)))
        return f"<td class=n>{text}</td>" if i in numeric else f"<td>{text}</td>"
    head = "".join(f"<th class=n>{html.escape(h)}</th>" if i in numeric else f"<th>{html.escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def bar_chart(title: str, bars: list[tuple[str, int]], colours: list[str] | None = None,
              horizontal: bool = False) -> str:
    """An inline SVG bar chart; every bar carries its value as text and as a tooltip."""
    e = html.escape
    if not bars:
        return f"<figure><figcaption>{e(title)}</figcaption><p class=facts>nothing to draw</p></figure>"
    colours = colours or ["#2b7bb9"] * len(bars)
    peak = max(v for _, v in bars) or 1
    parts = []
    if horizontal:
        label_w, bar_w, row_h = 180, 260, 18
        width, height = label_w + bar_w + 90, row_h * len(bars) + 10
        for i, ((label, v), colour) in enumerate(zip(bars, colours)):
            y, w = 5 + i * row_h, max(1, round(bar_w * v / peak))
            short = label if len(label) <= 28 else label[:27] + "…"
            parts.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{e(short)}</text>'
                         f'<rect x="{label_w}" y="{y + 2}" width="{w}" height="{row_h - 5}" fill="{colour}">'
                         f"<title>{e(label)}: {v:,}</title></rect>"
                         f'<text x="{label_w + w + 4}" y="{y + 12}">{v:,}</text>')
    else:
        bar_w, gap, plot_h = 44, 10, 160
        width, height = len(bars) * (bar_w + gap) + gap + 60, plot_h + 120
        for i, ((label, v), colour) in enumerate(zip(bars, colours)):
            x, h = gap + i * (bar_w + gap), max(1, round(plot_h * v / peak)) if v else 0
            y = 20 + plot_h - h
            parts.append(f'<rect x="{x}" y="{y}" width="{bar_w}" height="{h}" fill="{colour}">'
                         f"<title>{e(label)}: {v:,}</title></rect>"
                         f'<text x="{x + bar_w / 2}" y="{y - 4}" text-anchor="middle">{v:,}</text>'
                         f'<text transform="translate({x + bar_w / 2},{plot_h + 28}) rotate(35)">{e(label)}</text>')
    return (f'<figure><figcaption>{e(title)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" role="img" '
            f'aria-label="{e(title)}" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            + "".join(parts) + "</svg></figure>")
