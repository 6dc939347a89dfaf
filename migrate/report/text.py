"""The terminal text of every command, rendered only from the data its --json prints.

Each function takes one command's data dict and returns its text, so the two cannot disagree.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from migrate.diff.retention import expiry_lines
from migrate.diff.schema import BLOCKERS, CONFLICT, IN_SYNC, KAFKA_ONLY
from migrate.group_map import flags_text
from migrate.report import phrases as ph

Data = dict[str, Any]

SHOWN = 20   # rows of a list printed on the terminal; the data holds them all


def scan(data: Data) -> str:
    """scan: what was read, per status and layout, and where the snapshot is."""
    rate = data["offsets"] / data["seconds"] if data["seconds"] > 0 else 0
    lines = [f"scanned {data['groups']} groups, {data['offsets']} offsets from {data['source']} "
             f"in {data['seconds']:.1f}s ({rate:,.0f}/s)"]
    lines += [f"  {status:<11} {n:>9,}" for status, n in data["counts"].items()]
    lines.append("layouts: " + ", ".join(f"{k} {v:,}" for k, v in data["layouts"].items()))
    live = data["groups_with_live_zk_consumers"]
    copy = data.get("zookeeper_data")
    if copy:
        lines += _data_dir(copy)
    if live:
        # A data directory's registrations are what the copy held, not consumers running now.
        held = "registered in the copy" if copy else "still registered"
        lines.append(f"groups with old consumers {held}: {len(live)} ({_some(live)})")
    lines += [f"snapshot: {data['snapshot']}", f"run={data['run']} report={data['report']}"]
    return "\n".join(lines)


def _data_dir(copy: Data) -> list[str]:
    """scan --zookeeper-data: what the private server loaded, and what liveness means there."""
    onto = f"snapshot {copy['snapshot_zxid']}" if copy["snapshot_zxid"] else "no snapshot"
    logs = f" and {copy['log_dir']}" if copy["log_dir"] else ""
    lines = [f"data directory: {copy['dir']}{logs}, read by {copy['read_with']} on a copy "
             f"(loaded in {copy['load_seconds']:.1f}s): last zxid {copy['last_zxid']} "
             f"({copy['logs_replayed']} logs replayed onto {onto})",
             "liveness (ids/, owners/): as the copy held it, not live"]
    lines += [f"warning: {w}" for w in copy["warnings"]]
    if copy.get("ephemerals_expired"):
        lines.append(f"warning: {copy['ephemerals_expired']} registrations of the copy expired "
                     "while it was read (ZooKeeper ends restored sessions after their timeout); "
                     "the liveness columns may miss them")
    return lines + _elsewhere_in_copy(copy.get("elsewhere"))


def _elsewhere_in_copy(found: Data | None) -> list[str]:
    """The other offsets trees the copy holds, each with the scan that reads it; it informs."""
    if not found:
        return []
    searched = f"searched from / ({found['listed']:,} znodes listed in {found['seconds']:.1f}s)"
    trees = found["trees"]
    lines = [f"elsewhere in the copy: {len(trees)} other offsets tree(s), {searched}"
             + (":" if trees else "")]
    lines += [f"  {t['path']}: {t['groups']:,} groups, {t['offsets']:,} offsets: `{t['scan']}`"
              for t in trees[:SHOWN]]
    if len(trees) > SHOWN:
        lines.append(f"  ... and {len(trees) - SHOWN} more (scan.json zookeeper_data.elsewhere)")
    if found["cut_short"]:
        lines.append(f"warning: the search of the copy {found['cut_short']}: other trees may "
                     "lie in what it did not list")
    if found["unreadable"]:
        lines.append("warning: the search could not list " + "; ".join(found["unreadable"][:SHOWN]))
    return lines


def plan(data: Data) -> str:
    """diff: the summary table an operator reads, then the report files and the run line."""
    spark = data["spark"]
    lines = [f"{data['offsets']:,} offsets in {data['groups']:,} groups "
             f"(Spark {spark['master']}: start {spark['startup_seconds']:.1f}s, "
             f"diff {spark['diff_seconds']:.1f}s)"]
    lines += [f"  {name:<18} {n:>9,}{'  blocker' if name in BLOCKERS else ''}"
              for name, n in data["counts"].items() if n]
    planned = data["planned"]
    lines.append(f"planned: commit {planned['commit_offsets']:,} offsets "
                 f"in {planned['commit_groups']:,} groups")
    lines.append("ZooKeeper side: " + ph.zookeeper_side(data["inputs"]))
    lines += ph.renamed(data["inputs"].get("group_map"))
    lines += [*ph.zk_changes(data), *ph.no_offset(data), *ph.plan_clocks(data)]
    lines.append(f"blockers: {data['blockers']:,}"
                 + (" (see the report; exit 3)" if data["blockers"] else ""))
    lines += _blocked(data.get("blocked", {}))
    lines += [f"warning: {w}" for w in data["warnings"]]
    lines += expiry_lines(data.get("retention") or {})
    lines += [f"{name}: {path}" for name, path in data["files"].items()
              if name in ("markdown", "html", "reset_offsets", "no_offset")]
    # The plan id sits before report=: scripts that take the report path as the line's tail
    # still do.
    lines.append(f"run={data['run']} plan={data['plan_id']} report={data['report']}")
    return "\n".join(lines)


def migrate_dry_run(data: Data) -> str:
    """migrate without --execute: the plan, and that nothing was written."""
    *lines, run_line = plan(data).split("\n")
    return "\n".join([*lines, "dry run: nothing was written; add --execute to commit the plan",
                      run_line])


def run(data: Data) -> str:
    """A journaled run's pass (migrate --execute, --resume, --plan; rollback --execute)."""
    counts = _counts(data["groups"])
    done = "restored" if data["kind"] == "rollback" else "written"
    lines = [f"{data['kind']} {data['run']}: {data['written']:,} offsets {done} this time; "
             f"groups: {counts}"]
    lines += [f"  {r['state']}: {r['group']}: {r['reason']}" for r in data["reasons"]
              if r["state"] in ("failed", "partial")][:SHOWN]
    lines += [f"  unfinished: {r['group']}: {r['reason']}" for r in data["reasons"]
              if r["reason"] and r["state"] not in ("failed", "partial")][:SHOWN]
    lines += _blocked(data.get("blocked", {}))
    lines += [f"warning: {w}" for w in data.get("warnings", [])]
    lines += _snapshot_side(data)
    if data["state"] != "done":
        again = (f"migrate --execute --resume {data['run']}" if data["kind"] == "migrate"
                 else f"rollback --execute {data['rolls_back']}")
        lines.append(("interrupted" if data["interrupted"] else "incomplete")
                     + f": `zk2kafka {again}` goes on from here")
    elif data["blockers"]:
        lines.append(f"the plan has {data['blockers']:,} blocker row(s) (see the report); exit 3")
    run_line = f"run={data['run']} report={data['report']}"
    if "plan_id" not in data:
        return "\n".join([*lines, run_line])
    # A reviewed plan's run: what moved since the review, and the plan on the run line.
    moved, groups = data["moved"], data["groups"]
    if moved and not data["interrupted"] and groups["failed"] == len(moved) and not any(
            groups[state] for state in ("pending", "committed", "partial")):
        # Only groups that moved since the review are left: a resume would refuse them again;
        # a fresh diff is what helps.
        lines = [line for line in lines if not line.startswith("incomplete:")]
    lines += _applied(data.get("already_applied", {}))
    lines += _moved(moved, data["plan_id"], data["report"], _again(data))
    return "\n".join([*lines, run_line.replace(" report=", f" plan={data['plan_id']} report=", 1)])


