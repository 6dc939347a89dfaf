"""`kill -9` of zk2kafka at seeded random points; each run resumed and verified: nothing lost, nothing written twice.

Every iteration is a run of its own (own chroot, group prefix and state dir). Its plan is made
in-process, where Spark is warm, and stopped before the first write; the dual commit is then done
by `migrate --execute --resume RUN_ID` processes, killed with SIGKILL after a seeded random delay or
at a seeded choice of the crash points in dual_commit.py; after each kill the journal must agree with
the stores. A last resume and `verify` must then reach the one final state: Kafka == ZooKeeper == the
seeded offsets, each znode whose bytes change written once and every other one never (fenced by
reading), the journal done. 20 killed runs by default, 100 with -m slow.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import time

import pytest

from migrate.write.dual_commit import CRASH_ENV

from support.cli import zk2kafka_json
from support.faults import journaled_run, spawn

pytestmark = pytest.mark.integration

CRASH_POINTS = ("before-kafka-commit", "after-kafka-commit", "after-zk-write")
GROUPS = 300   # two write batches (WRITE_BATCH is 250): kills land inside and between them


def kill_and_resume(stores, monkeypatch, capsys, rng: random.Random, iterations: int, max_kills: int) -> None:
    """`iterations` runs, each killed 1 to `max_kills` times (a run whose resume outran its kill does not count)."""
    log = stores.log
    window = 2.5   # upper bound of the random delay; shrinks to what a resume that outran it took
    killed, mid_run = 0, 0
    for i in itertools.count():
        if killed == iterations:
            break
        assert i < 2 * iterations, f"only {killed} of {i} runs were killed: the kills come too late"
        case = stores.case(f"kill{i}")
        case.seed(GROUPS, rng)
        args = case.args()
        run_id = journaled_run(args, case.state_dir, monkeypatch)
        kills = 0
        for _ in range(rng.randint(1, max_kills)):
            point = rng.choice(("delay",) * len(CRASH_POINTS) + CRASH_POINTS)
            delay = rng.uniform(0.2, window)
            began = time.monotonic()
            resume = spawn(["migrate", *args, "--execute", "--resume", run_id, "--parallelism", "2", "-q"],
                           {} if point == "delay" else {CRASH_ENV: point})
            try:
                _, err = resume.communicate(timeout=delay if point == "delay" else 300)
            except subprocess.TimeoutExpired:
                resume.kill()   # SIGKILL
                _, err = resume.communicate()
            if resume.returncode == 0:   # it finished first: aim earlier next time
                window = max(0.5, (time.monotonic() - began) * 0.9)
                break
            assert resume.returncode == -9, f"iteration {i}: resume exited {resume.returncode}: {err}"
            kafka, zk = case.kafka_state(), case.zk_state()
            assert case.disagreements(run_id, kafka, zk) == [], f"iteration {i}"
            written = sum(v is not None for v in kafka.values()) + sum(v == 1 for _, v in zk.values())
            partial = 0 < written < len(case.expected) + len(case.rewritten)
            mid_run += partial
            kills += 1
            log.fault("kill -9 zk2kafka mid-write" if partial else "kill -9 zk2kafka")
        killed += kills > 0

        code, resumed, _ = zk2kafka_json("migrate", *args, "--execute", "--resume", run_id)
        assert code == 0 and resumed["state"] == "done", (i, resumed)
        code, verified, _ = zk2kafka_json("verify", *args)
        assert code == 0 and verified["verified"], (i, verified.get("mismatched"))
        case.check(run_id)
    assert mid_run, "no kill landed while a run was half written: the iterations tested nothing"


def test_kill_9_at_random_points_then_resume_converges(stores, fault_log, monkeypatch, capsys):
    kill_and_resume(stores, monkeypatch, capsys, random.Random(f"{fault_log.seed}-kill9"), 20, 1)


@pytest.mark.slow
def test_kill_9_at_random_points_then_resume_converges_long(stores, fault_log, monkeypatch, capsys):
    kill_and_resume(stores, monkeypatch, capsys, random.Random(f"{fault_log.seed}-kill9-long"), 100, 3)
