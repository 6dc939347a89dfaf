"""Polling a real server until it gets there, and a port to give one."""

from __future__ import annotations

import time

from kafka.errors import KafkaError

from migrate.jvm.server import free_port

__all__ = ["free_port", "wait_for", "eventually"]


# What a server on its way back raises: not yet, rather than a failure.
NOT_YET = (OSError, KafkaError)


def wait_for(what: str, check, timeout: float = 30.0, every: float = 0.1):
    """Poll `check()` until it returns a truthy value (returned); fail the test after `timeout` seconds.

    A check that raises OSError or KafkaError (a server restarting) has not got there yet."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except NOT_YET as exc:
            last = exc
        if time.monotonic() >= deadline:
            break
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}"
                         + (f" (last error: {last!r})" if last else ""))


def eventually(check, timeout: float, every: float = 0.2) -> bool:
    """Whether `check()` became truthy within `timeout` seconds (for an assertion with its own message)."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(every)