def reviewed_dry_run(data: Data) -> str:
    """migrate --plan without --execute: what would be written, what moved since the review."""
    would, failed, moved = data["would_write"], data["failed"], data["moved"]
    lines = [f"plan {data['plan_id']}: would write {sum(would.values()):,} offsets "
             f"in {len(would):,} group(s) as reviewed; "
             f"{len(moved):,} group(s) moved since the review"]
    lines += [f"  would write: {g}: {n:,} offset(s)" for g, n in would.items()][:SHOWN]
    lines += [f"  moved: {g}: {why}" for g, why in failed.items() if g in moved][:SHOWN]
    lines += [f"  not checked: {g}: {why}" for g, why in failed.items() if g not in moved][:SHOWN]
    lines += _applied(data.get("already_applied", {}))
    lines += [f"warning: {w}" for w in data.get("warnings", [])]
    lines += _snapshot_side(data)
    lines += _blocked(data.get("blocked", {}))
    if data["blockers"]:
        lines.append(f"the plan has {data['blockers']:,} blocker row(s), left alone as reviewed "
                     f"(see {Path(data['report']) / 'report.md'})")
    lines += _moved(list(moved), data["plan_id"], data["report"], _again(data))
    lines.append("dry run: nothing was written; add --execute to write this plan")
    lines.append(f"run={data['run']} plan={data['plan_id']} report={data['report']}")
    return "\n".join(lines)


