"""Every command line zk2kafka prints as advice works when pasted in the shell that ran the command.

The shell is an operator's: the connection and the state dir exported, the console script on PATH. Real runs on
real ZooKeeper and Kafka print the advice (Ctrl-C mid-write, groups moved since the review, a plan too old, the
retention warning); each command line between backticks is then run in that shell exactly as printed (a diff
and the plan it made are pasted together, as the diff keeps its plan id in a shell variable for the next line).
A fast test checks that every such command line the code can print is covered here.
"""

from __future__ import annotations

import ast
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from kazoo.client import KazooClient
from markdown_it import MarkdownIt

from migrate import cli

from support.hints import HINT, hints, operator_shell, paste, paste_lines, reviewed_plan
from support.runs import INTERRUPTIBLE_WRITER
from support.seeding import kafka_offsets, make_topic

from support.records import read_groups

ROOT = Path(__file__).resolve().parents[2]

# Each command line migrate/ can print as advice (its text, `…` for what varies) and the test that pastes it.
COVERED = {
    "zk2kafka …": "test_interrupted_then_resumed_as_printed",   # a run's `interrupted:`/`incomplete:` line
    "zk2kafka migrate --execute --resume …": "test_interrupted_then_resumed_as_printed",
    "zk2kafka rollback --execute …": "test_interrupted_then_resumed_as_printed",
    "zk2kafka status": "test_interrupted_then_resumed_as_printed",
    "zk2kafka status …": "test_interrupted_then_resumed_as_printed",
    "zk2kafka diff": "test_interrupted_then_resumed_as_printed",
    # the diff, its report and its plan, pasted together (moved groups, and groups ready-for-kraft finds)
    "PLAN=$(zk2kafka diff… --json | jq -r .plan_id)": "test_moved_groups_old_plans_and_retention_as_printed",
    'zk2kafka migrate --execute --plan "$PLAN"…': "test_ready_for_kraft_advice_as_printed",
    "zk2kafka migrate… --plan … --max-plan-age …": "test_moved_groups_old_plans_and_retention_as_printed",
    "zk2kafka sync --execute --renew-every ……": "test_moved_groups_old_plans_and_retention_as_printed",
    # the same retention warning on the road without ZooKeeper (a --zk-snapshot side): renew, from Kafka and the journal
    "zk2kafka renew --execute --renew-every ……": "test_after_zookeeper_renewal_as_printed",
    "zk2kafka sync --execute…": "test_ready_for_kraft_advice_as_printed",
    # ready-for-kraft's expiry: renew what expires by commit time while ZooKeeper answers, and once it is gone
    "zk2kafka sync --execute… --renew-every …": "test_ready_for_kraft_renewal_as_printed",
    "zk2kafka renew --execute… --renew-every …": "test_ready_for_kraft_renewal_as_printed",
}
# The sandbox's own commands (its tests run them), and docstrings naming it.
NOT_ADVICE = {"zk2kafka sandbox", "zk2kafka sandbox down", "zk2kafka sandbox up", "zk2kafka sandbox status",
              "zk2kafka ready-for-kraft",
              "zk2kafka sandbox kafka-consumer-groups -- ARGS",
              "zk2kafka sandbox up|down|status|seed|kraft-migrate|stop-old-consumers|old-consumer-commit|\n"
              "new-consumer|v0-client|kafka-consumer-groups|kafka-get-offsets|kafka-jmx",
              "zk2kafka sandbox v0-client start|stop",
              # a second start's advice: test_sandbox_cli pastes it as printed
              "zk2kafka sandbox v0-client stop"}


