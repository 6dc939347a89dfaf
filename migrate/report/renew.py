"""What `renew` prints: its passes, what it renewed, and each group it left alone with why."""

from __future__ import annotations

from typing import Any

SHOWN = 10   # groups left alone named on the terminal; --json holds them all


def text(data: dict[str, Any]) -> str:
    last = data["last_pass"]
    if data["dry_run"]:
        would = sum(last["renewed"].values())
        lines = [f"renew (dry run): would re-commit {would:,} of the {data['offsets']:,} "
                 f"offset(s) zk2kafka wrote in {data['groups']:,} group(s), each with the "
                 "offset and metadata Kafka holds; nothing written (add --execute)"]
    else:
        every = f", every {data['every']}" if data["every"] else ""
        failed = (f" ({data['failed_passes']:,} more failed, each tried again)"
                  if data.get("failed_passes") else "")
        lines = [f"renew {data['run']}: {data['passes']:,} pass(es){every}{failed}: "
                 f"{data['renewals']:,} offset(s) re-committed as Kafka held them, in "
                 f"{len(data['renewed_groups']):,} of the {data['groups']:,} group(s) zk2kafka "
                 f"wrote ({data['offsets']:,} offset(s))"]
    alone = sorted(last["left_alone"].items())
    if alone:
        lines.append(f"left alone in the last pass: {len(alone):,} group(s)")
        lines += [f"  {group}: {why}" for group, why in alone[:SHOWN]]
        if len(alone) > SHOWN:
            lines.append(f"  ... and {len(alone) - SHOWN:,} more (--json: last_pass.left_alone)")
    return "\n".join(lines)
