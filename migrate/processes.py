"""Whether a process still runs: the sandbox's JVMs, and the command a writer process serves."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while process `pid` runs (a zombie child of ours is reaped and counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True
