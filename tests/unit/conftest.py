"""The unit tests' one shared fixture: a real local Spark, one per module (a module may stop it)."""

from __future__ import annotations

import pytest

from migrate.diff.run import spark_session


@pytest.fixture(scope="module")
def spark(request):
    session = spark_session("local[2]", f"zk2kafka-unit-{request.module.__name__}")
    yield session
    session.stop()