def printed_command_lines() -> set[str]:
    """Every `zk2kafka ...` between backticks in a string of migrate/, f-string fields as `…`."""
    import migrate

    found = set()
    for source in Path(migrate.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            found |= set(HINT.findall(text))
    return found


def test_every_printed_command_line_is_pasted_by_a_test():
    printed = printed_command_lines()
    # Advice split over two string literals is joined here as the code joins it.
    assert "zk2kafka migrate --execute --resume …" in printed
    unknown = printed - set(COVERED) - NOT_ADVICE
    assert not unknown, f"advice no test pastes: {sorted(unknown)} (add it to COVERED with a test that runs it)"
    assert set(COVERED) | NOT_ADVICE <= printed, f"no longer printed: {sorted(set(COVERED) | NOT_ADVICE - printed)}"
    for test in set(COVERED.values()):
        assert test in globals(), test


def seed(zookeeper: str, groups: list[str], topic: str, offset: int = 5) -> None:
    """One offset znode per group, in transactions of 500."""
    zk = KazooClient(hosts=zookeeper)
    zk.start(timeout=15)
    try:
        for i in range(0, len(groups), 500):
            for g in groups[i:i + 500]:
                zk.ensure_path(f"/consumers/{g}/offsets/{topic}")
            tx = zk.transaction()
            for g in groups[i:i + 500]:
                tx.create(f"/consumers/{g}/offsets/{topic}/0", str(offset).encode())
            assert all(r is True or isinstance(r, str) for r in tx.commit())
    finally:
        zk.stop()
        zk.close()


def verified_groups(state: Path) -> int:
    try:
        db = sqlite3.connect(f"{(state / 'journal.sqlite').as_uri()}?mode=ro", uri=True)
        try:
            return db.execute("SELECT count(*) FROM groups WHERE state='verified'").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def running_until(process: subprocess.Popen, what: str, event, timeout: float = 300.0) -> None:
    """Poll for `event` while `process` runs; fail with its output if it ends first or hangs past `timeout`."""
    deadline = time.monotonic() + timeout
    while not event():
        assert process.poll() is None, (f"ended before {what}", process.communicate())
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"no {what} after {timeout:.0f}s", process.communicate())
        time.sleep(0.05)