def already_applied(data: Data) -> str:
    """migrate --plan of a plan every group of which holds what an earlier run of it wrote."""
    runs = sorted(set(data["already_applied"].values()))
    lines = [f"plan {data['plan_id']}: already applied: {len(data['already_applied']):,} "
             f"group(s) hold what run {', '.join(runs)} wrote; nothing "
             + ("would be" if data["dry_run"] else "was") + " written"]
    if data["blockers"]:
        lines.append(f"the plan has {data['blockers']:,} blocker row(s), left alone as reviewed "
                     f"(see {Path(data['report']) / 'report.md'}); exit 3")
    lines.append(f"run={runs[-1]} plan={data['plan_id']} report={data['report']}")
    return "\n".join(lines)


def _applied(applied: dict[str, str]) -> list[str]:
    """The groups an earlier run of the plan wrote, which still hold what it wrote."""
    if not applied:
        return []
    runs = ", ".join(sorted(set(applied.values())))
    return [f"already applied: {len(applied):,} group(s) hold what run {runs} wrote, "
            f"not written again: {_some(sorted(applied))}"]


def resume_dry_run(data: Data) -> str:
    """migrate --resume without --execute: what the resume would write, and what it would not."""
    would, failed = data["would_write"], data["failed"]
    verified = data["groups"].get("verified", 0)
    lines = [f"resume of {data['run']} ({data['state']}): would write "
             f"{sum(would.values()):,} offsets in {len(would):,} group(s); "
             f"{verified:,} group(s) verified already, left as they are"]
    lines += [f"  would write: {g}: {n:,} offset(s)" for g, n in would.items()][:SHOWN]
    lines += [f"  would not write: {g}: {why}" for g, why in failed.items()][:SHOWN]
    lines.append(f"dry run: nothing was written; `zk2kafka migrate --execute --resume "
                 f"{data['run']}` resumes it")
    plan = f" plan={data['plan_id']}" if data["plan_id"] else ""
    lines.append(f"run={data['run']}{plan} report={data['report']}")
    return "\n".join(lines)


_REGEX_META = re.compile(r"([.^$*+?{}()|\[\]\\])")


def _live_zookeeper(data: Data) -> str:
    """The `--zookeeper` a fresh diff of a plan read from a snapshot takes: the ZooKeeper it was
    checked against, which answers (the diff reads it live; the shell need not name it)."""
    address = (data.get("zookeeper_side") or {}).get("zookeeper")
    return f" --zookeeper {shlex.quote(address)}" if address else ""


def _again(data: Data) -> str:
    """The options a fresh diff of a reviewed plan's groups repeats, and its plan run with: the
    ZooKeeper it reads, and the group mapping the plan was made with."""
    return _live_zookeeper(data) + flags_text({"group_map": {"flags": data.get("group_map_flags")}})


def _moved(moved: list[str], plan_id: str, report: str, options: str = "") -> list[str]:
    """What to do about groups that moved since the review: a fresh diff of just those (with
    `options` before the selection), reviewed, then its plan."""
    if not moved:
        return []
    # --group is a full-match regex: only its metacharacters are escaped, so the usual names read
    # as they are.
    fresh = options + "".join(" --group " + shlex.quote(_REGEX_META.sub(r"\\\1", g))
                              for g in moved)
    return [f"moved since the review of {plan_id}: {len(moved):,} group(s), not written: "
            f"{_some(moved)}",
            f"  a fresh diff of just those (with the same connection options), "
            f"{reviewed_plan(fresh, report)}"]


