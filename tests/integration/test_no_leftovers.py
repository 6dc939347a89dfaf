"""Killing the test process, even with SIGKILL, leaves no JVM behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from support.wait import eventually

HERE = Path(__file__).parent


def _jvms_under(directory: Path) -> list[int]:
    """Pids of the java processes whose command line mentions `directory`."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"java") and any(str(directory).encode() in a for a in argv):
            pids.append(int(proc.name))
    return pids




def test_sigkill_of_the_test_process_leaves_no_jvm(tmp_path: Path):
    basetemp, ready = tmp_path / "victim", tmp_path / "ready"
    env = {**os.environ, "ZK2KAFKA_TEST_BACKEND": "local", "ZK2KAFKA_VICTIM_READY": str(ready)}
    victim = subprocess.Popen(
        [sys.executable, "-m", "pytest", str(HERE / "victim_session.py"), "-q", "-p", "no:cacheprovider",
         f"--basetemp={basetemp}", "--timeout=0"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=HERE.parent.parent)
    try:
        assert eventually(ready.exists, 180), "the victim pytest never got its cluster"
        jvms = _jvms_under(basetemp)
        assert len(jvms) == 3, f"expected ZooKeeper, Kafka and KRaft JVMs, found {jvms}"
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=10)
        assert eventually(lambda: not _jvms_under(basetemp), 15), f"JVMs left behind: {_jvms_under(basetemp)}"
    finally:
        victim.kill()
        for pid in _jvms_under(basetemp):  # never leak into the rest of the suite, even when failing
            os.kill(pid, signal.SIGKILL)
