"""Offset znode values are parsed faithfully: only a plain non-negative int64 is an offset."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrate.zk.parse import INT64_MAX, MALFORMED, OK, Parsed, parse_decimal, parse_storm, show_raw


@pytest.mark.parametrize("raw, offset", [
    (b"0", 0), (b"42", 42), (b" 42\n", 42), (b"\t17\r\n", 17), (b"0007", 7), (str(INT64_MAX).encode(), INT64_MAX),
])
def test_plain_decimal_values_are_offsets(raw, offset):
    assert parse_decimal(raw) == Parsed(offset, OK)


@pytest.mark.parametrize("raw, reason", [
    (b"", "empty value"), (b"  \n", "empty value"), (b"-1", "negative offset -1"), (b"-42", "negative offset -42"),
    (str(INT64_MAX + 1).encode(), "offset past 2^63-1"), (b"1.5E2", "E-notation"), (b"1e3", "E-notation"),
    (b"12.0", "decimal point"), (b'{"offset": 5}', "JSON where a plain offset"), (b"[5]", "JSON where"),
                                         (b"\xff\xfe\x00", "binary value"),
    (b"12 13", "not a decimal number"), (b"0x1F", "not a decimal number"), (b"+5", "explicitly signed value +5"),
])
def test_everything_else_is_malformed_with_a_reason(raw, reason):
    parsed = parse_decimal(raw)
    assert parsed.status == MALFORMED and parsed.offset is None
    assert reason in parsed.reason


def test_last_semantics_adds_one_and_still_bounds_int64():
    assert parse_decimal(b"41", "last").offset == 42
    assert parse_decimal(str(INT64_MAX).encode(), "last").status == MALFORMED


@given(st.integers(min_value=0, max_value=INT64_MAX), st.sampled_from(["", " ", "\n", "\r\n", "\t"]))
def test_any_int64_round_trips(n, pad):
    assert parse_decimal(f"{pad}{n}{pad}".encode()).offset == n


@given(st.binary(max_size=40))
def test_no_bytes_crash_the_parser(raw):
    parsed = parse_decimal(raw)
    assert (parsed.status == OK) == (parsed.offset is not None)
    assert parsed.offset is None or 0 <= parsed.offset <= INT64_MAX


def test_storm_json():
    doc = {"offset": 1234, "topic": "events", "partition": 3, "broker": {"host": "k1", "port": 9092},
           "topology": {"id": "t-1", "name": "t"}}
    parsed, topic, partition = parse_storm(json.dumps(doc).encode())
    assert (parsed.offset, parsed.status, topic, partition) == (1234, OK, "events", 3)


@pytest.mark.parametrize("raw, reason", [
    (b"1234", "not an object"), (b"{bad json", "not valid JSON"), (b'{"offset": "12"}', "str, not an integer"),
    (b'{"offset": true}', "bool"), (b'{"offset": -3}', "negative"), (b'{"offset": 1.5}', "float"),
])
def test_storm_json_malformed(raw, reason):
    parsed, _, _ = parse_storm(raw)
    assert parsed.status == MALFORMED and reason in parsed.reason


def test_raw_values_are_shown_safely():
    assert show_raw(b" 42\n") == " 42\\n"
    assert show_raw(b"\xff<script>") == "\\xff<script>"
    assert show_raw(b"\x1b[31mred") == "\\x1b[31mred"
    long = show_raw(b"9" * 1000)
    assert len(long) < 250 and long.endswith("(1000 bytes)")


def test_a_huge_decimal_is_malformed_not_a_crash():
    assert parse_decimal(b"7" * 5000) == Parsed(None, MALFORMED, "offset past 2^63-1")
    assert parse_decimal(b"0" * 5000 + b"42").offset == 42
