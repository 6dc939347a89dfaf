"""Advice as zk2kafka prints it, and an operator's shell to paste it into."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from support.cli import ROOT, clean_env, zk2kafka_bin

HINT = re.compile(r"`(zk2kafka [^`]+)`")   # a command line printed as advice, between backticks


def operator_shell(cluster, zookeeper: str, state: Path) -> dict[str, str]:
    return clean_env(ZK2KAFKA_ZOOKEEPER=zookeeper, ZK2KAFKA_BOOTSTRAP_SERVER=cluster.bootstrap_server,
                     ZK2KAFKA_STATE_DIR=str(state),
                     PATH=os.pathsep.join([str(Path(zk2kafka_bin()).parent), os.environ.get("PATH", "")]))


def paste(shell: dict[str, str], line: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """One command line as an operator pastes it into the shell."""
    return subprocess.run(["bash", "-c", line], env=shell, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def hints(text: str) -> list[str]:
    return HINT.findall(text)
