"""Faithful parsing of offset znode values: what is not plainly a non-negative int64 is
MALFORMED, never guessed.

Seen in the wild: decimal strings with whitespace or a trailing newline (fine),
`-1`, values past 2^63-1, E-notation, JSON (storm-kafka; parsed only where the
layout says the value is JSON), empty values and binary junk.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import NamedTuple

OK, MALFORMED, UNREADABLE = "OK", "MALFORMED", "UNREADABLE"
INT64_MAX = 2**63 - 1
RAW_SHOWN = 200  # characters of a raw value kept in snapshots and reports
_DECIMAL = re.compile(rb"[0-9]+")
_SIGNED = re.compile(rb"[+-]?[0-9]+")
_FLOATISH = re.compile(rb"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class Parsed:
    """The outcome for one znode: `offset` is set only when `status` is OK."""

    offset: int | None
    status: str
    reason: str = ""


def show_raw(raw: bytes | None) -> str | None:
    """A raw value made safe to print: valid UTF-8 kept (control characters escaped), other bytes
    as \\xNN, cut short."""
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="backslashreplace")
    text = "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode()
                   for c in text)
    return text if len(text) <= RAW_SHOWN else text[:RAW_SHOWN] + f"...({len(raw)} bytes)"


def parse_decimal(raw: bytes, semantics: str = "next") -> Parsed:
    """Parse a plain offset znode; `semantics="last"` adds one (it held the last one processed)."""
    value = raw.strip()
    if not value:
        return Parsed(None, MALFORMED, "empty value")
    if _DECIMAL.fullmatch(value):
        digits = value.lstrip(b"0") or b"0"
        if len(digits) > 19:   # past int64 for sure, and int() refuses over 4,300 digits
            return Parsed(None, MALFORMED, "offset past 2^63-1")
        return _checked(int(digits), semantics)
    if _SIGNED.fullmatch(value):
        kind = "negative offset" if value.startswith(b"-") else "explicitly signed value"
        return Parsed(None, MALFORMED, f"{kind} {value.decode()}")
    if _FLOATISH.fullmatch(value):
        return Parsed(None, MALFORMED, "not an integer (decimal point or E-notation)")
    if value[:1] in (b"{", b"["):
        return Parsed(None, MALFORMED, "JSON where a plain offset was expected")
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return Parsed(None, MALFORMED, "binary value")
    return Parsed(None, MALFORMED, "not a decimal number")


class StormValue(NamedTuple):
    """A storm-kafka spout znode: its parsed offset, and the topic and partition it names."""

    parsed: Parsed
    topic: str | None
    partition: int | None


def parse_storm(raw: bytes, semantics: str = "next") -> StormValue:
    """Parse a storm-kafka spout znode: `{"offset": N, "topic": "...", "partition": P, ...}`.

    Topic and partition are None when the JSON does not name them.
    """
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return StormValue(Parsed(None, MALFORMED, "not valid JSON (storm-kafka layout)"),
                          None, None)
    if not isinstance(doc, dict):
        return StormValue(Parsed(None, MALFORMED, "JSON is not an object (storm-kafka layout)"),
                          None, None)
    topic = doc.get("topic") if isinstance(doc.get("topic"), str) else None
    partition = doc.get("partition") if type(doc.get("partition")) is int else None
    offset = doc.get("offset")
    if type(offset) is not int:  # bool is an int subclass: true must not become offset 1
        why = f"JSON offset is {type(offset).__name__}, not an integer"
        return StormValue(Parsed(None, MALFORMED, why), topic, partition)
    if offset < 0:
        return StormValue(Parsed(None, MALFORMED, f"negative offset {offset}"), topic, partition)
    return StormValue(_checked(offset, semantics), topic, partition)


def _checked(offset: int, semantics: str) -> Parsed:
    if semantics == "last":
        offset += 1
    if offset > INT64_MAX:
        return Parsed(None, MALFORMED, "offset past 2^63-1")
    return Parsed(offset, OK)
