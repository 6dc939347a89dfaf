"""A class-data sharing (CDS) archive for the Spark driver's JVM: fewer seconds of start-up.

A cold Spark JVM loads and verifies some 15,000 classes before the diff's query runs. A dynamic CDS
archive (JDK 13+) maps them from one file instead. What it saves is in
docs/performance.md (the diff).

The archive is made once per Java and Spark install, by `python -m migrate.diff.cds` (`make
install` runs it), never by a diff: the JVM writes it while it exits, and a diff must neither wait
for that nor ever read a half-written file. It is written under a temporary name and renamed once
its JVM has exited. A diff uses the archive when it is there; its name holds the JVM's and
Spark's versions and Spark's place, so another install simply finds none and starts as before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

DEFAULT_CACHE = Path("~/.cache/zk2kafka")
# Quiet: a mismatch (say a JDK updated in place) must not print warnings on the operator's
# terminal; the JVM then starts without the archive, as it would without this module.
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"


def _java() -> Path:
    """The java Spark's launcher runs: JAVA_HOME's, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    java = Path(home, "bin", "java") if home else None
    if java is None or not java.exists():
        java = Path(shutil.which("java") or "java")
    return java.resolve() if java.exists() else java


def archive_path(cache_dir: Path | None = None) -> Path:
    """Where the archive for this JVM and this Spark lives (it may not exist)."""
    import pyspark

    java = _java()
    stamp = java.stat().st_mtime_ns if java.exists() else 0
    # The archive records the jars' paths: another virtualenv's Spark cannot map it.
    spark = Path(pyspark.__file__).resolve().parent
    key = hashlib.sha256(f"{java}|{stamp}|{spark}|{pyspark.__version__}".encode()).hexdigest()[:12]
    cache = Path(cache_dir or os.environ.get("ZK2KAFKA_CACHE_DIR") or DEFAULT_CACHE).expanduser()
    return cache / "spark-cds" / f"driver-{key}.jsa"


def java_options(cache_dir: Path | None = None) -> str:
    """The driver JVM's options to map the archive, or "" when none was made."""
    path = archive_path(cache_dir)
    return f"-XX:SharedArchiveFile={path} {QUIET}" if path.is_file() else ""


def make(cache_dir: Path | None = None) -> Path:
    """Make the archive (a small diff in a child process whose JVM dumps its classes on exit:
    cds_dump.py)."""
    path = archive_path(cache_dir)
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        subprocess.run([sys.executable, "-m", "migrate.diff.cds_dump", str(partial)],
                       check=True, stdout=subprocess.DEVNULL)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


if __name__ == "__main__":
    print(make())
