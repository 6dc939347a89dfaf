"""A run as the journal holds it (`Run`), and the digest of the settings it ran with."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from migrate.state import iso


@dataclass(frozen=True)
class Run:
    run_id: str
    kind: str
    state: str
    plan_hash: str
    settings: dict[str, Any]
    settings_digest: str
    rolls_back: str | None
    report: str | None
    created: float
    updated: float
    groups: dict[str, int]   # groups per state
    offsets: int

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run_id, "kind": self.kind, "state": self.state,
                "plan_hash": self.plan_hash, "settings_digest": self.settings_digest,
                "rolls_back": self.rolls_back, "report": self.report,
                "created": iso(self.created), "updated": iso(self.updated),
                "groups": self.groups, "offsets": self.offsets,
                "reviewed_plan": self.settings.get("reviewed_plan"),
                # through --map-group: old -> new of each renamed group (a run without: no key)
                **({"renamed": m} if (m := self.settings.get("group_map")) else {})}


def digest(data: Any) -> str:
    """A stable sha256 of JSON-able data."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
