"""ready-for-kraft's terminal text and its files (summary.json, report.md), from the data its
--json prints."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from migrate.durations import exact_duration
from migrate.group_map import flags_text
from migrate.ready.rules import HEADINGS, PROBLEMS
from migrate.report import phrases as ph
from migrate.report.ready_expiry import DETAILS, expiry, selection

Data = dict[str, Any]
SHOWN = 20        # groups the terminal table shows; the report lists every one
DETAILED = 10     # groups whose findings the terminal spells out
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
      "foreign": "Kafka holds a value zk2kafka did not write, and no new consumer is shown to "
                 "own the partition (each line says who committed it and when): decide with the "
                 "group's owner which value its new consumers start from: ZooKeeper's, moved "
                 "by a diff and a reviewed plan of the group with --on-conflict zk, or Kafka's, "
                 "by leaving ZooKeeper's behind on purpose (--leave-behind and the group's name)",
      "unreadable": "fix or read the znode (--zk-auth), or decide to leave the group behind "
                    "and name it so (--leave-behind and the group's name)"}


OWN_DIFFERS = ("zk2kafka itself committed to Kafka another value than ZooKeeper's, and ZooKeeper "
               "has not moved since (the journal names the run and its policy): nothing else "
               "commits there. If Kafka's value is the one the new consumers should take, leave "
               "ZooKeeper's behind on purpose with --leave-behind and the group's name")


def text(data: Data) -> str:
    """The verdict: ready, or why not (the first line), what it covered, then a table of the
    groups that are not ready and what each needs."""
    watched = data["watched"].get("shown") or exact_duration(data["watched"]["quiet_for"])
    verdicts = {v["group"]: v for v in data["verdicts"]}
    bad = sorted((verdicts[g] for g in data["not_ready"]),
                 key=lambda v: (tuple(not v[p] for p in FIRST), v["group"]))
    if data["ready"]:
        # The groups left behind on purpose are not said to be in Kafka: the count is of the rest.
        kept = set(data.get("left_behind", {}).get("groups", []))
        cleared = [v for v in verdicts.values() if v["group"] not in kept]
        of = f" cleared of {data['groups']:,}" if kept else ""
        lines = [f"ready-for-kraft: ready: every ZooKeeper offset of the {len(cleared):,}{of} "
                 f"group(s) checked under {data['source']} "
                 f"({sum(v['offsets'] for v in cleared):,} offsets) is in "
                 f"Kafka or its group was taken over there; no old consumer registered; nothing "
                 f"written for {watched}; nothing else of this cluster's found in the ensemble"
                 + ("; what is not cleared is left behind on purpose (below)"
                    if _kept(data) else "")]
    else:
        lines = ["ready-for-kraft: NOT READY: " + "; ".join(data.get("blocking") or [
            f"{len(bad):,} of {data['groups']:,} group(s) under {data['source']} would leave "
            f"offsets behind in ZooKeeper"]) + f" (watched {watched} for writes; exit 3)"]
    lines += _covered(data)
    lines += ph.renamed(data.get("group_map"))
    if data.get("short_watch"):
        lines.append(f"warning: {data['short_watch']}")
    lines += ph.clocks(data.get("clocks"))
    lines += expiry(data)   # information after the verdict; what the verdict asks comes last
    if bad:
        lines.append("")
        width = max([len(v["group"]) for v in bad[:SHOWN]] + [5])
        lines.append(f"{'GROUP':<{width}}  " + "  ".join(HEADINGS[p] for p in PROBLEMS))
        for v in bad[:SHOWN]:
            cells = [_cell(v, p).rjust(len(HEADINGS[p])) for p in PROBLEMS]
            lines.append(f"{v['group']:<{width}}  " + "  ".join(cells))
        if len(bad) > SHOWN:
            lines.append(f"... and {len(bad) - SHOWN:,} more (see report.md)")
        lines.append("")
        own = data.get("own_differences", {})
        for v in bad[:DETAILED]:
            for p in PROBLEMS:
                if v[p]:
                    more = f" (+{len(v[p]) - DETAILS} more)" if len(v[p]) > DETAILS else ""
                    lines.append(f"  {v['group']}: {WHAT[p]}: {'; '.join(v[p][:DETAILS])}{more}")
            if own.get(v["group"]):
                mine = "; ".join(own[v["group"]][:DETAILS])
                lines.append(f"  {v['group']}: zk2kafka's own: {mine}")
        found = [p for p in PROBLEMS if any(v[p] for v in bad)]
        move = _move([v["group"] for v in bad if v["not_in_kafka"]], data["report"],
                     flags_text(data), {v["group"] for v in bad if v.get("foreign")})
        lines += ["", *(f"{WHAT[p]}: {_do(p, bad, own, move)}" for p in found)]
    lines += _outside(data)
    lines += _taken_over(verdicts.values())
    gone = [v for v in verdicts.values() if v["topic_gone"]]
    if gone:
        lines.append("left behind with their topic gone from Kafka (blocks nothing): "
                     + "; ".join(f"{v['group']} {', '.join(v['topic_gone'][:DETAILS])}"
                                 for v in gone[:DETAILS]))
    lines.append(f"run={data['run']} report={data['report']}")
    return "\n".join(lines)


def _do(problem: str, bad: list[dict], own: dict[str, list[str]], move: str) -> str:
    """What a problem asks of the operator; a difference zk2kafka made itself said as such."""
    if problem == "not_in_kafka":
        return move
    if problem == "differs" and any(v.get("foreign") for v in bad):
        # Values someone else wrote: the decision is the operator's, whatever zk2kafka wrote too.
        if all(v.get("foreign", 0) >= len(v["differs"]) for v in bad if v["differs"]):
            return DO["foreign"]
        return f"{DO['foreign']}; where zk2kafka wrote Kafka's value: {DO['differs']}"
    if problem == "differs":
        mine = [v for v in bad
                if v["differs"] and len(own.get(v["group"], [])) >= len(v["differs"])]
        if len(mine) == sum(1 for v in bad if v["differs"]):
            return OWN_DIFFERS
        if mine:
            return f"{DO['differs']}; for {', '.join(v['group'] for v in mine)}: {OWN_DIFFERS}"
    return DO[problem]


def _covered(data: Data) -> list[str]:
    """What the verdict covered: the groups checked of those under the root with the selection
    and where it came from, what is left behind on purpose, and the search of the ensemble."""
    selection = ", ".join(f"{s['option']} {shlex.quote(s['pattern'])} ({s['from']})"
                          for s in data.get("selected_by", [])) or "every group and topic"
    lines = [f"checked: {data['groups']:,} of {data.get('under_root', data['groups']):,} "
             f"group(s) under {data['source']}; selection: {selection}"]
    left = data.get("left_behind", {})
    if left.get("patterns"):
        named = ", ".join(f"{s['option']} {shlex.quote(s['pattern'])} ({s['from']})"
                          for s in left["patterns"])
        kept = _kept(data)
        lines.append(f"left behind on purpose ({named}): "
                     + (", ".join(kept[:SHOWN]) + (f" (+{len(kept) - SHOWN} more)"
                                                   if len(kept) > SHOWN else "")
                        if kept else "nothing matched"))
    e = data.get("ensemble")
    if e:
        lines.append(f"ensemble: searched {e['hosts']} from / in {e['seconds']:.1f}s "
                     f"({e['listed']:,} znodes listed, {e['read']:,} offsets read elsewhere; "
                     f"broker metadata and {e['checked_root']} not walked): "
                     f"{len(e['trees']):,} other offsets tree(s) with offsets"
                     + (f"; {e['cut_short']}: raise it to search the rest" if e["cut_short"]
                        else ""))
    return lines


def _kept(data: Data) -> list[str]:
    """What --leave-behind matched: groups, and paths elsewhere in the ensemble."""
    e = data.get("ensemble") or {"elsewhere": [], "unreadable": []}
    return [*data.get("left_behind", {}).get("groups", []),
            *(g["group"] for g in data.get("not_checked", []) if g["left_behind"]),
            *(f["path"] for f in e["elsewhere"] if f["left_behind"]),
            *(u["path"] for u in e["unreadable"] if u["left_behind"])]


def _outside(data: Data) -> list[str]:
    """The groups the selection left out and what the ensemble holds elsewhere, each with what
    to do."""
    lines = []
    unchecked = [g for g in data.get("not_checked", []) if not g["left_behind"]]
    if unchecked:
        lines += ["", "not checked (outside the selection): "
                  + ", ".join(f"{g['group']} ({g['offsets']} offsets)" for g in unchecked[:SHOWN])
                  + (f" (+{len(unchecked) - SHOWN} more)" if len(unchecked) > SHOWN else ""),
                  "  a selection alone never clears the cluster: check them (run without the "
                  "selection), or name them as left behind on purpose with --leave-behind"]
    e = data.get("ensemble")
    if not e:
        return lines
    found = [f for f in e["elsewhere"] if f["blocking"]]
    if found:
        lines += ["", "elsewhere in the ensemble, for this cluster's topics:"]
        for f in found[:SHOWN]:
            for problem, items in f["findings"].items():
                more = f" (+{len(items) - DETAILS} more)" if len(items) > DETAILS else ""
                lines.append(f"  {f['path']}: {WHAT[problem]}: {'; '.join(items[:DETAILS])}{more}")
        lines.append("  move them, their consumers stopped: review the diff of each tree, then "
                     "execute the plan it prints (migrate --execute --plan) with the same "
                     "--zookeeper and --zk-root; or leave a tree behind on purpose with "
                     "--leave-behind and its path")
        lines += [f"  `{command}`" for command in e["move"]]
    listed = [f for f in e["elsewhere"] if not f["blocking"] and not f["left_behind"]]
    if listed:
        lines.append("listed, not blocking: " + "; ".join(
            f"{f['path']} ({_why_not_blocking(f)})" for f in listed[:SHOWN]))
    unreadable = [u for u in e["unreadable"] if not u["left_behind"]]
    if unreadable:
        lines.append("could not list (offsets may lie below): "
                     + "; ".join(f"{u['path']}: {u['why']}" for u in unreadable[:SHOWN])
                     + " (pass --zk-auth with credentials that may list them, or name them as "
                       "left behind on purpose with --leave-behind)")
    return lines


def _why_not_blocking(found: dict) -> str:
    if found["other_cluster"]:
        return f"another Kafka cluster's chroot, cluster id {found['other_cluster']}"
    return f"topics this cluster lacks: {', '.join(found['topic_gone'][:DETAILS])}"


def _taken_over(verdicts) -> list[str]:
    """The groups judged taken over in Kafka, with the values that made it so."""
    lines = []
    for v in verdicts:
        items = v.get("taken_over_offsets", [])
        if items:
            more = f" (+{len(items) - DETAILS} more)" if len(items) > DETAILS else ""
            lines.append(f"taken over in Kafka: {v['group']}: {'; '.join(items[:DETAILS])}{more}")
    return lines


def _move(groups: list[str], report: str, mapping: str = "",
          refused: set[str] = frozenset()) -> str:
    """What moving the groups not in Kafka takes, as commands to paste: the diff and the reviewed
    plan of just those groups, or a rolling switch of them (sync), each with the group `mapping`
    the check was given, as flags. `refused`: groups holding values zk2kafka did not write, which
    sync would leave alone: never named to it."""
    from migrate.report.text import reviewed_plan

    sel = selection(groups) + mapping
    plan = (f"move it: with its consumers stopped, a reviewed plan "
            f"({reviewed_plan(sel, report)})")
    rolling = [g for g in groups if g not in refused]
    if not rolling or (len(rolling) < len(groups) and not selection(rolling)):
        return plan   # sync would meet a group it leaves alone
    sel = selection(rolling) + mapping
    return f"{plan}; or a rolling switch with `zk2kafka sync --execute{sel}`"


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
    verdict = "ready" if data["ready"] else "NOT READY: " + "; ".join(
        data.get("blocking") or [f"{len(data['not_ready']):,} group(s)"])
    lines = [f"# zk2kafka ready-for-kraft: run {data['run']}", "",
             f"**{verdict}.** {data['groups']:,} group(s), {data['offsets']:,} ZooKeeper "
             f"offsets under `{data['source']}` ({data['selection']}), compared with Kafka at "
             f"`{data['bootstrap_server']}`; ZooKeeper watched for writes from "
             f"{data['watched']['from']} to {data['watched']['to']}.", "",
             *(f"- {_md(line)}" for line in (*_covered(data), *ph.clocks(data.get("clocks")))),
             *([f"- warning: {data['short_watch']}"] if data.get("short_watch") else []), "",
             "Evidence kept in the state dir, for after ZooKeeper is gone:", "",
             f"- the final ZooKeeper read: `{data['evidence']['zookeeper']}`",
             f"- the Kafka offsets it was compared with: `{data['evidence']['kafka']}`",
             "- this verdict: `summary.json`, `report.md`", "",
             *_md_expiry(data),
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
    return "\n".join(lines + _md_outside(data)) + "\n"


def _md_outside(data: Data) -> list[str]:
    """report.md's every group the selection left out and every group found elsewhere."""
    lines = []
    if data.get("not_checked"):
        lines += ["", "## Not checked (outside the selection)", ""]
        lines += [f"- `{_md(g['group'])}`: {g['offsets']} offsets"
                  + (" (left behind on purpose)" if g["left_behind"] else "")
                  for g in data["not_checked"]]
    found = (data.get("ensemble") or {}).get("elsewhere", [])
    if found:
        lines += ["", "## Elsewhere in the ensemble", ""]
        for f in found:
            state = ("blocks" if f["blocking"] else "left behind on purpose" if f["left_behind"]
                     else f"listed: {_why_not_blocking(f)}")
            items = [f"{WHAT[p]}: " + "; ".join(v) for p, v in f["findings"].items()]
            items += [f"topic gone: {'; '.join(f['topic_gone'])}"] if f["topic_gone"] else []
            lines.append(f"- `{_md(f['path'])}` ({state}): " + "; ".join(map(_md, items)))
    return lines


def _md_expiry(data: Data) -> list[str]:
    """report.md's section on expiry: every group, not the terminal's first few."""
    lines = expiry(data, most=len((data.get("expiry") or {}).get("groups") or []))
    if not lines:
        return []
    return ["## Offsets Kafka expires", "", lines[1], "",
            *(f"- {_md(line.strip())}" if line.startswith("  ") and "`" not in line
              else f"- {line.strip()}" for line in lines[2:]), ""]


def _md(text: str) -> str:
    # A group or znode name may hold anything ZooKeeper allows: keep each on one table line.
    return re.sub(r"[\r\n|`]", lambda m: {"|": "\\|", "`": "'"}.get(m[0], " "), str(text))
