"""The image `make image` built (docker/Dockerfile), run by podman or Docker against the session's cluster.

Skipped, with the reason, where neither engine is here, the image was not built or it was built from
other code than the checkout's; failed instead when ZK2KAFKA_REQUIRE_IMAGE=1 (CI), so a CI run never
passes without running them. The image is ZK2KAFKA_IMAGE (default zk2kafka:local, what `make image` tags).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("ZK2KAFKA_IMAGE", "zk2kafka:local")
STATE_IN_CONTAINER = "/work/zk2kafka-state"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/container" in item.nodeid.replace(os.sep, "/"):
            item.add_marker(pytest.mark.container)


def unavailable(reason: str):
    """Skip, or fail where the image is required (CI)."""
    if os.environ.get("ZK2KAFKA_REQUIRE_IMAGE") == "1":
        pytest.fail(f"ZK2KAFKA_REQUIRE_IMAGE=1 but {reason}")
    pytest.skip(reason)


def answers(*argv: str, env: dict[str, str] | None = None) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=60, env=env).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@dataclass
class Engine:
    """podman or docker, with the environment it needs on this host (docker/podman-conf)."""

    program: str
    env: dict[str, str]

    def __call__(self, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([self.program, *argv], capture_output=True, text=True, env=self.env,
                              timeout=timeout)


@pytest.fixture(scope="session")
def engine() -> Engine:
    """Docker where an engine answers, else podman: as docker/build-image chooses."""
    if shutil.which("docker") and answers("docker", "info"):
        return Engine("docker", dict(os.environ))
    if shutil.which("podman"):
        conf = subprocess.run([str(ROOT / "docker" / "podman-conf")], capture_output=True, text=True, check=True)
        return Engine("podman", {**os.environ, "CONTAINERS_CONF": conf.stdout.strip()})
    unavailable("neither a Docker engine nor podman is here (apt-get install podman runc)")


@dataclass
class Image:
    engine: Engine
    name: str
    user: str  # the image's USER, uid:gid

    def command(self, *args: str, state: Path, env: dict[str, str], name: str | None = None) -> list[str]:
        """`run` as a cautious operator would: the image's own user, a read-only root with a tmpfs for
        /tmp, the state dir a volume, the host's network (the cluster listens on its loopback)."""
        environment = [f"--env={k}={v}" for k, v in env.items()]
        return [self.engine.program, "run", "--rm", "--init", "--network=host", "--read-only", "--tmpfs=/tmp",
                f"--volume={state}:{STATE_IN_CONTAINER}", *environment,
                *([f"--name={name}"] if name else []), self.name, *args]

    def run(self, *args: str, state: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(*args, state=state, env=env), capture_output=True, text=True,
                              env=self.engine.env, timeout=timeout)

    def state_dir(self, path: Path) -> Path:
        """A host directory the image's user owns, to mount as its state dir."""
        path.mkdir(parents=True, exist_ok=True)
        uid, _, gid = self.user.partition(":")
        if self.engine.program == "podman" and os.geteuid() != 0:
            # Rootless: the image's uid is one of this user's subordinate ids.
            subprocess.run(["podman", "unshare", "chown", f"{uid}:{gid or uid}", str(path)], check=True,
                           env=self.engine.env)
        elif os.geteuid() == 0:
            os.chown(path, int(uid), int(gid or uid))
        else:   # Docker without root here: a directory anyone may write
            path.chmod(0o777)
        return path


# The digest of the package migrate's Python sources as imported: the checkout's here, the image's inside it.
SOURCES_DIGEST = """
import hashlib, pathlib, migrate
root = pathlib.Path(migrate.__file__).parent
digest = hashlib.sha256()
for path in sorted(root.rglob("*.py")):
    digest.update(path.relative_to(root).as_posix().encode() + b"\\0" + path.read_bytes())
print(digest.hexdigest())
"""


@pytest.fixture(scope="session")
def image(engine: Engine) -> Image:
    found = engine("image", "inspect", IMAGE)
    if found.returncode != 0:
        unavailable(f"the image {IMAGE} is not built here (`make image`)")
    (config,) = json.loads(found.stdout)
    user = config["Config"].get("User") or ""
    assert user.partition(":")[0] not in ("", "0", "root"), f"the image runs as {user!r}"
    # An image built from other code than this checkout's would prove nothing about it.
    here = subprocess.run([sys.executable, "-c", SOURCES_DIGEST], capture_output=True, text=True, cwd=ROOT,
                          check=True).stdout.strip()
    inside = engine("run", "--rm", "--entrypoint", "python", IMAGE, "-c", SOURCES_DIGEST, timeout=120)
    assert inside.returncode == 0, inside.stderr
    if inside.stdout.strip() != here:
        unavailable(f"the image {IMAGE} holds other code than this checkout's migrate/ (`make image`)")
    return Image(engine, IMAGE, user)


@pytest.fixture(scope="session")
def compose(engine: Engine) -> list[str]:
    """`docker compose` with Docker, podman-compose (PyPI's: Debian's 1.0 has no `config`) with podman."""
    if engine.program == "docker" and answers("docker", "compose", "version"):
        return ["docker", "compose"]
    if engine.program == "podman" and answers("podman-compose", "config", "--help"):
        return ["podman-compose"]
    unavailable(f"no compose implementation for {engine.program} here (pip install podman-compose)")
