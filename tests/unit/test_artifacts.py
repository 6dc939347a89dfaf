"""Pinned jars are fetched once, verified, reused; a checksum mismatch is a clear error and nothing is kept."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from migrate.errors import ArtifactError
from migrate.jvm.artifacts import Artifact, ensure_artifacts, load_lock


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


def test_every_sandbox_release_has_its_bundle_with_the_zookeeper_it_ships():
    from migrate.jvm.releases import DEFAULT_KAFKA_VERSION, RELEASES

    lock = load_lock()
    assert DEFAULT_KAFKA_VERSION in RELEASES
    for version, release in RELEASES.items():
        jars = {(a.group, a.artifact): a.version for a in lock[release.bundle]}
        broker = [v for (g, a), v in jars.items() if g == "org.apache.kafka" and a.startswith("kafka_2.")]
        assert broker == [version], (release.bundle, broker)
        assert jars[("org.apache.zookeeper", "zookeeper")] == release.zookeeper, release.bundle
        # Brokers before 2.8 load javax.xml.bind, which left the JDK in 11: their bundles carry it.
        if release.line < (2, 8):
            assert ("javax.xml.bind", "jaxb-api") in jars, release.bundle


def test_an_unsupported_release_is_a_usage_error_naming_the_supported_ones():
    from migrate.errors import EXIT_USAGE, ConfigError
    from migrate.jvm.releases import RELEASES, release

    with pytest.raises(ConfigError) as e:
        release("0.8.2.2")
    assert e.value.exit_code == EXIT_USAGE and "\n" not in str(e.value)
    assert all(v in str(e.value) for v in RELEASES)
