"""Where a run's files live in the state dir, as docs/design.md lists them, how runs are named,
and the timestamp format every file and JSON output uses."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from migrate.errors import StateDirError


# The UTC timestamp of every file and JSON output of zk2kafka (summary.json, the journal's JSON,
# status).
ISO_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def iso(ts: float) -> str:
    """A Unix time (seconds) as an ISO_FORMAT timestamp."""
    return time.strftime(ISO_FORMAT, time.gmtime(ts))


def new_run_id() -> str:
    """A sortable, unique run id: UTC time and a short random suffix, e.g. 20261122T103000Z-3f2a."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)


@dataclass(frozen=True)
class StateDir:
    root: Path

    def zk_snapshot(self, run: str) -> Path:
        return self._dir("snapshots") / f"zk-{run}.parquet"

    def kafka_snapshot(self, run: str) -> Path:
        return self._dir("snapshots") / f"kafka-{run}.parquet"

    def reports(self, run: str) -> Path:
        return self._dir("reports", run)

    def _dir(self, *parts: str) -> Path:
        path = self.root.joinpath(*parts)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateDirError(path, f"cannot create it: {exc.strerror or exc}") from exc
        return path
