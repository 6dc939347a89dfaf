"""ready-for-kraft's terminal text and its files (summary.json, report.md), from the data its
--json prints."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from migrate.ready.rules import HEADINGS, PROBLEMS

Data = dict[str, Any]
SHOWN = 20        # groups the terminal table shows; the report lists every one
DETAILED = 10     # groups whose findings the terminal spells out
DETAILS = 3       # findings per group and problem on the terminal
# The table's order: the rarer findings, which need finding something, before the plain ones.
FIRST = ("written", "registered", "differs", "unreadable", "not_in_kafka")

WHAT = {"not_in_kafka": "not in Kafka", "registered": "old consumer registered",
        "written": "written during the watch", "differs": "differs from Kafka",
        "unreadable": "not readable"}
# What each problem asks of the operator, said once under the table (not in Kafka: _move).
DO = {"registered": "stop the old consumers (their registration in ids/ and owners/ goes with "
                    "them)",
      "written": "a client that does not register still commits (OffsetCommit v0 through the "
                 "broker, or to ZooKeeper itself): find it (DeprecatedRequestsPerSec on the "
                 "brokers names OffsetCommit v0 clients), stop it, then move the group",
      "differs": "ZooKeeper moved after zk2kafka wrote Kafka: something still commits there; "
                 "find it, stop it, then move the group again",
      "unreadable": "fix or read the znode (--zk-auth), or decide to leave the group behind "
                    "(--exclude-group)"}


def text(data: Data) -> str:
    """The verdict: ready, or a table of the groups that are not and what each needs."""
    watched = _span(data["watched"]["quiet_for"])
    verdicts = {v["group"]: v for v in data["verdicts"]}
    bad = sorted((verdicts[g] for g in data["not_ready"]),
                 key=lambda v: (tuple(not v[p] for p in FIRST), v["group"]))
    if data["ready"]:
        lines = [f"ready-for-kraft: ready: every ZooKeeper offset of the {data['groups']:,} "
                 f"group(s) under {data['source']} ({data['offsets']:,} offsets) is in Kafka or "
                 f"its group was taken over there; no old consumer registered; nothing written "
                 f"for {watched}"]
    else:
        lines = [f"ready-for-kraft: NOT READY: {len(bad):,} of {data['groups']:,} group(s) "
                 f"under {data['source']} would leave offsets behind in ZooKeeper "
                 f"(watched {watched} for writes; exit 3)", ""]
        width = max([len(v["group"]) for v in bad[:SHOWN]] + [5])
        lines.append(f"{'GROUP':<{width}}  " + "  ".join(HEADINGS[p] for p in PROBLEMS))
        for v in bad[:SHOWN]:
            cells = [_cell(v, p).rjust(len(HEADINGS[p])) for p in PROBLEMS]
            lines.append(f"{v['group']:<{width}}  " + "  ".join(cells))
        if len(bad) > SHOWN:
            lines.append(f"... and {len(bad) - SHOWN:,} more (see report.md)")
        lines.append("")
        for v in bad[:DETAILED]:
            for p in PROBLEMS:
                if v[p]:
                    more = f" (+{len(v[p]) - DETAILS} more)" if len(v[p]) > DETAILS else ""
                    lines.append(f"  {v['group']}: {WHAT[p]}: {'; '.join(v[p][:DETAILS])}{more}")
        found = [p for p in PROBLEMS if any(v[p] for v in bad)]
        move = _move([v["group"] for v in bad if v["not_in_kafka"]], data["report"])
        lines += ["", *(f"{WHAT[p]}: {move if p == 'not_in_kafka' else DO[p]}" for p in found)]
    gone = [v for v in verdicts.values() if v["topic_gone"]]
    if gone:
        lines.append("left behind with their topic gone from Kafka (blocks nothing): "
                     + "; ".join(f"{v['group']} {', '.join(v['topic_gone'][:DETAILS])}"
                                 for v in gone[:DETAILS]))
    lines.append(f"run={data['run']} report={data['report']}")
    return "\n".join(lines)


_REGEX_META = re.compile(r"([.^$*+?{}()|\[\]\\])")
MOST_IN_A_HINT = 10   # groups named in a printed command; past that, the diff of every group


def _move(groups: list[str], report: str) -> str:
    """What moving the groups not in Kafka takes, as commands to paste: the diff and the reviewed
    plan of just those groups, or a rolling switch of them."""
    from migrate.report.text import reviewed_plan

    sel = _selection(groups)
    return (f"move it: with its consumers stopped, a reviewed plan ({reviewed_plan(sel, report)}); "
            f"or a rolling switch with `zk2kafka sync --execute{sel}`")


def _selection(groups: list[str]) -> str:
    """` --group G ...` naming just those groups (--group is a full-match regex: only its
    metacharacters are escaped); empty past MOST_IN_A_HINT groups, for the whole selection."""
    if not groups or len(groups) > MOST_IN_A_HINT:
        return ""
    return "".join(" --group " + shlex.quote(_REGEX_META.sub(r"\\\1", g)) for g in groups)


def _cell(verdict: dict, problem: str) -> str:
    """A table cell: how many partitions (znodes for writes; old consumers, else owned
    partitions, for registrations) a finding concerns; `-` for none."""
    if problem == "registered":
        n = (verdict["consumers"] or verdict["owned"]) if verdict["registered"] else 0
    else:
        n = len(verdict[problem])
    return str(n) if n else "-"


def write_report(folder: Path, data: Data) -> Path:
    """summary.json (the data) and report.md (every group) into `folder`; returns it."""
    data = {**data, "report": str(folder)}
    (folder / "summary.json").write_text(json.dumps(data, indent=2) + "\n")
    (folder / "report.md").write_text(markdown(data))
    return folder


def markdown(data: Data) -> str:
    """report.md: the verdict, the evidence and every group's findings."""
    verdict = "ready" if data["ready"] else f"NOT READY ({len(data['not_ready']):,} group(s))"
    lines = [f"# zk2kafka ready-for-kraft: run {data['run']}", "",
             f"**{verdict}.** {data['groups']:,} group(s), {data['offsets']:,} ZooKeeper "
             f"offsets under `{data['source']}` ({data['selection']}), compared with Kafka at "
             f"`{data['bootstrap_server']}`; ZooKeeper watched for writes from "
             f"{data['watched']['from']} to {data['watched']['to']}.", "",
             "Evidence kept in the state dir, for after ZooKeeper is gone:", "",
             f"- the final ZooKeeper read: `{data['evidence']['zookeeper']}`",
             f"- the Kafka offsets it was compared with: `{data['evidence']['kafka']}`",
             "- this verdict: `summary.json`, `report.md`", "",
             "| group | offsets | in Kafka | taken over | "
             + " | ".join(WHAT[p] for p in PROBLEMS) + " | topic gone |",
             "|---|--:|--:|--:|" + "--:|" * len(PROBLEMS) + "--:|"]
    for v in data["verdicts"]:
        lines.append(f"| `{_md(v['group'])}` | {v['offsets']} | {v['in_kafka']} | "
                     f"{v['taken_over']} | " + " | ".join(str(len(v[p])) for p in PROBLEMS)
                     + f" | {len(v['topic_gone'])} |")
    lines += ["", "## Findings", ""]
    for v in data["verdicts"]:
        found = [(WHAT[p], v[p]) for p in PROBLEMS if v[p]]
        if v["topic_gone"]:
            found.append(("topic gone from Kafka (blocks nothing)", v["topic_gone"]))
        for what, items in found:
            lines.append(f"- `{_md(v['group'])}`, {what}: " + "; ".join(map(_md, items)))
    if not any(v[p] or v["topic_gone"] for v in data["verdicts"] for p in PROBLEMS):
        lines.append("None.")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    # A group or znode name may hold anything ZooKeeper allows: keep each on one table line.
    return re.sub(r"[\r\n|`]", lambda m: {"|": "\\|", "`": "'"}.get(m[0], " "), str(text))


def _span(seconds: float) -> str:
    return f"{seconds / 60:g}m" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g}s"
