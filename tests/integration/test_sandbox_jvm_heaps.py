"""`sandbox up --zookeeper-heap --broker-heap`: the JVMs run with the heaps asked for, and status shows them."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import zk2kafka_process


def _max_heap(pid: int) -> list[str]:
    """The -Xmx flags on a running JVM's command line."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return [a for a in args if a.startswith("-Xmx")]


def test_the_sandbox_starts_with_the_heaps_asked_for(tmp_path: Path):
    state = ["--state-dir", str(tmp_path / "state")]
    up = zk2kafka_process("sandbox", "up", "--zookeeper-heap", "96m", "--broker-heap", "640M", *state)
    try:
        assert up.returncode == 0, up.stderr
        report = json.loads(zk2kafka_process("sandbox", "status", "--json", *state).stdout)
        servers = {s["name"]: s for s in report["servers"]}
        assert _max_heap(servers["zookeeper"]["pid"]) == ["-Xmx96m"]
        assert _max_heap(servers["kafka"]["pid"]) == ["-Xmx640M"]
        assert (servers["zookeeper"]["heap"], servers["kafka"]["heap"]) == ("96m", "640M")
        text = zk2kafka_process("sandbox", "status", *state).stdout
        assert "heap 96m" in text and "heap 640M" in text, text

        # The running sandbox is not restarted with another heap: it says so and how to get one.
        again = zk2kafka_process("sandbox", "up", "--broker-heap", "1g", *state)
        assert again.returncode != 0 and "heap of 640M, not 1g" in again.stderr, again.stderr
        assert "zk2kafka sandbox down" in again.stderr
        # The same heaps, or none, find it running.
        assert zk2kafka_process("sandbox", "up", "--broker-heap", "640M", *state).stdout == up.stdout
        assert zk2kafka_process("sandbox", "up", *state).stdout == up.stdout
    finally:
        down = zk2kafka_process("sandbox", "down", *state)
    assert down.returncode == 0, down.stderr
