"""What ready-for-kraft's verdict covers, on the real ensemble and Kafka: KIP-866 decommissions the whole ensemble.

- Offsets kept elsewhere in the ensemble (an old consumer configured without the brokers' chroot, at the ensemble's
  `/consumers`, or under another application's chroot) block the verdict, each named with its path and the diff that
  moves it, pasted here as printed; another Kafka cluster's chroot and topics this cluster lacks are listed only.
- A selection never clears the cluster: the verdict names the groups checked of those under the root and each pattern
  with where it came from (flag, config file); only --leave-behind, recorded in the evidence, names what stays.
- A watch shorter than the old consumer's commit interval is said, in the first lines, on stderr and in the JSON;
  the log shows the window as given.
- A difference zk2kafka made itself (`--out-of-range clamp --no-zk-write`) is said as such, read from the journal.

Offsets planted outside the brokers' chroot are seen by every other ready-for-kraft run on the session's ensemble:
the `ensemble` fixture removes them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kafka.structs import OffsetAndMetadata
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from migrate.sandbox.security import SUPER_USER

from support.hints import hints, operator_shell, paste
from support.seeding import TopicPartition, make_topic, put

READY = "zk2kafka ready-for-kraft --quiet-for 1s"


@pytest.fixture
def ensemble(cluster):
    """A kazoo client on the bare ensemble (no chroot), as the sandbox's super user so that nodes behind ACLs are
    removed too, and a list of the paths the test creates there; each is removed afterwards, and the ensemble's
    /consumers too when the test made it."""
    client = KazooClient(hosts=cluster.zk_server, auth_data=[("digest", ":".join(SUPER_USER))])
    client.start(timeout=15)
    had_root = client.exists("/consumers")
    made: list[str] = []
    yield client, made
    for path in made:
        if client.exists(path):
            client.delete(path, recursive=True)
    if not had_root and client.exists("/consumers") and not client.get_children("/consumers"):
        client.delete("/consumers")
    client.stop()
    client.close()


def commit(kafka_admin, group: str, topic: str, offsets: dict[int, int]) -> None:
    kafka_admin.alter_group_offsets(group, {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                                            for p, o in offsets.items()})


def test_offsets_elsewhere_in_the_ensemble_block_and_are_named_with_the_diff_that_moves_them(
        cluster, broker_zk, ensemble, kafka_admin, prefix, tmp_path):
    client, made = ensemble
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    moved = f"{prefix}moved"   # under the brokers' chroot, and in Kafka: clear
    for p in range(2):
        put(broker_zk, f"/consumers/{moved}/offsets/{topic}/{p}", b"10")
    commit(kafka_admin, moved, topic, {0: 10, 1: 10})
    rootless, app, other_app, other_cluster = (f"{prefix}rootless", f"{prefix}app", f"/{prefix}other-app",
                                               f"/{prefix}other-cluster")
    made += [f"/consumers/{rootless}", other_app, other_cluster]
    put(client, f"/consumers/{rootless}/offsets/{topic}/0", b"20")          # an old consumer without the chroot
    put(client, f"{other_app}/consumers/{app}/offsets/{topic}/1", b"30")     # under another application's chroot
    put(client, f"{other_app}/consumers/{prefix}gone/offsets/{prefix}no-such-topic/0", b"5")
    # Another Kafka cluster's chroot: brokers of its own registered, another cluster id.
    put(client, f"{other_cluster}/brokers/ids/7", b"{}")
    put(client, f"{other_cluster}/cluster/id", b'{"version":"1","id":"another-cluster"}')
    put(client, f"{other_cluster}/consumers/{prefix}theirs/offsets/{topic}/0", b"40")
    shell = operator_shell(cluster, cluster.zookeeper, tmp_path / "state")

    checked = paste(shell, f"{READY} --json")
    assert checked.returncode == 3, checked.stdout + checked.stderr
    data = json.loads(checked.stdout)
    assert moved not in data["not_ready"]
    found = {f["path"]: f for f in data["ensemble"]["elsewhere"]}
    assert found[f"/consumers/{rootless}"]["findings"] == {"not_in_kafka": [f"{topic}-0 (ZooKeeper 20)"]}
    assert found[f"{other_app}/consumers/{app}"]["findings"] == {"not_in_kafka": [f"{topic}-1 (ZooKeeper 30)"]}
    assert found[f"/consumers/{rootless}"]["blocking"] and found[f"{other_app}/consumers/{app}"]["blocking"]
    gone = found[f"{other_app}/consumers/{prefix}gone"]
    assert not gone["blocking"] and gone["topic_gone"] == [f"{prefix}no-such-topic-0 (ZooKeeper 5)"]
    theirs = found[f"{other_cluster}/consumers/{prefix}theirs"]
    assert not theirs["blocking"] and theirs["other_cluster"] == "another-cluster"
    searched = data["ensemble"]
    assert searched["complete"] and searched["checked_root"] == "/kafka/consumers" and searched["listed"] > 0
    assert {"/consumers", f"{other_app}/consumers", f"{other_cluster}/consumers"} <= set(searched["trees"])
    assert not any(t.startswith("/kafka/") for t in searched["trees"]), "the checked root is the check's own"
    assert any("elsewhere in the ensemble" in b and f"{other_app}/consumers" in b for b in data["blocking"])

    text = paste(shell, READY)
    assert text.returncode == 3
    first = text.stdout.splitlines()[0]
    assert first.startswith("ready-for-kraft: NOT READY: ") and f"(/consumers, {other_app}/consumers)" in first
    assert re.search(rf"^ensemble: searched {re.escape(cluster.zk_server)} from / in \d+\.\ds \(\d+ znodes listed",
                     text.stdout, re.MULTILINE), text.stdout
    assert f"  /consumers/{rootless}: not in Kafka: {topic}-0 (ZooKeeper 20)" in text.stdout
    assert f"{other_cluster}/consumers/{prefix}theirs (another Kafka cluster's chroot" in text.stdout
    moves = hints(text.stdout)[-2:]
    assert [m.split(" --group ")[0] for m in moves] == [
        f"zk2kafka diff --zookeeper {cluster.zk_server} --zk-root /consumers",
        f"zk2kafka diff --zookeeper {cluster.zk_server} --zk-root {other_app}/consumers"]
    for move, group in zip(moves, (rootless, app)):
        diffed = paste(shell, move)   # as printed, in the shell whose ZK2KAFKA_ZOOKEEPER has the brokers' chroot
        assert diffed.returncode == 0, diffed.stdout + diffed.stderr
        assert "planned: commit 1 offsets in 1 groups" in diffed.stdout, diffed.stdout

    # Left behind on purpose, by path: ready, and the evidence records what was left and why.
    left = paste(shell, f"{READY} --leave-behind /consumers --leave-behind '{other_app}/.*' --json")
    assert left.returncode == 0, left.stdout + left.stderr
    summary = json.loads((Path(json.loads(left.stdout)["report"]) / "summary.json").read_text())
    assert summary["ready"] and summary["left_behind"]["patterns"] == [
        {"option": "--leave-behind", "pattern": "/consumers", "from": "flag"},
        {"option": "--leave-behind", "pattern": f"{other_app}/.*", "from": "flag"}]
    assert {f["path"] for f in summary["ensemble"]["elsewhere"] if f["left_behind"]} == {
        f"/consumers/{rootless}", f"{other_app}/consumers/{app}", f"{other_app}/consumers/{prefix}gone"}


def test_a_search_cut_short_or_a_path_it_may_not_list_is_not_ready_unless_left_behind(
        cluster, broker_zk, ensemble, kafka_admin, prefix, tmp_path):
    client, made = ensemble
    topic, group = f"{prefix}orders", f"{prefix}moved"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    put(broker_zk, f"/consumers/{group}/offsets/{topic}/0", b"10")
    commit(kafka_admin, group, topic, {0: 10})
    shell = operator_shell(cluster, cluster.zookeeper, tmp_path / "state")

    cut = paste(shell, f"{READY} --ensemble-max-znodes 1 --json")   # / only, not /kafka below it
    assert cut.returncode == 3, cut.stdout + cut.stderr
    data = json.loads(cut.stdout)
    assert not data["ensemble"]["complete"] and data["blocking"] == [
        "the search of the ensemble stopped after 1 znodes (--ensemble-max-znodes)"]
    assert paste(shell, f"{READY} --json").returncode == 0, "the whole ensemble searched, nothing left behind"

    # A znode only another user may list: what lies below it is not known, so it is said and blocks.
    locked = f"/{prefix}locked"
    made.append(locked)
    client.create(locked, b"", acl=[make_digest_acl("someone-else", "secret", all=True)])
    hidden = paste(shell, READY)
    assert hidden.returncode == 3, hidden.stdout + hidden.stderr
    assert hidden.stdout.splitlines()[0].startswith(
        "ready-for-kraft: NOT READY: 1 path(s) of the ensemble could not be listed")
    assert f"could not list (offsets may lie below): {locked}: NoAuthError" in hidden.stdout
    kept = paste(shell, f"{READY} --leave-behind {locked} --json")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert json.loads(kept.stdout)["ensemble"]["unreadable"] == [{"path": locked, "why": "NoAuthError",
                                                                  "left_behind": True}]


def test_a_selection_alone_never_clears_the_cluster_and_the_verdict_says_where_it_came_from(
        cluster, broker_zk, kafka_admin, prefix, tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 2, 50)
    retired, late = f"{prefix}retired", f"{prefix}late"
    for group in (retired, late):
        for p in range(2):
            put(broker_zk, f"/consumers/{group}/offsets/{topic}/{p}", b"7")
    commit(kafka_admin, retired, topic, {0: 7, 1: 7})   # moved; `late` is in ZooKeeper only
    shell = operator_shell(cluster, cluster.zookeeper, tmp_path / "state")

    selected = paste(shell, f"zk2kafka ready-for-kraft --quiet-for 1.5s --group {retired}")
    assert selected.returncode == 3, selected.stdout + selected.stderr
    lines = selected.stdout.splitlines()
    assert lines[0].startswith("ready-for-kraft: NOT READY: ")
    assert "were not checked (outside the selection)" in lines[0]
    assert re.fullmatch(rf"checked: 1 of \d+ group\(s\) under {re.escape(cluster.zookeeper)}/consumers; "
                        rf"selection: --group {retired} \(flag\)", lines[1]), lines[1]
    assert f"not checked (outside the selection): {late} (2 offsets)" in selected.stdout
    # The watch as given, and too short to see a client committing every 60 s: said, not silent.
    assert "for writes for 1.5s (--quiet-for)" in selected.stderr
    assert "warning: --quiet-for 1.5s is shorter than 60s" in "\n".join(lines[:4])
    assert "--quiet-for 1.5s is shorter than 60s" in selected.stderr

    config = tmp_path / "zk2kafka.toml"
    config.write_text(f'exclude-group = ["{late}"]\n')
    excluded = paste(shell, f"{READY} --config {config} --json")
    assert excluded.returncode == 3, excluded.stdout + excluded.stderr
    data = json.loads(excluded.stdout)
    assert data["selected_by"] == [{"option": "--exclude-group", "pattern": late, "from": f"config file {config}"}]
    assert {"group": late, "offsets": 2, "left_behind": False} in data["not_checked"]
    assert data["short_watch"].startswith("--quiet-for 1s is shorter than 60s")

    kept = paste(shell, f"{READY} --group {retired} --leave-behind {late} --json")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    summary = json.loads((Path(json.loads(kept.stdout)["report"]) / "summary.json").read_text())
    assert summary["ready"] and {"group": late, "offsets": 2, "left_behind": True} in summary["not_checked"]
    assert summary["left_behind"]["patterns"] == [{"option": "--leave-behind", "pattern": late, "from": "flag"}]
    text = paste(shell, f"{READY} --group {retired} --leave-behind {late}")
    assert text.stdout.startswith("ready-for-kraft: ready: ") and f"left behind on purpose (--leave-behind {late} " \
        f"(flag)): {late}" in text.stdout


def test_a_difference_zk2kafka_made_itself_is_said_as_such(cluster, broker_zk, kafka_admin, prefix, tmp_path):
    topic, group = f"{prefix}orders", f"{prefix}clamped"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    put(broker_zk, f"/consumers/{group}/offsets/{topic}/0", b"999")   # past the log's end: clamped to 50
    shell = operator_shell(cluster, cluster.zookeeper, tmp_path / "state")
    written = paste(shell, f"zk2kafka migrate --execute --out-of-range clamp --no-zk-write --group {group}")
    # Written clamped, and still a blocker row of the plan (ABOVE_LOG_END): exit 3.
    assert written.returncode == 3 and "1 offsets written this time" in written.stdout, written.stdout + written.stderr

    checked = paste(shell, READY)
    assert checked.returncode == 3, checked.stdout + checked.stderr
    assert f"{group}: differs from Kafka: {topic}-0: ZooKeeper 999, Kafka 50" in checked.stdout
    assert re.search(rf"{re.escape(group)}: zk2kafka's own: {re.escape(topic)}-0: run \S+ committed Kafka 50 while "
                     r"ZooKeeper held 999, unchanged since \(--out-of-range clamp --no-zk-write\)", checked.stdout)
    assert "something still commits there" not in checked.stdout
    assert "differs from Kafka: zk2kafka itself committed to Kafka another value" in checked.stdout
