"""report.md: the dry-run report as Markdown, for a change ticket or a pull request."""

from __future__ import annotations

import html
import re
from typing import Any

from migrate.diff import schema as s
from migrate.report import phrases as ph
from migrate.report.view import MAX_GROUPS, ReportView

# Every line boundary str.splitlines() knows, not only \r and \n: a line-based reader must see a
# row as one line.
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")

FILES = [
    "- `rows.csv`: every row with ZooKeeper and Kafka offsets, log bounds, status and planned"
    " offset",
    "- `plan.parquet`: the full plan, with reasons and znode versions",
    "- `reset-offsets.csv`: the planned commits for `kafka-consumer-groups.sh --reset-offsets"
    " --from-file reset-offsets.csv --group <each group>` (not `--all-groups`: it lists only"
    " groups Kafka already knows; and Kafka's tool leaves ZooKeeper as it is)",
    "- `summary.json`: these figures, for gating",
]


def render_markdown(view: ReportView) -> str:
    sm = view.summary
    planned = sm["planned"]
    lines = [f"# zk2kafka {sm['command']}: run {sm['run']}", "", *ph.plan_line(sm, "`"),
             *(f"- {fact.label}: {fact.text}" for fact in ph.facts(sm)), "",
             f"**{sm['offsets']:,} offsets in {sm['groups']:,} groups."
             f" Planned: commit {planned['commit_offsets']:,} offsets"
             f" in {planned['commit_groups']:,} groups. Blockers: {sm['blockers']:,}.**", ""]
    lines += [f"> **Warning:** {_md(w)}" for w in sm["warnings"]]
    lines += _empty_groups(sm)
    lines += ["", "## Offsets per status", "",
              "| status | offsets | blocks the run | meaning |", "|---|--:|---|---|"]
    lines += [f"| `{name}` | {n:,} | {'yes' if name in s.BLOCKERS else ''} | {ph.MEANING[name]} |"
              for name, n in sm["counts"].items() if n]
    if view.blocker_rows:
        lines += ["", f"## Blockers ({ph.shown(len(view.blocker_rows), sm['blockers'])})", "",
                  "| group | topic | partition | status | reason |", "|---|---|--:|---|---|"]
        lines += [f"| {_md(r['group'])} | {_md(r['topic'])} | {_num(r['partition'])}"
                  f" | `{r['status']}` | {_md(r['reason'])} |" for r in view.blocker_rows]
    if view.translated_rows:
        shown = ph.shown(len(view.translated_rows), sm["planned"]["commit_offsets"])
        lines += ["", f"## {ph.TRANSLATED_TITLE} ({shown} planned commits)", "",
                  "| " + " | ".join(ph.TRANSLATED_HEADER) + " |", "|---|---|---|--:|--:|--:|--:|"]
        lines += ["| " + " | ".join(_md(v) if isinstance(v, str) else _num(v)
                                    for v in ph.translated_row(r)) + " |"
                  for r in view.translated_rows]
    lines += ["", f"## Groups ({ph.shown(len(view.groups), sm['groups'])}; {ph.GROUPS_ORDER})",
              "",
              "| group | offsets | to commit | blockers | Kafka state | ZK consumers | lag"
              " | statuses |",
              "|---|--:|--:|--:|---|--:|--:|---|"]
    lines += [_group_row(g) for g in view.groups]
    lines += ["", "## Policies", ""]
    lines += [f"- `{k}`: {_md(str(v))}" for k, v in sm["policies"].items()]
    lines += ["", "## Files", "", *FILES, ""]
    return "\n".join(lines)


def _empty_groups(sm: dict[str, Any]) -> list[str]:
    empty = ph.empty_groups(sm)
    if not empty:
        return []
    lines = ["", f"## {ph.EMPTY_GROUPS_TITLE} ({len(empty):,})", "",
             "| group | protocol | offsets | to commit | expires within | time left |",
             "|---|---|--:|--:|---|---|"]
    return lines + [f"| {_md(g['group'])} | {_md(g['protocol_type'])} | {g['offsets']:,}"
                    f" | {g['planned']:,} | {_md(ph.within(g))} | {_md(ph.time_left(g))} |"
                    for g in empty[:MAX_GROUPS]]


def _group_row(g: dict[str, Any]) -> str:
    return (f"| {_md(g['group'])} | {g['offsets']:,} | {g['planned']:,} | {g['blockers']:,}"
            f" | {_md(g['group_state'] or 'none')} | {g['zk_consumers'] or 0}"
            f" | {_num(g['lag'])} | {_md(ph.statuses(g['counts']))} |")


def _md(text: Any) -> str:
    """A value safe inside a Markdown table cell: no pipe, no line break, no raw HTML."""
    if text is None:
        return ""
    return _LINE_BREAKS.sub(" ", html.escape(str(text), quote=False).replace("|", "\\|"))


def _num(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else ""
