"""Advice as zk2kafka prints it, and an operator's shell to paste it into."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from support.cli import ROOT, clean_env, zk2kafka_bin

# A command line printed as advice, between backticks: `zk2kafka ...`, or `NAME=$(zk2kafka ...)` that keeps
# what the command prints in a shell variable for the next line (`zk2kafka ... --plan "$NAME"`).
HINT = re.compile(r"`((?:[A-Z_]+=\$\()?zk2kafka [^`]+)`")
REVIEW = re.compile(r"`(less [^`]+)`")   # a report to read, printed between a diff and its plan


def operator_shell(cluster, zookeeper: str, state: Path) -> dict[str, str]:
    return clean_env(ZK2KAFKA_ZOOKEEPER=zookeeper, ZK2KAFKA_BOOTSTRAP_SERVER=cluster.bootstrap_server,
                     ZK2KAFKA_STATE_DIR=str(state),
                     PATH=os.pathsep.join([str(Path(zk2kafka_bin()).parent), os.environ.get("PATH", "")]))


def paste(shell: dict[str, str], line: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """One command line as an operator pastes it into the shell."""
    return subprocess.run(["bash", "-c", line], env=shell, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def hints(text: str) -> list[str]:
    return HINT.findall(text)


def reviewed_plan(text: str) -> tuple[str, str, str]:
    """The last diff, report and plan printed as advice: `PLAN=$(zk2kafka diff ...)`, `less ...`, and the
    `zk2kafka migrate --execute --plan "$PLAN" ...` that follows them."""
    diff = [h for h in hints(text) if h.startswith("PLAN=$(zk2kafka diff")][-1]
    execute = [h for h in hints(text) if h.startswith("zk2kafka migrate ") and '--execute --plan "$PLAN"' in h][-1]
    return diff, REVIEW.findall(text)[-1], execute


def paste_lines(shell: dict[str, str], *lines: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Command lines pasted one after the other into the same shell (a variable one sets is there for the
    next); the exit code is the last one's, and any line that fails stops the paste."""
    return paste(shell, "set -e\n" + "\n".join(lines), timeout)
