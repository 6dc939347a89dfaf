"""The Kafka jars zk2kafka runs (the sandbox; the private ZooKeeper on a copy of a data directory),
pinned with their SHA-256 and fetched from Maven Central once.

`artifacts.lock.json` beside this file lists every jar of each bundle (resolved
once with Maven: `python -m migrate.jvm.artifacts relock`), so a user needs
only Python and Java: jars are downloaded into the cache, verified, and reused
on every later run. A jar already in `~/.m2/repository` is copied from there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from migrate.errors import ArtifactError, JvmError

log = logging.getLogger(__name__)

LOCK_FILE = Path(__file__).with_name("artifacts.lock.json")
DEFAULT_REPOSITORY = "https://repo1.maven.org/maven2"
REPOSITORY_ENV = "ZK2KAFKA_MAVEN_REPO"

# What each bundle is resolved from; `relock` turns these roots into the full pinned list.
BUNDLE_ROOTS: dict[str, list[str]] = {
    # ZooKeeper-mode releases the source side supports, each with the ZooKeeper server, old
    # consumer and tools its release ships. JAXB left the JDK in 11; brokers before 2.x still
    # load javax.xml.bind.
    "kafka-0.10": [
        "org.apache.kafka:kafka_2.11:0.10.2.2",
        "org.slf4j:slf4j-log4j12:1.7.21",
        "javax.xml.bind:jaxb-api:2.3.1",
    ],
    "kafka-1.1": [
        "org.apache.kafka:kafka_2.11:1.1.1",
        "org.slf4j:slf4j-log4j12:1.7.25",
        "javax.xml.bind:jaxb-api:2.3.1",
    ],
    "kafka-2.4": [
        "org.apache.kafka:kafka_2.12:2.4.1",
        "org.slf4j:slf4j-log4j12:1.7.28",
        "javax.xml.bind:jaxb-api:2.3.1",
    ],
    "kafka-2.8": [
        "org.apache.kafka:kafka_2.13:2.8.2",
        "org.slf4j:slf4j-log4j12:1.7.30",
    ],
    "kafka-3.6": [
        "org.apache.kafka:kafka_2.13:3.6.2",
        "org.apache.kafka:kafka-tools:3.6.2",
        "org.slf4j:slf4j-reload4j:1.7.36",  # reload4j is compile-only in Kafka 3.x
    ],
    # The last line with ZooKeeper mode: broker, the ZooKeeper 3.8 server it carries,
    # kafka-consumer-groups.
    "kafka-3.9": [
        "org.apache.kafka:kafka_2.13:3.9.2",
        "org.apache.kafka:kafka-tools:3.9.2",
        "org.slf4j:slf4j-reload4j:1.7.36",  # reload4j is compile-only in Kafka 3.x
    ],
    # MirrorMaker 2 of the last ZooKeeper-mode line, in dedicated mode
    # (org.apache.kafka.connect.mirror.MirrorMaker), copying a ZooKeeper-mode cluster to a KRaft
    # one (sandbox/mirrormaker.py).
    "mm2-3.9": [
        "org.apache.kafka:connect-mirror:3.9.2",
        "org.apache.kafka:connect-mirror-client:3.9.2",
        "org.slf4j:slf4j-reload4j:1.7.36",  # reload4j is compile-only in Kafka 3.x
    ],
    # A KRaft-only 4.x broker, the target of a move to a new cluster.
    "kafka-4": [
        "org.apache.kafka:kafka_2.13:4.1.2",
        "org.apache.kafka:kafka-tools:4.1.2",
        "org.apache.logging.log4j:log4j-slf4j-impl:2.25.3",
    ],
}


@dataclass(frozen=True)
class Artifact:
    group: str
    artifact: str
    version: str
    sha256: str
    size: int

    @property
    def path(self) -> str:
        """Path relative to a Maven repository root."""
        group_dir = self.group.replace(".", "/")
        return f"{group_dir}/{self.artifact}/{self.version}/{self.artifact}-{self.version}.jar"


def load_lock(lock_file: Path = LOCK_FILE) -> dict[str, list[Artifact]]:
    """Bundle name -> pinned artifacts."""
    data = json.loads(lock_file.read_text())
    return {name: [Artifact(**a) for a in bundle["artifacts"]]
            for name, bundle in data["bundles"].items()}


def ensure_bundle(name: str, cache_dir: Path, repository: str | None = None) -> list[Path]:
    """Paths of every jar of bundle `name`, downloading and verifying the missing ones.

    Raises ArtifactError.
    """
    return ensure_artifacts(load_lock()[name], cache_dir, repository)


def ensure_artifacts(artifacts: list[Artifact], cache_dir: Path,
                     repository: str | None = None) -> list[Path]:
    """Local paths of `artifacts` under `cache_dir`, fetching and verifying missing or bad ones."""
    repository = (repository or os.environ.get(REPOSITORY_ENV) or DEFAULT_REPOSITORY).rstrip("/")
    root = cache_dir / "maven"
    missing = [a for a in artifacts if not _is_valid(root / a.path, a)]
    if missing:
        log.info("fetching %d jar(s) into %s from %s", len(missing), root, repository)
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda a: _fetch(a, root / a.path, repository), missing))
    return [root / a.path for a in artifacts]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _is_valid(path: Path, artifact: Artifact) -> bool:
    return (path.is_file() and path.stat().st_size == artifact.size
            and _sha256(path) == artifact.sha256)


def _fetch(artifact: Artifact, dest: Path, repository: str) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    url = f"{repository}/{artifact.path}"
    local = Path("~/.m2/repository").expanduser() / artifact.path
    # Download next to the destination, verify, then rename: a half-written jar is never used.
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            if local.is_file() and local.stat().st_size == artifact.size:
                with local.open("rb") as src:
                    shutil.copyfileobj(src, out)
            else:
                try:
                    with urllib.request.urlopen(url, timeout=60) as response:
                        shutil.copyfileobj(response, out, 1 << 20)
                except (urllib.error.URLError, OSError) as e:
                    raise ArtifactError(f"cannot download {url}: {e}", url=url) from None
        actual = _sha256(tmp)
        if actual != artifact.sha256:
            raise ArtifactError(
                f"checksum mismatch for {url}: expected sha256 {artifact.sha256}, got {actual}; "
                f"the file was not used (a proxy rewriting downloads, or a tampered mirror?)",
                url=url, expected=artifact.sha256, actual=actual)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def relock(lock_file: Path = LOCK_FILE) -> None:
    """Resolve BUNDLE_ROOTS with Maven and rewrite the lock file (a maintainer's step; mvn)."""
    if shutil.which("mvn") is None:
        raise JvmError("relock needs Maven (mvn) on PATH")
    bundles = {}
    for name, roots in BUNDLE_ROOTS.items():
        deps = "".join(
            f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
            f"<version>{v}</version></dependency>"
            for g, a, v in (r.split(":") for r in roots))
        with tempfile.TemporaryDirectory() as work:
            Path(work, "pom.xml").write_text(
                '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
                f"<groupId>zk2kafka</groupId><artifactId>{name}</artifactId><version>0</version>"
                f"<dependencies>{deps}</dependencies></project>")
            listing = Path(work, "deps.txt")
            subprocess.run(["mvn", "-q", "-B", "dependency:list", "-DincludeScope=runtime",
                            "-DoutputAbsoluteArtifactFilename=true", f"-DoutputFile={listing}"],
                           cwd=work, check=True)
            artifacts = []
            for line in listing.read_text().splitlines():
                parts = line.strip().split(":")
                if len(parts) < 6 or parts[2] != "jar":
                    continue
                group, artifact, _, version = parts[:4]
                jar_path = Path(":".join(parts[5:]).split(" ")[0])
                artifacts.append({"group": group, "artifact": artifact, "version": version,
                                  "sha256": _sha256(jar_path), "size": jar_path.stat().st_size})
        artifacts.sort(key=lambda a: (a["group"], a["artifact"]))
        bundles[name] = {"roots": roots, "artifacts": artifacts}
    lock_file.write_text(json.dumps({"bundles": bundles}, indent=1) + "\n")
    counts = ", ".join(f"{n} {len(b['artifacts'])} jars" for n, b in bundles.items())
    print(f"wrote {lock_file}: {counts}")


if __name__ == "__main__":
    if sys.argv[1:] != ["relock"]:
        sys.exit("usage: python -m migrate.jvm.artifacts relock")
    relock()
