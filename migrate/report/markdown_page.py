"""report.md: the dry-run report as Markdown, for a change ticket or a pull request."""

from __future__ import annotations

import html
import re
from typing import Any

from migrate.diff import schema as s
from migrate.diff.retention import left_without_consumer
from migrate.report import phrases as ph
from migrate.report.view import MAX_GROUPS, ReportView

# Every line boundary str.splitlines() knows, not only \r and \n: a line-based reader must see a
# row as one line.
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
# The line endings of Markdown itself (CommonMark): a command line broken at one goes on, in its
# fenced block, on the next line of the block quote.
_MD_LINE_ENDINGS = re.compile("\r\n|\r|\n")
# A command line advised in a sentence, between backticks (a name's own backtick escaped: \`).
_COMMAND = re.compile(r"(?<!\\)`((?:[A-Z_]+=\$\()?zk2kafka (?:[^`\\]|\\.)*)`")

FILES = [
    "- `rows.csv`: every row with ZooKeeper and Kafka offsets, log bounds, status, planned"
    " offset and what it does to ZooKeeper's offset",
    "- `no-offset.csv` (when there are any): the partitions of the groups' topics with no offset"
    " in ZooKeeper or Kafka",
    "- `plan.parquet`: the full plan, with reasons and znode versions",
    "- `reset-offsets.csv`: the planned commits for `kafka-consumer-groups.sh --reset-offsets"
    " --from-file reset-offsets.csv --group <each group>` (not `--all-groups`: it lists only"
    " groups Kafka already knows; and Kafka's tool leaves ZooKeeper as it is)",
    "- `summary.json`: these figures, for gating",
]


def render_markdown(view: ReportView) -> str:
    sm = view.summary
    planned = sm["planned"]
    lines = [f"# zk2kafka {sm['command']}: run {sm['run']}", "",
             *(line for text in ph.plan_line(sm, "`") for line in _advised(text)),
             *(f"- {fact.label}: {fact.text}" for fact in ph.facts(sm)), "",
             f"**{sm['offsets']:,} offsets in {sm['groups']:,} groups."
             f" Planned: commit {planned['commit_offsets']:,} offsets"
             f" in {planned['commit_groups']:,} groups. Blockers: {sm['blockers']:,}.**", ""]
    lines += [f"- {_md(line)}" for line in (*ph.zk_changes(sm), *ph.no_offset(sm),
                                             *ph.plan_clocks(sm))] + [""]
    for w in sm["warnings"]:   # each its own block quote, its command lines fenced in it
        lines += [f"> {line}" if line else ">" for line in _advised(f"**Warning:** {w}")] + [""]
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
    if view.zk_rows:
        moving = sum((sm.get("zk_changes") or {}).values())
        lines += ["", f"## {ph.ZK_TITLE} ({ph.shown(len(view.zk_rows), moving)})", "",
                  "| " + " | ".join(ph.ZK_HEADER) + " |", "|---|---|--:|--:|--:|--:|---|"]
        lines += ["| " + " | ".join(_md(v) if isinstance(v, str) else _num(v)
                                    for v in ph.zk_row(r)) + " |" for r in view.zk_rows]
    lines += _no_offset(sm)
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
    lines += [f"- `{k}`: {_md(v)}" for k, v in ph.policies(sm["policies"])]
    lines += ["", "## Files", "", *FILES, ""]
    return "\n".join(lines)


def _advised(text: str) -> list[str]:
    """One of zk2kafka's sentences, escaped, each command line it advises taken out into a fenced
    code block after it: a block copies exactly as printed, where a code span would keep the
    backslash that escapes a pipe."""
    if not text:
        return [text]
    commands: list[str] = []

    def take(m: re.Match) -> str:
        commands.append(m.group(1).replace("\\`", "`"))   # a name's escaped backtick is one
        return "\0"

    prose = _md(_COMMAND.sub(take, text))
    for i in range(len(commands)):
        prose = prose.replace("\0", "the command below" if len(commands) == 1
                              else f"command {i + 1} below", 1)
    lines = [prose]
    for command in commands:
        # A fence longer than any run of backticks in the command, so none can close it.
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", command)), default=0))
        lines += ["", f"{fence}sh", *_MD_LINE_ENDINGS.split(command), fence]
    return lines


def _no_offset(sm: dict[str, Any]) -> list[str]:
    found = sm.get("no_offset") or {}
    if not found.get("partitions"):
        return []
    lines = ["", f"## {ph.NO_OFFSET_TITLE} ({ph.no_offset_count(found)})", "",
             "| " + " | ".join(ph.NO_OFFSET_HEADER) + " |", "|---|---|---|--:|---|"]
    return lines + ["| " + " | ".join(_md(v) if isinstance(v, str) else _num(v)
                                      for v in ph.no_offset_row(g)) + " |"
                    for g in found["per_group"]]


def _empty_groups(sm: dict[str, Any]) -> list[str]:
    empty = ph.empty_groups(sm)
    if not empty:
        return _left_without_consumer(sm)
    lines = ["", f"## {ph.EMPTY_GROUPS_TITLE} ({len(empty):,})", "",
             "| group | protocol | offsets | to commit | expires within | time left | expires at |",
             "|---|---|--:|--:|---|---|---|"]
    return lines + [f"| {_md(g['group'])} | {_md(g['protocol_type'])} | {g['offsets']:,}"
                    f" | {g['planned']:,} | {_md(ph.within(g))} | {_md(ph.time_left(g))}"
                    f" | {_md(g.get('expires_at') or 'unknown')} |"
                    for g in empty[:MAX_GROUPS]] + _left_without_consumer(sm)


def _left_without_consumer(sm: dict[str, Any]) -> list[str]:
    """The groups in Kafka with no consumer, or left so by the migration: their offsets expire
    by commit time."""
    return [line for when, groups in left_without_consumer(sm.get("retention", {}))
            for line in ("", f"With no consumer, deleted {_md(when)} unless a consumer joins "
                             f"first ({len(groups):,}): "
                             + ", ".join(_md(g) for g in groups[:MAX_GROUPS]))]


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