def test_interrupted_then_resumed_as_printed(cluster, zk_chroot, kafka_admin, prefix, tmp_path):
    topic = f"{prefix}bulk"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 20)
    groups = [f"{prefix}bulk-{i:04d}" for i in range(2000)]
    seed(zk_chroot, groups, topic)
    state = tmp_path / "state"
    shell = operator_shell(cluster, zk_chroot, state)
    # A selection on the command line, then Ctrl-C once a batch is verified and the next ones wait at their commit.
    hold = tmp_path / "release"
    migrate = subprocess.Popen([sys.executable, "-c", INTERRUPTIBLE_WRITER, str(hold), "migrate", "--execute",
                                "--group", f"{prefix}bulk-.*", "--parallelism", "4", "-q"], env=shell,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    # Each wait is on an event of the run's; its timeout is only a net for a run that hangs.
    running_until(migrate, "a batch verified and the next waiting at its commit",
                  lambda: hold.with_suffix(".waiting").exists() and verified_groups(state))
    migrate.send_signal(signal.SIGINT)
    running_until(migrate, "the command to take Ctrl-C",   # then let the batches in flight end
                  lambda: hold.with_suffix(".interrupted").exists())
    hold.touch()
    out, err = migrate.communicate(timeout=240)
    assert migrate.returncode == 130, (out, err)
    run = re.search(r"^run=(\S+) ", out, re.MULTILINE)[1]
    # The retention warning's renewal is the other hint (pasted by the retention test).
    (resume,) = [hint for hint in hints(out) if "--resume" in hint]
    assert resume == f"zk2kafka migrate --execute --resume {run}" and f"interrupted: `{resume}`" in out

    resumed = paste(shell, resume)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"groups: verified {len(groups):,}" in resumed.stdout
    assert all(o == {(topic, 0): (5, f"zk2kafka migrate {run}")}
               for o in kafka_offsets(kafka_admin, groups).values())
    for line in ("zk2kafka status", f"zk2kafka status {run}", f"zk2kafka rollback --execute {run}",
                 "zk2kafka diff --group 'nothing-matches'"):
        # status and a rollback (as a partial group's reason prints it) work as printed; a diff that finds nothing
        # says so, and names the selection.
        done = paste(shell, line)
        expected = 1 if "diff" in line else 0
        assert done.returncode == expected, (line, done.stdout, done.stderr)
    assert kafka_offsets(kafka_admin, groups[:3]) == {g: {} for g in groups[:3]}   # rolled back


def test_moved_groups_old_plans_and_retention_as_printed(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path,
                                                         capsys, monkeypatch):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    groups = [f"{prefix}g{i}" for i in range(3)]
    seed(zk_chroot, groups, topic, 10)
    state = tmp_path / "state"
    shell = operator_shell(cluster, zk_chroot, state)
    for name, value in shell.items():
        monkeypatch.setenv(name, value)   # the commands below run in-process, in the same shell

    assert cli.main(["diff", "--group", f"{prefix}g.*", "-q"]) == 0
    out = capsys.readouterr().out
    plan_id = re.search(r" plan=(\S+) ", out)[1]
    (renew,) = [h for h in hints(out) if h.startswith("zk2kafka sync")]
    assert renew == f"zk2kafka sync --execute --renew-every 42h --group '{prefix}g.*'"   # 7 days' retention / 4
    syncing = subprocess.Popen(["bash", "-c", f"exec {renew}"], env=shell, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    while kafka_offsets(kafka_admin, groups[:1]) == {groups[0]: {}} and time.monotonic() < deadline:
        time.sleep(0.2)
    syncing.send_signal(signal.SIGTERM)
    synced, err = syncing.communicate(timeout=120)
    assert syncing.returncode == 0 and "3 offset change(s) mirrored" in synced, synced + err
    code = cli.main(["rollback", "--execute", re.search(r"^sync (\S+):", synced, re.MULTILINE)[1], "-q"])
    assert code == 0 and kafka_offsets(kafka_admin, groups) == {g: {} for g in groups}
    capsys.readouterr()

    # Too old: the whole command that executes it anyway.
    time.sleep(2.1)
    zk.set(f"/consumers/{groups[1]}/offsets/{topic}/0", b"12")   # an old consumer moves g1 since the review
    assert cli.main(["migrate", "--execute", "--plan", plan_id, "--max-plan-age", "1s", "-q"]) == 1
    (anyway,) = [h for h in hints(capsys.readouterr().err) if "--max-plan-age" in h]
    assert anyway.startswith(f"zk2kafka migrate --execute --plan {plan_id} --max-plan-age ")
    done = paste(shell, anyway)
    assert done.returncode == 1, done.stdout + done.stderr   # g1 moved: not written
    assert f"failed: {groups[1]}" not in done.stdout or "moved since the review" in done.stdout
    fresh_diff, review, then_plan = reviewed_plan(done.stdout)
    assert fresh_diff == f"PLAN=$(zk2kafka diff --group {groups[1]} --json | jq -r .plan_id)"
    assert review == f'less {state / "reports"}/"${{PLAN%@*}}"/report.md'
    assert then_plan == f'zk2kafka migrate --execute --plan "$PLAN" --group {groups[1]}'

    written = paste_lines(shell, fresh_diff, review, then_plan)
    assert written.returncode == 0, written.stdout + written.stderr
    assert re.search(r"^# zk2kafka diff: run ", written.stdout, re.MULTILINE), written.stdout   # the report read
    assert re.search(r"^migrate \S+: 1 offsets written this time", written.stdout, re.MULTILINE), written.stdout
    held = kafka_offsets(kafka_admin, groups)
    assert [held[g][(topic, 0)][0] for g in groups] == [10, 12, 10]


def test_ready_for_kraft_advice_as_printed(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    planned, followed = [f"{prefix}p{i}" for i in range(2)], f"{prefix}s0"
    seed(zk_chroot, planned, topic, 10)
    shell = operator_shell(cluster, zk_chroot, tmp_path / "state")
    ready = "zk2kafka ready-for-kraft --quiet-for 1s"

    # Groups not in Kafka: the diff and the reviewed plan of just those groups, as printed.
    checked = paste(shell, ready)
    assert checked.returncode == 3, checked.stdout + checked.stderr
    diff, review, execute = reviewed_plan(checked.stdout)
    switch = hints(checked.stdout)[-1]
    selection = f"--group {planned[0]} --group {planned[1]}"
    assert (diff, execute, switch) == (f"PLAN=$(zk2kafka diff {selection} --json | jq -r .plan_id)",
                                       f'zk2kafka migrate --execute --plan "$PLAN" {selection}',
                                       f"zk2kafka sync --execute {selection}")
    written = paste_lines(shell, diff, review, execute)
    assert written.returncode == 0, written.stdout + written.stderr
    assert re.search(r"^# zk2kafka diff: run ", written.stdout, re.MULTILINE), written.stdout   # the report read
    assert re.search(r"^migrate \S+: 2 offsets written this time", written.stdout, re.MULTILINE), written.stdout
    assert paste(shell, ready).returncode == 0

    # A group left behind since: the rolling switch of just that group, as printed, until Kafka holds it.
    seed(zk_chroot, [followed], topic, 20)
    checked = paste(shell, ready)
    assert checked.returncode == 3, checked.stdout + checked.stderr
    switch = hints(checked.stdout)[-1]
    assert switch == f"zk2kafka sync --execute --group {followed}"
    syncing = subprocess.Popen(["bash", "-c", f"exec {switch}"], env=shell, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    while kafka_offsets(kafka_admin, [followed]) == {followed: {}} and time.monotonic() < deadline:
        time.sleep(0.2)
    syncing.send_signal(signal.SIGTERM)
    synced, err = syncing.communicate(timeout=120)
    assert syncing.returncode == 0, synced + err
    assert kafka_offsets(kafka_admin, [followed])[followed][(topic, 0)][0] == 20
    done = paste(shell, ready)
    assert done.returncode == 0, done.stdout + done.stderr


def test_advice_repeats_the_locations_given_as_flags(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    """An operator who gives the stores and the state dir as flags, not in the environment: the printed
    diff, report and plan paste into that bare shell and move the groups."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    planned = [f"{prefix}f{i}" for i in range(2)]
    seed(zk_chroot, planned, topic, 10)
    shell = {k: v for k, v in operator_shell(cluster, zk_chroot, tmp_path / "state").items()
             if k not in ("ZK2KAFKA_ZOOKEEPER", "ZK2KAFKA_BOOTSTRAP_SERVER", "ZK2KAFKA_STATE_DIR")}
    where = (f"--zookeeper {zk_chroot} --bootstrap-server {cluster.bootstrap_server} "
             f"--state-dir {tmp_path / 'state'}")
    ready = f"zk2kafka ready-for-kraft {where} --quiet-for 1s"
    checked = paste(shell, ready)
    assert checked.returncode == 3, checked.stdout + checked.stderr
    diff, review, execute = reviewed_plan(checked.stdout)
    selection = f"--group {planned[0]} --group {planned[1]}"
    assert (diff, execute) == (f"PLAN=$(zk2kafka diff {where} {selection} --json | jq -r .plan_id)",
                               f'zk2kafka migrate {where} --execute --plan "$PLAN" {selection}')
    written = paste_lines(shell, diff, review, execute)
    assert written.returncode == 0, written.stdout + written.stderr
    assert re.search(r"^migrate \S+: 2 offsets written this time", written.stdout, re.MULTILINE), written.stdout
    assert paste(shell, ready).returncode == 0


def test_ready_for_kraft_renewal_as_printed(cluster, zk, zk_chroot, kafka_admin, prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    group = f"{prefix}m.0"   # a regex metacharacter: the printed --group matches just this group
    seed(zk_chroot, [group], topic, 10)
    shell = operator_shell(cluster, zk_chroot, tmp_path / "state")
    migrated = paste(shell, f"zk2kafka migrate --execute --group '{prefix}m.*' -q")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr

    # Migrated, no consumer yet: Kafka deletes it by commit time; the renewal of just that group, as printed.
    checked = paste(shell, "zk2kafka ready-for-kraft --quiet-for 1s")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    renew, after = [h for h in hints(checked.stdout) if "--renew-every" in h]
    assert renew == f"zk2kafka sync --execute --group '{prefix}m\\.0' --renew-every 42h"   # 7 days' retention / 4
    assert after == f"zk2kafka renew --execute --group '{prefix}m\\.0' --renew-every 42h"   # once ZooKeeper is gone
    zk.set(f"/consumers/{group}/offsets/{topic}/0", b"12")   # the old consumer still runs: the sync follows it
    syncing = subprocess.Popen(["bash", "-c", f"exec {renew}"], env=shell, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    while kafka_offsets(kafka_admin, [group])[group][(topic, 0)][0] != 12 and time.monotonic() < deadline:
        assert syncing.poll() is None, syncing.communicate()
        time.sleep(0.2)
    syncing.send_signal(signal.SIGTERM)
    synced, err = syncing.communicate(timeout=120)
    assert syncing.returncode == 0, synced + err
    assert kafka_offsets(kafka_admin, [group])[group][(topic, 0)][0] == 12

    # ZooKeeper gone: the second line, pasted in a shell that names none, keeps what sync wrote alive.
    no_zk = {k: v for k, v in shell.items() if k != "ZK2KAFKA_ZOOKEEPER"}
    committed = _commit_times(kafka_admin, [group])
    renewing = subprocess.Popen(["bash", "-c", f"exec {after}"], env=no_zk, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    while _commit_times(kafka_admin, [group]) == committed:   # its first pass renewed
        assert renewing.poll() is None and time.monotonic() < deadline, renewing.communicate()
        time.sleep(0.2)
    renewing.send_signal(signal.SIGTERM)
    renewed, err = renewing.communicate(timeout=120)
    assert renewing.returncode == 0 and "every 42h: 1 offset(s) re-committed as Kafka held them" in renewed, \
        renewed + err
    assert kafka_offsets(kafka_admin, [group])[group][(topic, 0)][0] == 12   # renewed as Kafka held it


def test_report_md_advice_pasted_from_the_rendered_markdown(cluster, zk_chroot, kafka_admin, prefix, tmp_path):
    """report.md read as a renderer shows it: each command line it advises is a code block whose text, copied,
    runs as printed, a pipe in the selection included."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    chosen, other = [f"{prefix}analytics", f"{prefix}secured"], f"{prefix}billing"
    seed(zk_chroot, [*chosen, other], topic, 10)
    shell = operator_shell(cluster, zk_chroot, tmp_path / "state")
    diff = paste(shell, f"zk2kafka diff --group '{prefix}(analytics|secured)' --json")
    assert diff.returncode == 0, diff.stdout + diff.stderr
    summary = json.loads(diff.stdout)
    page = (Path(summary["report"]) / "report.md").read_text(encoding="utf-8")
    blocks = [t.content.rstrip("\n") for t in MarkdownIt("commonmark").parse(page) if t.type == "fence"]
    renew = f"zk2kafka sync --execute --renew-every 42h --group '{prefix}(analytics|secured)'"
    plan = f"zk2kafka migrate --execute --plan {summary['plan_id']}"
    assert blocks == [plan, renew], page
    assert "\\|" not in "".join(blocks)

    # The renewal, copied from its block: it follows the two groups the pattern names, not the third.
    syncing = subprocess.Popen(["bash", "-c", f"exec {blocks[1]}"], env=shell, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    while any(not o for o in kafka_offsets(kafka_admin, chosen).values()) and time.monotonic() < deadline:
        assert syncing.poll() is None, syncing.communicate()
        time.sleep(0.2)
    syncing.send_signal(signal.SIGTERM)
    synced, err = syncing.communicate(timeout=120)
    assert syncing.returncode == 0 and "2 offset change(s) mirrored" in synced, synced + err
    assert kafka_offsets(kafka_admin, [other]) == {other: {}}
    sync_run = re.search(r"^sync (\S+):", synced, re.MULTILINE)[1]
    rolled = paste(shell, f"zk2kafka rollback --execute {sync_run} -q")
    assert rolled.returncode == 0 and kafka_offsets(kafka_admin, chosen) == {g: {} for g in chosen}, rolled.stderr

    # The plan, copied from its block: it writes exactly the reviewed groups.
    written = paste(shell, blocks[0])
    assert written.returncode == 0, written.stdout + written.stderr
    held = kafka_offsets(kafka_admin, [*chosen, other])
    assert [held[g].get((topic, 0), (None,))[0] for g in (*chosen, other)] == [10, 10, None]


def _commit_times(kafka_admin, groups: list[str]) -> dict[str, list[int]]:
    """When Kafka took each group's last commits, as __consumer_offsets holds them."""
    clocks, why = read_groups(kafka_admin, groups)
    assert why is None, why
    return {g: sorted(commit_ms for commit_ms, _ in clocks[g].commits) for g in groups}


def test_after_zookeeper_renewal_as_printed(cluster, zk_chroot, kafka_admin, prefix, tmp_path):
    """The road without ZooKeeper: a diff from a scan's snapshot, its plan executed, a group renamed on the way. The
    retention warning's renewal, pasted as printed in a shell that names no ZooKeeper, re-commits what zk2kafka
    wrote, each offset as Kafka holds it (same offset, same metadata), and Kafka's commit time moves."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    kept, old, new = f"{prefix}archiver", f"{prefix}legacy", f"{prefix}renamed"
    seed(zk_chroot, [kept, old], topic, 10)
    state = tmp_path / "state"
    scanned = paste(operator_shell(cluster, zk_chroot, state), "zk2kafka scan --json -q")
    assert scanned.returncode == 0, scanned.stderr
    shell = {k: v for k, v in operator_shell(cluster, zk_chroot, state).items() if k != "ZK2KAFKA_ZOOKEEPER"}
    selection, mapping = f"--group '{prefix}(archiver|legacy)'", f"--map-group '{old}={new}'"

    diff = paste(shell, f"zk2kafka diff --zk-snapshot {json.loads(scanned.stdout)['run']} {selection} {mapping} -q")
    assert diff.returncode == 0, diff.stdout + diff.stderr
    (renew,) = [h for h in hints(diff.stdout) if "--renew-every" in h]
    # The journal keeps the mapping: the renewal names the groups as the diff selected them, and no ZooKeeper.
    assert renew == f"zk2kafka renew --execute --renew-every 42h {selection}"
    plan_id = re.search(r" plan=(\S+) ", diff.stdout)[1]
    written = paste(shell, f"zk2kafka migrate --execute --plan {plan_id} {mapping}")
    assert written.returncode == 0, written.stdout + written.stderr
    assert renew in written.stdout + written.stderr   # migrate on this road repeats the same advice
    before = kafka_offsets(kafka_admin, [kept, new])
    assert {g: sorted(o[0] for o in held.values()) for g, held in before.items()} == {kept: [10], new: [10]}
    committed = _commit_times(kafka_admin, [kept, new])

    renewing = subprocess.Popen(["bash", "-c", f"exec {renew}"], env=shell, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    while True:   # until Kafka took the renewal of both groups
        assert renewing.poll() is None, renewing.communicate()
        now = _commit_times(kafka_admin, [kept, new])
        if all(min(now[g]) > max(committed[g]) for g in (kept, new)):
            break
        assert time.monotonic() < deadline, now
        time.sleep(0.2)
    renewing.send_signal(signal.SIGTERM)
    out, err = renewing.communicate(timeout=120)
    assert renewing.returncode == 0, out + err
    run = re.search(r"^renew (\S+): 1 pass\(es\), every 42h: 2 offset\(s\) re-committed as Kafka held them, in 2 of "
                    r"the 2 group\(s\)", out, re.MULTILINE)
    assert run, out + err
    assert kafka_offsets(kafka_admin, [kept, new]) == before   # the same offsets, the same metadata: nothing moved
    assert kafka_offsets(kafka_admin, [old]) == {old: {}}        # the old name was never written in Kafka
    status = paste(shell, f"zk2kafka status {run[1]}")
    assert status.returncode == 0 and f"renew {run[1]}: done" in status.stdout, status.stdout + status.stderr
