"""Pinned jars are fetched once, verified, reused; a checksum mismatch is a clear error and nothing is kept."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from migrate.errors import ArtifactError
from migrate.sandbox.artifacts import Artifact, ensure_artifacts, load_lock


def _repo_with(tmp_path: Path, content: bytes) -> tuple[str, Artifact]:
    artifact = Artifact("org.example", "demo-lib", "1.0", hashlib.sha256(b"the real jar").hexdigest(),
                        len(b"the real jar"))
    jar = tmp_path / "repo" / artifact.path
    jar.parent.mkdir(parents=True)
    jar.write_bytes(content)
    return (tmp_path / "repo").as_uri(), artifact


def test_download_is_verified_cached_and_reused(tmp_path: Path):
    repo, artifact = _repo_with(tmp_path, b"the real jar")
    [path] = ensure_artifacts([artifact], tmp_path / "cache", repo)
    assert path.read_bytes() == b"the real jar"
    # The second run needs no repository at all.
    assert ensure_artifacts([artifact], tmp_path / "cache", (tmp_path / "gone").as_uri()) == [path]


def test_corrupt_cached_jar_is_fetched_again(tmp_path: Path):
    repo, artifact = _repo_with(tmp_path, b"the real jar")
    [path] = ensure_artifacts([artifact], tmp_path / "cache", repo)
    path.write_bytes(b"the reax jar")
    ensure_artifacts([artifact], tmp_path / "cache", repo)
    assert path.read_bytes() == b"the real jar"


def test_checksum_mismatch_is_a_clear_error_and_leaves_nothing(tmp_path: Path):
    repo, artifact = _repo_with(tmp_path, b"a tampered jar")
    with pytest.raises(ArtifactError, match="checksum mismatch for .*demo-lib-1.0.jar") as info:
        ensure_artifacts([artifact], tmp_path / "cache", repo)
    assert info.value.expected == artifact.sha256
    assert info.value.actual == hashlib.sha256(b"a tampered jar").hexdigest()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]


def test_unreachable_repository_names_the_url(tmp_path: Path):
    _, artifact = _repo_with(tmp_path, b"the real jar")
    with pytest.raises(ArtifactError, match="cannot download .*/missing/org/example/demo-lib/1.0/demo-lib-1.0.jar"):
        ensure_artifacts([artifact], tmp_path / "cache", (tmp_path / "missing").as_uri())


def test_lock_pins_the_servers_the_sandbox_runs():
    lock = load_lock()
    names = {b: {(a.group, a.artifact): a.version for a in arts} for b, arts in lock.items()}
    assert names["kafka-3.9"][("org.apache.kafka", "kafka_2.13")].startswith("3.9.")
    assert names["kafka-3.9"][("org.apache.zookeeper", "zookeeper")].startswith("3.8.")
    assert ("org.apache.kafka", "kafka-tools") in names["kafka-3.9"]  # kafka-consumer-groups
    assert ("org.slf4j", "slf4j-reload4j") in names["kafka-3.9"]
    assert names["kafka-4"][("org.apache.kafka", "kafka_2.13")].startswith("4.")
    for arts in lock.values():
        for a in arts:
            assert re.fullmatch(r"[0-9a-f]{64}", a.sha256) and a.size > 0, a
