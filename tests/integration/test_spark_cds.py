"""The driver JVM's class-data archive (migrate/diff/cds.py): made once, then mapped by every diff.

Real JVMs: the archive is made by a small diff on Spark, and a new session is checked from the outside
(/proc/<jvm>/maps lists the mapped file), not from what it was told.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from migrate.diff import cds

SESSION = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from migrate.diff.run import spark_session
    spark = spark_session("local[1]", "zk2kafka-cds-check", cache_dir=Path(sys.argv[1]))
    jvm = spark._jvm
    pid = jvm.java.lang.ProcessHandle.current().pid()
    maps = Path(f"/proc/{pid}/maps").read_text()
    print(json.dumps({"class_path": jvm.java.lang.System.getProperty("java.class.path"), "maps": maps}))
    spark.stop()
""")


def _session(cache_dir) -> dict:
    out = subprocess.run([sys.executable, "-c", SESSION, str(cache_dir)], check=True, text=True,
                         capture_output=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_archive_made_once_then_mapped_by_a_new_session(tmp_path):
    assert cds.java_options(tmp_path) == ""          # none made: a session starts as before
    before = _session(tmp_path)
    path = cds.make(tmp_path)
    assert path == cds.archive_path(tmp_path) and path.stat().st_size > 10 * 2**20
    assert not list(path.parent.glob("*.partial"))   # written aside, renamed whole
    made = path.stat().st_mtime_ns
    assert cds.make(tmp_path) == path and path.stat().st_mtime_ns == made   # made once

    after = _session(tmp_path)
    assert str(path) not in before["maps"]
    assert str(path) in after["maps"], "the new session's JVM did not map the archive"
    # The archive holds Spark's classes for the driver's own class path: a JVM that must share
    # (-Xshare:on) starts with it on that path, and refuses it on another.
    java = [str(cds._java()), "-Xshare:on", f"-XX:SharedArchiveFile={path}"]
    ok = subprocess.run([*java, "-cp", after["class_path"], "-version"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    wrong = subprocess.run([*java, "-cp", str(tmp_path), "-version"], capture_output=True, text=True)
    assert wrong.returncode != 0 and "class paths mismatch" in wrong.stderr


def test_an_unusable_archive_is_ignored_quietly(tmp_path):
    """A JDK updated in place (same path, other build) may meet an archive it cannot use: the JVM must
    start without it and print nothing about it."""
    path = cds.archive_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not an archive" * 100)
    java = [str(cds._java()), f"-XX:SharedArchiveFile={path}", *cds.QUIET.split(), "-version"]
    run = subprocess.run(java, capture_output=True, text=True)
    assert run.returncode == 0
    assert "archive" not in run.stderr.lower() and "archive" not in run.stdout.lower(), run.stderr
    assert str(path) not in _session(tmp_path)["maps"]
