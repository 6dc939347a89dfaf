"""A state dir that cannot be written: one clear error line, nothing in the stores the journal does not know of.

Running as root, a read-only mode bit stops nothing; the faults here are a file where the state dir
should be, a state dir on a read-only mount (a private mount namespace, `unshare`), and a journal that
cannot grow (RLIMIT_FSIZE on the zk2kafka process: its writes past the limit fail with EFBIG, as they
would with ENOSPC on a full disk).
"""

from __future__ import annotations

import random
import resource
import shutil
import subprocess
import sys
import tempfile

import pytest

from migrate import cli

from support.cli import zk2kafka_json
from support.faults import ROOT, journaled_run, spawn

pytestmark = pytest.mark.integration

SHM = 32 * 1024   # SQLite's WAL index alone is 32 KiB: below that not even the journal opens
STEP = 24 * 1024


def one_error_line(err: str) -> str:
    errors = [line for line in err.splitlines() if line.startswith("zk2kafka: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def test_a_state_dir_that_is_a_file_is_one_clear_line_and_nothing_is_written(stores, fault_log, capsys):
    case = stores.case("file")
    case.seed(10, random.Random(fault_log.seed))
    case.state_dir.parent.mkdir(parents=True, exist_ok=True)
    case.state_dir.write_text("not a directory\n")
    fault_log.fault("state dir is a file")

    assert cli.main(["migrate", *case.args(), "--execute", "-q"]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert str(case.state_dir) in line, line
    assert case.untouched()

    case.state_dir.unlink()
    code, done, _ = zk2kafka_json("migrate", *case.args(), "--execute")
    assert code == 0 and done["state"] == "done", done
    code, verified, _ = zk2kafka_json("verify", *case.args())
    assert code == 0 and verified["verified"]
    case.check(done["run"])


def read_only_mounts() -> bool:
    """Whether this machine lets an unprivileged user namespace mount (most Linux kernels do)."""
    if not shutil.which("unshare"):
        return False
    with tempfile.TemporaryDirectory() as probe:
        return on_read_only_mount(probe, ["true"], python=False).returncode == 0


def on_read_only_mount(state_dir, argv: list[str], python: bool = True) -> subprocess.CompletedProcess:
    """`python -m migrate ARGV` in a mount namespace of its own where `state_dir` is mounted read-only."""
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"'
    command = [sys.executable, "-m", "migrate", *argv] if python else argv
    return subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", str(state_dir), *command], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not read_only_mounts(), reason="no unprivileged mount namespaces (unshare -rm) here")
def test_a_read_only_state_dir_is_one_clear_line_before_any_write_then_resume_converges(stores, fault_log,
                                                                                          monkeypatch, capsys):
    case = stores.case("read-only")
    case.seed(50, random.Random(f"{fault_log.seed}-read-only"))
    run_id = journaled_run(case.args(), case.state_dir, monkeypatch)
    fault_log.fault("state dir read-only", 2)

    for argv in (["migrate", *case.args(), "--execute", "-q"],                       # a new run
                 ["migrate", *case.args(), "--execute", "--resume", run_id, "-q"]):  # the journaled one
        done = on_read_only_mount(case.state_dir, argv)
        assert done.returncode == 1, (argv, done.returncode, done.stderr)
        line = one_error_line(done.stderr)
        assert str(case.state_dir) in line and "read-only" in line.lower(), line
        assert case.untouched()

    code, resumed, _ = zk2kafka_json("migrate", *case.args(), "--execute", "--resume", run_id)
    assert code == 0 and resumed["state"] == "done", resumed
    code, verified, _ = zk2kafka_json("verify", *case.args())
    assert code == 0 and verified["verified"]
    case.check(run_id)


def test_a_journal_that_cannot_grow_stops_the_run_cleanly_then_resume_converges(stores, fault_log, monkeypatch,
                                                                                 capsys):
    case = stores.case("full")
    case.seed(300, random.Random(fault_log.seed))
    run_id = journaled_run(case.args(), case.state_dir, monkeypatch)
    resume = ["migrate", *case.args(), "--execute", "--resume", run_id, "-q"]

    # The file size limit grows a step per attempt: each attempt fails at a later journal write.
    limit, stopped, mid_run = SHM, 0, 0
    while True:
        process = spawn(resume, preexec_fn=lambda cap=limit: resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap)))
        _, err = process.communicate(timeout=300)
        if process.returncode == 0:
            break
        stopped += 1
        fault_log.fault("journal cannot grow")
        assert process.returncode == 1, err
        line = one_error_line(err)
        assert "journal" in line and str(case.state_dir) in line and run_id in line, line
        assert case.disagreements(run_id) == []
        mid_run += not case.untouched()
        limit += STEP
        assert limit < 2 * 1024 * 1024, "the resume never got through"
    assert stopped >= 2 and mid_run, (stopped, mid_run)

    code, verified, _ = zk2kafka_json("verify", *case.args())
    assert code == 0 and verified["verified"]
    case.check(run_id)
