"""ready-for-kraft's expiry lines: the groups Kafka holds with no member, when it deletes their
offsets, and what keeps them (their consumers; sync while ZooKeeper answers; renew once it is
gone) or puts them back (the run's evidence); and the `--group` flags its printed commands name
groups with."""

from __future__ import annotations

import shlex
from typing import Any

from migrate.durations import left_text
from migrate.group_map import flags_text
from migrate.options import exactly

Data = dict[str, Any]
DETAILS = 3       # findings per group and problem on the terminal (ready.py's too)
MOST_IN_A_HINT = 10   # groups named in a printed command; past that, the diff of every group


def expiry(data: Data, most: int = DETAILS + 2) -> list[str]:
    """The groups Kafka holds with no member, when it deletes their offsets (the first `most`,
    with the count), and what keeps them or puts them back; nothing when there are none."""
    found = data.get("expiry") or {}
    groups = found.get("groups") or []
    if not groups:
        return []
    minutes = found["effective_minutes"]
    window = ("offsets.retention.minutes unknown" if minutes is None else
              f"offsets.retention.minutes={minutes}"
              + (" (the release's default)" if found["source"] == "release default" else ""))
    lines = ["", f"expiry: Kafka deletes the offsets of {len(groups):,} group(s) it holds with "
                 f"no member ({window}, Kafka {found['broker_version'] or 'release unknown'}):"]
    for g in groups[:most]:
        if g["expires_at"] is None:
            at = f"unknown: {g['unknown']}"
        else:
            last = (f", the last at {g['all_expire_at']}"
                    if g["all_expire_at"] != g["expires_at"] else "")
            seconds = g["time_left_seconds"]
            left = f"{left_text(seconds)}{' left' if seconds > 0 else ''}"
            at = f"at {g['expires_at']} ({left}{last})"
        lines.append(f"  {g['group']}: {at}; {CLOCKS[g['clock']]}")
    if len(groups) > most:
        lines.append(f"  ... and {len(groups) - most:,} more (report.md, summary.json expiry)")
    # sync renews a group by its ZooKeeper name: a renamed one's Kafka group through the mapping
    # (repeated), and not a Kafka group named as an old group that maps elsewhere.
    renamed = (data.get("group_map") or {}).get("renamed") or {}
    zk_name = {new: old for old, new in renamed.items()}
    # Nor a group whose Kafka values zk2kafka did not write: sync leaves those alone.
    renewable = [zk_name.get(g["group"], g["group"]) for g in groups
                 if g["renewable"] and g["group"] not in renamed and not g.get("sync_refuses")]
    refused = [g["group"] for g in groups if g["renewable"] and g.get("sync_refuses")]
    lines.append("  before then: start the new consumers of these groups (a consumer joining "
                 "stops the clock)")
    if renewable:
        sel = selection(renewable) + (flags_text(data) if set(renewable) & renamed.keys() else "")
        lines.append(f"  while ZooKeeper still answers, keep those by commit time: "
                     f"`zk2kafka sync --execute{sel} --renew-every {found['renew_every']}` "
                     f"({RENEWS})")
    if refused:
        lines.append(f"  not renewed by sync, which writes only over values zk2kafka wrote: "
                     f"{', '.join(refused[:DETAILS])}"
                     f"{f' (+{len(refused) - DETAILS} more)' if len(refused) > DETAILS else ''}"
                     f" (Kafka holds values zk2kafka did not write: see above)")
    if renewable:
        # renew names groups as ZooKeeper did and takes a mapping from the journal, not flags.
        lines.append(f"  once ZooKeeper is gone, keep those alive from Kafka and this state dir's "
                     f"journal: `zk2kafka renew --execute{selection(renewable)} --renew-every "
                     f"{found['renew_every']}` (docs/sync.md, \"After ZooKeeper\")")
    lines.append(f"  an offset Kafka deleted all the same: put it back from this run's evidence, "
                 f"{found['evidence']} (runbooks/kraft-in-place.md, \"Offsets Kafka expires\")")
    return lines


CLOCKS = {"commit": "by commit time: a re-commit renews it",
          "became Empty": "since the group became Empty (Kafka 2.1+, KIP-211): no re-commit "
                          "renews it"}
RENEWS = ("a re-commit renews offsets that expire by commit time: a group with no protocol "
          "type, and every group before Kafka 2.1; from 2.1 an Empty consumer group's clock "
          "is when it became Empty, which only a consumer joining stops")


def selection(groups: list[str]) -> str:
    """` --group G ...` naming just those groups (--group is a full-match regex: only its
    metacharacters are escaped); empty past MOST_IN_A_HINT groups, for the whole selection."""
    if not groups or len(groups) > MOST_IN_A_HINT:
        return ""
    return "".join(" --group " + shlex.quote(exactly(g)) for g in groups)