def reviewed_plan(selection: str, report: str) -> str:
    """The diff of `selection` (` --group G ...`, or empty for the whole selection), its report to
    review and its plan to execute, as three command lines that paste into one shell as printed:
    the diff keeps its plan id in $PLAN. `report`: a report folder of the same state dir, whose
    parent holds the diff's."""
    reports = shlex.quote(str(Path(report).parent))
    return (f"its plan id kept in $PLAN: "
            f"`PLAN=$(zk2kafka diff{selection} --json | jq -r .plan_id)`; "
            f"review its report (`less {reports}/\"${{PLAN%@*}}\"/report.md`), then "
            f"`zk2kafka migrate --execute --plan \"$PLAN\"{selection}`")


def verify(data: Data) -> str:
    """verify: a fresh diff, IN_SYNC or not."""
    counts, mismatched = data["counts"], data["mismatched"]
    checked = data["offsets"] - counts[KAFKA_ONLY]
    lines = [f"verify: {counts[IN_SYNC]:,} of {checked:,} ZooKeeper offsets equal Kafka's",
             "ZooKeeper side: " + ph.zookeeper_side(data["inputs"])]
    lines += [f"  {k:<18} {n:>9,}" + (_which_way(data) if k == CONFLICT else "")
              for k, n in mismatched.items()]
    lines.append("verified: every selected offset is IN_SYNC" if not mismatched
                 else f"mismatch: {sum(mismatched.values()):,} offset(s) differ; "
                      f"see {data['files']['markdown']} (exit 3)")
    lines.append(f"run={data['run']} report={data['report']}")
    return "\n".join(lines)


def _which_way(data: Data) -> str:
    """Where Kafka differs: ahead of ZooKeeper (a consumer moved on, as it should once the new
    consumers run) or behind it (rewound: a reset, or another writer; or a row no run wrote, such
    as a blocker left alone: a fresh plan cannot tell which rows a run wrote)."""
    ahead, behind = data.get("kafka_ahead", 0), data.get("kafka_behind", 0)
    parts = []
    if ahead:
        parts.append(f"Kafka ahead in {ahead:,} (a consumer moved on past the migrated offset)")
    if behind:
        parts.append(f"Kafka behind in {behind:,} "
                     "(below ZooKeeper's offset: rewound, or never migrated)")
    return ": " + "; ".join(parts) if parts else ""


def verify_run(data: Data) -> str:
    """verify --run: the offsets a run wrote, still holding its values or not."""
    plan_id, checked, differ = data["reviewed_plan"], data["checked"], data["differ"]
    skipped = data.get("zookeeper_not_consulted")
    stores = "Kafka and ZooKeeper" if data["wrote_zookeeper"] and not skipped else "Kafka"
    lines = [f"verify of run {data['run']}{f' (plan {plan_id})' if plan_id else ''}: "
             f"{checked - len(differ):,} of {checked:,} offsets it wrote "
             f"in {data['groups_written']:,} group(s) still hold its values in {stores}"]
    if skipped:
        lines.append(f"ZooKeeper was not consulted ({skipped}): the run wrote it too, and only "
                     "Kafka was checked")
    lines += [f"  differs: {d}" for d in differ[:SHOWN]]
    others = data["not_written"]
    if others:
        lines.append("groups the run did not write: " + _counts(others)
                     + f" (`zk2kafka status {data['run']}` says why)")
    if data["rolled_back_by"] is not None:
        by = data["rolled_back_by"]
        lines.append(f"the run was rolled back by {by['run']} ({by['state']})")
    if not checked:
        lines.append("nothing verified: the run wrote no offsets (exit 3)")
    elif differ:
        lines.append(f"mismatch: {len(differ):,} offset(s) no longer hold what the run wrote "
                     "(exit 3)")
    else:
        lines.append("verified: every offset the run wrote holds its value")
    plan = f" plan={plan_id}" if plan_id else ""
    lines.append(f"run={data['run']}{plan} report={data['report']}")
    return "\n".join(lines)


