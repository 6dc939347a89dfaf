"""Running zk2kafka from a test.

In this process (`zk2kafka`, `zk2kafka_json`, `zk2kafka_text`): fast, its output captured, monkeypatch reaches it.
As a process of its own (`zk2kafka_process`, `zk2kafka_bin`): the console script an operator types,
for a kill -9, a sandbox that outlives the command, or a shell pasting what the tool printed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrate import cli

ROOT = Path(__file__).resolve().parents[2]   # the checkout
VENV_BIN = ROOT / ".venv" / "bin"


@dataclass
class Run:
    """One command run in this process: its arguments, exit code, stdout and stderr."""

    argv: list[str]
    code: int
    out: str
    err: str

    @property
    def data(self) -> dict:
        """The --json output, or {} when the command printed none (a usage error, say)."""
        return json.loads(self.out) if self.out.strip() else {}


def zk2kafka(*argv: str, env: dict[str, str] | None = None) -> Run:
    """Run the CLI in this process, stdout and stderr captured (logging too: it writes to sys.stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(out), redirect_stderr(err):
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        code = cli.main(list(argv))
    return Run(list(argv), code, out.getvalue(), err.getvalue())


def zk2kafka_json(*argv: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    """Exit code, the --json output (or {}) and stderr of one quiet command run in this process."""
    run = zk2kafka(*argv, "--json", "-q", env=env)
    return run.code, run.data, run.err


def zk2kafka_text(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one quiet command run in this process: what an operator reads."""
    run = zk2kafka(*argv, "-q", env=env)
    return run.code, run.out, run.err


def connection(cluster, zookeeper: str, state: Path) -> list[str]:
    """The options that point a command at the test cluster and a state dir."""
    return ["--zookeeper", zookeeper, "--bootstrap-server", cluster.bootstrap_server, "--state-dir", str(state)]


def selected(cluster, zookeeper: str, state: Path, prefix: str) -> list[str]:
    """`connection` with this test's groups selected (`prefix.*` is a full match of the name)."""
    return connection(cluster, zookeeper, state) + ["--group", f"{prefix}.*"]


def zk2kafka_bin() -> str:
    """The console script: the checkout's .venv, else the one on PATH."""
    local = VENV_BIN / "zk2kafka"
    found = str(local) if local.exists() else shutil.which("zk2kafka")
    if not found:
        pytest.fail("the zk2kafka console script is not installed: run `make install`")
    return found


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the zk2kafka options of whoever runs the tests, plus `extra`."""
    keep = {"ZK2KAFKA_CACHE_DIR", "ZK2KAFKA_MAVEN_REPO"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZK2KAFKA_") or k in keep}
    env.update(extra)
    return env


def zk2kafka_process(*argv: str, env: dict[str, str] | None = None, cwd: Path | str = ROOT,
                     timeout: float = 300) -> subprocess.CompletedProcess:
    """The console script run to its end in a clean environment (plus `env`); output captured as text."""
    return subprocess.run([zk2kafka_bin(), *argv], capture_output=True, text=True, env=clean_env(**(env or {})),
                          cwd=cwd, timeout=timeout)
