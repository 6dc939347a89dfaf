"""Where the suite's real servers come from: local JVMs from the pinned Maven jars, or containers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CACHE_DIR = Path(os.environ.get("ZK2KAFKA_CACHE_DIR", "~/.cache/zk2kafka")).expanduser()


def backend() -> str:
    """ZK2KAFKA_TEST_BACKEND=local|testcontainers; the default, auto, takes testcontainers when a Docker
    engine answers, else local JVMs."""
    from migrate.testing.containers import docker_engine_answers

    chosen = os.environ.get("ZK2KAFKA_TEST_BACKEND", "auto")
    if chosen == "auto":
        return "testcontainers" if docker_engine_answers() else "local"
    if chosen not in ("local", "testcontainers"):
        raise pytest.UsageError(f"ZK2KAFKA_TEST_BACKEND must be local, testcontainers or auto, not {chosen!r}")
    return chosen
