"""Every duration zk2kafka reads or writes: the one grammar of every duration option, from a flag,
the environment or the --config file alike, the floor of those that pace work on a cluster
(migrate/options.py names them), and each way a duration is shown (as given, as a flag takes it,
as a log line or a report says it)."""

from __future__ import annotations

import math
import re
import threading

from migrate.errors import ConfigError

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


def exact_duration(seconds: float) -> str:
    """A duration as it was given, to the millisecond: 1ms, 1.5s, 90s, 2m; never rounded to a
    value the option was not given."""
    millis = round(seconds * 1000)
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if millis >= size and millis % size == 0:
            return f"{millis // size}{unit}"
    return f"{millis / 1000:g}s" if millis >= 1000 else f"{millis}ms"


def duration_text(seconds: float) -> str:
    """A duration as the duration options take it, rounded up to its largest unit: 90m, 30h, 3d."""
    if seconds >= 2 * 86400:
        return f"{math.ceil(seconds / 86400)}d"
    if seconds >= 3600:
        return f"{math.ceil(seconds / 3600)}h"
    if seconds >= 60:
        return f"{math.ceil(seconds / 60)}m"
    return f"{math.ceil(seconds)}s"


def took(seconds: float) -> str:
    """A span of seconds as the log says it: 0.4s, 80s, 12m05s, 3h02m."""
    if seconds < 9.95:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 120:
        return f"{whole}s"
    if whole < 7200:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def left_text(seconds: int) -> str:
    """Time left, as a warning and an expiry line say it: 6.9 day(s), 5.0 hour(s), or expired."""
    if seconds <= 0:
        return "expired (due now)"
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} day(s)"
    return f"{seconds / 3600:.1f} hour(s)"


def hours_text(seconds: float) -> str:
    """Time left as a report's table says it: 12.5 h."""
    return f"{seconds / 3600:,.1f} h"


def minutes_text(minutes: int) -> str:
    """A whole number of minutes (a broker setting's) in its largest whole unit: 7 day(s), 3
    hour(s), 90 minute(s)."""
    if minutes % 1440 == 0:
        return f"{minutes // 1440} day(s)"
    if minutes % 60 == 0:
        return f"{minutes // 60} hour(s)"
    return f"{minutes} minute(s)"
