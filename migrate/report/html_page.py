"""report.html: the dry-run report as one self-contained page (no script, no external request),
with its charts drawn as inline SVG.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from migrate.diff import schema as s
from migrate.diff.retention import left_without_consumer
from migrate.report import phrases as ph
from migrate.report.view import MAX_GROUPS, Bar, ReportView

STATUS_COLOUR = {
    s.MIGRATE: "#2b7bb9", s.IN_SYNC: "#3a9d5d", s.KAFKA_ONLY: "#8a8f98",
    s.UNKNOWN_PARTITION: "#b0a060", s.TAKEN_OVER: "#5f8f6e",
}
BAR_COLOUR = "#2b7bb9"
BLOCKER_COLOUR = "#c8453b"

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
# Inline, as the policy above allows no style sheet from elsewhere.
CSS = (
    "\n"
    "body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;"
    "margin:2rem auto;max-width:72rem;\n"
    "  padding:0 1rem;color:#1d2330}\n"
    "h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}\n"
    "table{border-collapse:collapse;width:100%;margin:.5rem 0}"
    "th,td{padding:.25rem .5rem;border-bottom:1px solid #e3e6ea;\n"
    "  text-align:left;vertical-align:top}td.n,th.n{text-align:right;"
    "font-variant-numeric:tabular-nums}\n"
    ".tiles{display:flex;gap:1rem;flex-wrap:wrap}.tile{border:1px solid #e3e6ea;"
    "border-radius:6px;padding:.6rem 1rem}\n"
    ".tile b{display:block;font-size:1.5rem}.blocker b{color:#c8453b}"
    ".warn{background:#fff4e0;border-left:4px solid #e0a030;\n"
    "  padding:.5rem 1rem;margin:.5rem 0}.facts{color:#4a5161}.charts{display:flex;"
    "gap:2rem;flex-wrap:wrap}\n"
    "code{font-size:.9em}svg text{font:11px system-ui,sans-serif;fill:#1d2330}\n")

e = html.escape   # nearly every value on the page goes through it
_DELIMITER = re.compile(r"(?<!\\)`")   # a backtick not escaped (a name's own is: \`)


def prose(text: str) -> str:
    """zk2kafka's own sentences (warnings, facts), escaped, their `code spans` as <code>; a
    backtick escaped in a name (\\`) is only a backtick."""
    parts = [e(part.replace("\\`", "`")) for part in _DELIMITER.split(text)]
    if len(parts) % 2 == 0:   # an unpaired delimiter: no code at all
        return e(text.replace("\\`", "`"))
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def render_html(view: ReportView) -> str:
    """One self-contained page: no script, no external request; charts are inline SVG."""
    sm = view.summary
    heading = f"zk2kafka {e(sm['command'])}: run {e(sm['run'])}"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>zk2kafka {e(sm['command'])} {e(sm['run'])}</title>"
           f"<style>{CSS}</style></head><body>",
           f"<h1>{heading}</h1>", *(f"<p>{e(t)}</p>" for t in ph.plan_line(sm)),
           '<ul class="facts">'
           + "".join(f"<li>{e(f.label)}: {prose(f.text)}</li>" for f in ph.facts(sm)) + "</ul>",
           *_tiles(sm)]
    out += [f"<p>{e(line)}</p>" for line in (*ph.zk_changes(sm), *ph.no_offset(sm))]
    out += [f'<p class="warn"><strong>Warning:</strong> {prose(w)}</p>' for w in sm["warnings"]]
    out += _empty_groups(sm)
    out += _statuses(sm)
    out += ["<h2>Lag</h2><div class=\"charts\">",
            bar_chart("Offsets by lag (log end minus ZooKeeper offset)", view.lag_histogram),
            bar_chart(f"Top {len(view.top_lag)} groups by lag", view.top_lag, horizontal=True),
            "</div>"]
    if view.blocker_rows:
        out.append(f"<h2>Blockers ({ph.shown(len(view.blocker_rows), sm['blockers'])})</h2>")
        out.append(_table(("group", "topic", "partition", "status", "reason"),
                          [(r["group"], r["topic"], r["partition"], r["status"], r["reason"])
                           for r in view.blocker_rows], numeric={2}))
    if view.zk_rows:
        moving = sum((sm.get("zk_changes") or {}).values())
        out.append(f"<h2>{e(ph.ZK_TITLE)} ({ph.shown(len(view.zk_rows), moving)})</h2>")
        out.append(_table(ph.ZK_HEADER, [ph.zk_row(r) for r in view.zk_rows],
                          numeric={2, 3, 4, 5}))
    found = sm.get("no_offset") or {}
    if found.get("partitions"):
        out.append(f"<h2>{e(ph.NO_OFFSET_TITLE)} ({e(ph.no_offset_count(found))})</h2>")
        out.append(_table(ph.NO_OFFSET_HEADER, [ph.no_offset_row(g) for g in found["per_group"]],
                          numeric={3}))
    if view.translated_rows:
        shown = ph.shown(len(view.translated_rows), sm["planned"]["commit_offsets"])
        out.append(f"<h2>{e(ph.TRANSLATED_TITLE)} ({shown} planned commits)</h2>")
        out.append(_table(ph.TRANSLATED_HEADER,
                          [ph.translated_row(r) for r in view.translated_rows],
                          numeric={3, 4, 5, 6}))
    out.append(f"<h2>Groups ({ph.shown(len(view.groups), sm['groups'])}; {ph.GROUPS_ORDER})</h2>")
    out.append(_table(("group", "offsets", "to commit", "blockers", "Kafka state", "ZK consumers",
                       "lag", "statuses"),
                      [(g["group"], g["offsets"], g["planned"], g["blockers"],
                        g["group_state"] or "none", g["zk_consumers"] or 0, g["lag"],
                        ph.statuses(g["counts"])) for g in view.groups],
                      numeric={1, 2, 3, 5, 6}))
    out.append("<h2>Policies</h2><ul>"
               + "".join(f"<li><code>{e(k)}</code>: {e(v)}</li>"
                         for k, v in ph.policies(sm["policies"]))
               + "</ul>")
    out.append("<p class=facts>Every row is in <code>rows.csv</code> and <code>plan.parquet</code>"
               " beside this page; <code>summary.json</code> holds these figures for gating.</p>"
               "</body></html>")
    return "\n".join(out) + "\n"


def _tiles(sm: dict[str, Any]) -> list[str]:
    planned = sm["planned"]
    return ['<div class="tiles">',
            _tile("offsets", sm["offsets"]), _tile("groups", sm["groups"]),
            _tile("offsets to commit", planned["commit_offsets"]),
            _tile("groups to commit", planned["commit_groups"]),
            _tile("blockers", sm["blockers"], "tile blocker" if sm["blockers"] else "tile"),
            "</div>"]


def _empty_groups(sm: dict[str, Any]) -> list[str]:
    empty = ph.empty_groups(sm)
    if not empty:
        return _left_without_consumer(sm)
    return [f"<h2>{ph.EMPTY_GROUPS_TITLE} ({len(empty):,})</h2>",
            _table(("group", "protocol", "offsets", "to commit", "expires within", "time left",
                    "expires at"),
                   [(g["group"], g["protocol_type"], g["offsets"], g["planned"], ph.within(g),
                     ph.time_left(g), g.get("expires_at") or "unknown")
                    for g in empty[:MAX_GROUPS]], numeric={2, 3}),
            *_left_without_consumer(sm)]


def _left_without_consumer(sm: dict[str, Any]) -> list[str]:
    """The groups in Kafka with no consumer, or left so by the migration: their offsets expire
    by commit time."""
    return [f"<p>With no consumer, deleted {e(when)} unless a consumer joins first "
            f"({len(groups):,}): {e(', '.join(groups[:MAX_GROUPS]))}</p>"
            for when, groups in left_without_consumer(sm.get("retention", {}))]


def _statuses(sm: dict[str, Any]) -> list[str]:
    """Offsets per status: a chart (blockers in red) and the table of their meanings."""
    bars = [Bar(name, n) for name, n in sm["counts"].items() if n]
    colours = [BLOCKER_COLOUR if bar.label in s.BLOCKERS
               else STATUS_COLOUR.get(bar.label, BAR_COLOUR) for bar in bars]
    return ['<h2>Offsets per status</h2><div class="charts">',
            bar_chart("Offsets per status", bars, colours),
            "<table><tr><th>status</th><th class=n>offsets</th><th>meaning</th></tr>",
            *(f"<tr><td><code>{e(bar.label)}</code></td><td class=n>{bar.value:,}</td>"
              f"<td>{prose(ph.MEANING[bar.label])}</td></tr>" for bar in bars),
            "</table></div>"]


def _tile(label: str, n: int, cls: str = "tile") -> str:
    return f'<div class="{cls}"><b>{n:,}</b>{e(label)}</div>'


def _table(headers: tuple[str, ...], rows: Iterable[tuple], numeric: set[int]) -> str:
    """An HTML table; the columns whose index is in `numeric` align right, numbers grouped."""
    def cell(i: int, v: Any) -> str:
        text = f"{v:,}" if isinstance(v, int) else ("" if v is None else e(str(v)))
        return f"<td class=n>{text}</td>" if i in numeric else f"<td>{text}</td>"
    head = "".join(f"<th class=n>{e(h)}</th>" if i in numeric else f"<th>{e(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(row)) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def bar_chart(title: str, bars: Sequence[Bar], colours: list[str] | None = None,
              horizontal: bool = False) -> str:
    """An inline SVG bar chart; every bar carries its value as text and as a tooltip."""
    if not bars:
        return (f"<figure><figcaption>{e(title)}</figcaption>"
                "<p class=facts>nothing to draw</p></figure>")
    colours = colours or [BAR_COLOUR] * len(bars)
    peak = max(bar.value for bar in bars) or 1
    draw = _horizontal if horizontal else _vertical
    svg = draw(bars, colours, peak)
    return (f'<figure><figcaption>{e(title)}</figcaption>'
            f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{e(title)}"'
            f' width="{svg.width}" height="{svg.height}"'
            f' viewBox="0 0 {svg.width} {svg.height}">'
            + "".join(svg.parts) + "</svg></figure>")


class _Drawing(NamedTuple):
    """The bars drawn, and the size of the picture that holds them."""

    width: int
    height: int
    parts: list[str]


def _horizontal(bars: Sequence[Bar], colours: list[str], peak: int) -> _Drawing:
    label_w, bar_w, row_h = 180, 260, 18
    parts = []
    for i, (bar, colour) in enumerate(zip(bars, colours)):
        y, w = 5 + i * row_h, max(1, round(bar_w * bar.value / peak))
        short = bar.label if len(bar.label) <= 28 else bar.label[:27] + "…"
        parts.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{e(short)}</text>'
                     f'<rect x="{label_w}" y="{y + 2}" width="{w}" height="{row_h - 5}"'
                     f' fill="{colour}"><title>{e(bar.label)}: {bar.value:,}</title></rect>'
                     f'<text x="{label_w + w + 4}" y="{y + 12}">{bar.value:,}</text>')
    return _Drawing(label_w + bar_w + 90, row_h * len(bars) + 10, parts)


def _vertical(bars: Sequence[Bar], colours: list[str], peak: int) -> _Drawing:
    bar_w, gap, plot_h = 44, 10, 160
    parts = []
    for i, (bar, colour) in enumerate(zip(bars, colours)):
        x = gap + i * (bar_w + gap)
        h = max(1, round(plot_h * bar.value / peak)) if bar.value else 0
        y = 20 + plot_h - h
        parts.append(f'<rect x="{x}" y="{y}" width="{bar_w}" height="{h}" fill="{colour}">'
                     f"<title>{e(bar.label)}: {bar.value:,}</title></rect>"
                     f'<text x="{x + bar_w / 2}" y="{y - 4}" text-anchor="middle">'
                     f"{bar.value:,}</text>"
                     f'<text transform="translate({x + bar_w / 2},{plot_h + 28}) rotate(35)">'
                     f"{e(bar.label)}</text>")
    return _Drawing(len(bars) * (bar_w + gap) + gap + 60, plot_h + 120, parts)
