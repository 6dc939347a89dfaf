"""What every command returns: text for people, data for --json, an exit code (printed by
migrate/cli.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from migrate.errors import EXIT_OK


@dataclass(frozen=True)
class Result:
    """What a command prints on stdout: text for people, `data` for --json, and its exit code."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)
    exit_code: int = EXIT_OK

    def render(self) -> str:
        return self.text

    def to_json(self) -> dict[str, Any]:
        return self.data
