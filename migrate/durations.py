"""The one grammar of every duration option, from a flag, the environment or the --config file
alike, and the floor of those that pace work on a cluster (migrate/options.py names them)."""

from __future__ import annotations

import re
import threading

from migrate.errors import ConfigError
from migrate.options import exact_duration

# Every duration option's one grammar: a number (fractions too: 1.5s) and a unit, ms, s, m, h or
# d; a bare number is seconds. Signs are read so that -5s is refused as a duration, not a flag.
_DURATION = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_FORMS = ("a duration of 1ms or more, like 500ms, 1.5s, 30s, 5m, 6h or 1d "
                  "(a bare number is seconds)")


def parse_duration(text: str, where: str = "duration", floor: float | None = None,
                   why: str = "") -> float:
    """Seconds from `500ms`, `1.5s`, `30s`, `5m`, `6h`, `1d` or a bare number of seconds; from
    1ms (what a log shows) to what a wait can take, and from `floor` for a duration that paces
    work on a cluster (`why` says what a smaller one would do).

    Raises ConfigError, the same for every duration option and every way of giving it.
    """
    m = _DURATION.match(text)
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"] if m else 0.0
    # Past threading.TIMEOUT_MAX (~292 years) a wait or timer raises OverflowError; 1e400 is inf.
    if not 0.001 <= seconds <= threading.TIMEOUT_MAX:
        raise ConfigError(f"{where}: expected {DURATION_FORMS}, got {text!r}")
    if floor is not None and seconds < floor:
        raise ConfigError(f"{where}: expected {floor_text(floor)}, got {text!r}: {why}")
    return seconds


def floor_text(floor: float) -> str:
    """`1m or more`: the least a floored duration takes, as it is written."""
    return f"{exact_duration(floor)} or more"