def sync(data: Data) -> str:
    """sync, once stopped: what it mirrored, and the groups ready, stopped or not mirrorable."""
    stopped, unmirrored = data["groups_stopped"], data["groups_unmirrored"]
    lines = [f"sync {data['run']}: stopped after {data['seconds']:.0f}s; "
             f"{data['offsets_mirrored']:,} offset change(s) mirrored in {data['commits']:,} "
             f"commit(s), {data['renewals']:,} renewal(s)"
             + (" (dry run: nothing was written)" if data["dry_run"] else ""),
             f"groups synced: {len(data['groups_synced'])}; "
             f"ready to switch: {len(data['groups_ready'])}; stopped: {len(stopped)}"]
    lines += [f"  stopped: {g}: {why}" for g, why in stopped.items()][:SHOWN]
    if unmirrored:
        lines.append(f"groups with rows sync cannot mirror (never called ready): {len(unmirrored)}")
        lines += [f"  not mirrored: {g} {row}: {why}"
                  for g, rows in unmirrored.items() for row, why in rows.items()][:SHOWN]
    lines.append(f"run={data['run']} report={data['report']}")
    return "\n".join(lines)


def rollback_dry_run(data: Data) -> str:
    """rollback without --execute: what it would restore."""
    stores = "Kafka and ZooKeeper" if data["wrote_zookeeper"] else "Kafka"
    return (f"rollback of {data['run']} would restore {data['offsets']:,} offsets "
            f"in {data['groups']:,} groups ({stores}) to the values journaled before it wrote\n"
            "dry run: nothing was written; add --execute to roll back")


def status(data: Data) -> str:
    """The runs in the journal, or one run's groups by state with the reasons of failed ones."""
    if "missing_journal" in data:
        return f"no runs yet: {data['missing_journal']} does not exist"
    if "runs" in data:
        lines = [f"{'run':<24} {'kind':<9} {'state':<11} {'offsets':>9}  groups"]
        lines += [f"{r['run']:<24} {r['kind']:<9} {r['state']:<11} {r['offsets']:>9,}  "
                  + _counts(r["groups"])
                  + (f"  (rolls back {r['rolls_back']})" if r["rolls_back"] else "")
                  for r in data["runs"]]
        return "\n".join(lines)
    lines = [f"{data['kind']} {data['run']}: {data['state']}; created {data['created']}, "
             f"updated {data['updated']}",
             f"groups: {_counts(data['groups'])}",
             f"offsets: {data['offsets']:,}; report: {data['report']}"
             + (f"; executed the reviewed plan {data['reviewed_plan']}"
                if data["reviewed_plan"] else "")]
    # The journal lists groups by name: failed and partial ones merge back into that order.
    failed = [(g, "failed", why) for g, why in data["failed"].items()]
    failed += [(g, "partial", why) for g, why in data["partial"].items()]
    lines += [f"  {state}: {g}: {why}" for g, state, why in sorted(failed)]
    if data.get("renamed"):
        lines += ph.renamed({"renamed": data["renamed"]})
    lines += _blocked(data.get("blocked", {}))
    if data["state"] == "interrupted":
        lines.append("interrupted: its process is gone (nothing holds this state dir's writers' "
                     "lock: killed, or crashed)" + _goes_on(data))
    return "\n".join(lines)


def _goes_on(data: Data) -> str:
    """The command that goes on with an unfinished run, as `; … goes on from here`."""
    if data["kind"] == "migrate":
        return f"; `zk2kafka migrate --execute --resume {data['run']}` goes on from here"
    if data["kind"] == "rollback":
        return f"; `zk2kafka rollback --execute {data['rolls_back']}` goes on from here"
    return ""


def _snapshot_side(data: Data) -> list[str]:
    """A run of a plan read from a snapshot: whether it wrote ZooKeeper, and checked it how."""
    side = data.get("zookeeper_side")
    if not side:
        return []
    written = "kept in agreement:" if side.get("dual_commit") else \
        "not written (--no-zk-write implied);"
    return [f"ZooKeeper side: a snapshot; ZooKeeper {written} {side['rechecked']}"]


def _blocked(blocked: dict[str, str]) -> list[str]:
    """The groups with blocker rows, each with why (the first SHOWN)."""
    lines = [f"  blocker rows: {g}: {why}" for g, why in blocked.items()][:SHOWN]
    if len(blocked) > SHOWN:
        lines.append(f"  ... and {len(blocked) - SHOWN:,} more group(s) with blocker rows "
                     "(the report lists them)")
    return lines


def _counts(counts: dict[str, int]) -> str:
    """`state n, ...` for the states that have any."""
    return ", ".join(f"{state} {n:,}" for state, n in counts.items() if n)


def _some(names: list[str], most: int = 10) -> str:
    return ", ".join(names[:most]) + (" ..." if len(names) > most else "")
