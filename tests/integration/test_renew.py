"""`renew`: the offsets zk2kafka wrote kept alive from Kafka and the journal alone, with no ZooKeeper.

Groups migrated on the session cluster, then renewed from a shell that names no ZooKeeper: only the values zk2kafka
wrote and Kafka still holds are re-committed, each as Kafka holds it; a group with a member, one a consumer moved,
one whose equal value someone else committed, and a run rolled back are left alone. A dry run writes nothing,
once-mode ends by itself, and renew holds the writers' lock as every writer does; as a service, a real Prometheus
scrapes it and pages once it is gone.
"""

from __future__ import annotations

import calendar
import json
import signal
import subprocess
import time

from kafka.structs import OffsetAndMetadata

from support.cli import ROOT
from support.consumers import joined
from support.hints import operator_shell, paste
from support.prometheus import RENEW_JOB, RENEW_RULES, Prometheus, rules, with_short_for
from support.seeding import TopicPartition, kafka_offsets, make_topic
from support.sync_process import get, scraped_when, value
from support.wait import free_port, wait_for

from support.records import read_groups


def seed(zk, groups: list[str], topic: str, offset: int) -> None:
    for g in groups:
        zk.create(f"/consumers/{g}/offsets/{topic}/0", str(offset).encode(), makepath=True)


def commit_times(kafka_admin, groups: list[str]) -> dict[str, list[int]]:
    clocks, why = read_groups(kafka_admin, groups)
    assert why is None, why
    return {g: sorted(commit_ms for commit_ms, _ in clocks[g].commits) if g in clocks else [] for g in groups}


def test_renew_renews_only_what_zk2kafka_wrote_and_kafka_still_holds(cluster, zk, zk_chroot, kafka_admin, prefix,
                                                                    tmp_path):
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    names = ["kept", "member", "moved", "theirs", "undone"]
    g = {n: f"{prefix}{n}" for n in names}
    seed(zk, list(g.values()), topic, 10)
    state = tmp_path / "state"
    live_shell = operator_shell(cluster, zk_chroot, state)
    runs = {}
    for n in names:   # one run per group: "undone"'s is rolled back whole
        done = paste(live_shell, f"zk2kafka migrate --execute --group {g[n]} -q --json")
        assert done.returncode == 0, done.stderr
        runs[n] = json.loads(done.stdout)["run"]
    assert paste(live_shell, f"zk2kafka rollback --execute {runs['undone']} -q").returncode == 0
    shell = {k: v for k, v in live_shell.items() if k != "ZK2KAFKA_ZOOKEEPER"}   # no ZooKeeper from here on
    # A consumer moved one group on; another's equal value was committed by someone else; a third has a member.
    tp = TopicPartition(topic, 0)
    kafka_admin.alter_group_offsets(g["moved"], {tp: OffsetAndMetadata(30, "", -1)})
    kafka_admin.alter_group_offsets(g["theirs"], {tp: OffsetAndMetadata(10, "a new consumer", -1)})
    member = joined(cluster.bootstrap_server, g["member"], topic)
    try:
        before = kafka_offsets(kafka_admin, list(g.values()))
        committed = commit_times(kafka_admin, list(g.values()))

        dry = paste(shell, f"zk2kafka renew --group '{prefix}.*' --json -q")
        assert dry.returncode == 0, dry.stderr
        data = json.loads(dry.stdout)
        assert (data["dry_run"], data["last_pass"]["renewed"]) == (True, {g["kept"]: 1})
        alone = data["last_pass"]["left_alone"]
        assert set(alone) == {g["member"], g["moved"], g["theirs"]}, alone
        assert alone[g["member"]].startswith("a consumer is in the group in Kafka")
        assert "moved since zk2kafka wrote them: " + f"{topic}-0 = 30 (zk2kafka wrote 10)" in alone[g["moved"]]
        assert "committed by someone else" in alone[g["theirs"]] and "'a new consumer'" in alone[g["theirs"]]
        assert commit_times(kafka_admin, list(g.values())) == committed   # a dry run commits nothing
        assert "renew" not in paste(shell, "zk2kafka status").stdout       # nor journals anything

        once = paste(shell, f"zk2kafka renew --execute --group '{prefix}.*'")   # no --renew-every: once
        assert once.returncode == 0, once.stdout + once.stderr
        assert "1 pass(es): 1 offset(s) re-committed as Kafka held them, in 1 of the 4 group(s)" in once.stdout
        assert f"  {g['member']}: a consumer is in the group in Kafka" in once.stdout
        now = commit_times(kafka_admin, list(g.values()))
        assert min(now[g["kept"]]) > max(committed[g["kept"]])
        assert all(now[g[n]] == committed[g[n]] for n in names if n != "kept"), (now, committed)
        assert kafka_offsets(kafka_admin, list(g.values())) == before   # nothing moved, metadata kept
        assert before[g["kept"]] == {(topic, 0): (10, before[g["kept"]][(topic, 0)][1])}
        assert before[g["kept"]][(topic, 0)][1].startswith("zk2kafka migrate ")
        assert before[g["undone"]] == {}
    finally:
        member.close()


def test_renew_as_a_watched_service_holds_the_writers_lock_and_stops_when_told(cluster, zk, zk_chroot, kafka_admin,
                                                                                prefix, tmp_path):
    """renew --execute --renew-every with --metrics-address, as its unit file runs it, scraped by a real Prometheus
    with docker/monitoring/zk2kafka-renew.rules.yml (`for:` windows of 2 s): its series, /healthz, no alert while it
    renews, ZK2KafkaRenewDown once it is gone. About 15 s."""
    topic = f"{prefix}orders"
    make_topic(kafka_admin, cluster.bootstrap_server, topic, 1, 50)
    group = f"{prefix}g"
    seed(zk, [group], topic, 7)
    state = tmp_path / "state"
    live_shell = operator_shell(cluster, zk_chroot, state)
    assert paste(live_shell, f"zk2kafka migrate --execute --group {group} -q").returncode == 0
    shell = {k: v for k, v in live_shell.items() if k != "ZK2KAFKA_ZOOKEEPER"}
    committed = commit_times(kafka_admin, [group])
    address = f"127.0.0.1:{free_port()}"
    prometheus = Prometheus(tmp_path / "prometheus", [address], with_short_for(rules(RENEW_RULES), 2), job=RENEW_JOB)
    try:
        line = f"zk2kafka renew --execute --renew-every 1h --group {group} --metrics-address {address}"
        renewing = subprocess.Popen(["bash", "-c", f"exec {line}"], env=shell, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, cwd=ROOT)
        deadline = time.monotonic() + 120
        while commit_times(kafka_admin, [group]) == committed:   # its first pass renewed
            assert renewing.poll() is None and time.monotonic() < deadline, renewing.communicate()
            time.sleep(0.2)
        samples = scraped_when("the first pass in the series", address, lambda s: value(
            s, "zk2kafka_renew_passes_total", result="renewed") == 1)
        assert value(samples, "zk2kafka_renew_every_seconds") == 3600
        assert value(samples, "zk2kafka_renew_groups_written") == 1
        assert value(samples, "zk2kafka_renew_offsets_renewed_total") == 1
        assert value(samples, "zk2kafka_renew_groups", state="renewed") == 1
        assert value(samples, "zk2kafka_renew_passes_total", result="failed") == 0
        assert value(samples, "zk2kafka_renew_last_renewed_timestamp_seconds") > time.time() - 120
        assert get(f"http://{address}/healthz") == (200, "ok\n")
        # Scraped and judged: while it renews, nothing pages.
        seen = wait_for("renew scraped as healthy", lambda: prometheus.query(
            f'zk2kafka_renew_health_check_ok{{job="{RENEW_JOB}", check="renewal"}} == 1'), timeout=60)
        scraped_at = float(seen[0]["value"][0])
        wait_for("the rules evaluated after that scrape", lambda: all(
            rule_group["lastEvaluation"] and _seconds(rule_group["lastEvaluation"]) > scraped_at
            for rule_group in prometheus.api("rules")["groups"]), timeout=30)
        assert prometheus.alerts() == []

        busy = paste(live_shell, f"zk2kafka migrate --execute --group {group} -q")
        assert busy.returncode != 0 and "renew --execute, run " in busy.stderr, busy.stderr
        second = paste(shell, f"zk2kafka renew --execute --group {group} -q")
        assert second.returncode != 0 and "renew --execute, run " in second.stderr, second.stderr
        renewing.send_signal(signal.SIGTERM)
        out, err = renewing.communicate(timeout=60)
        assert renewing.returncode == 0 and "1 pass(es), every 1h: 1 offset(s) re-committed" in out, out + err
        assert "renewing the 1 offset(s) of 1 group(s) zk2kafka wrote, every 1h" in err, err
        # Gone: Prometheus pages for it.
        prometheus.wait_alert("ZK2KafkaRenewDown", ("firing",), job=RENEW_JOB)
    finally:
        prometheus.stop()

    # --stop-after ends it by itself; the lock is free again for the next writer.
    stopped = paste(shell, f"zk2kafka renew --execute --renew-every 1h --stop-after 1s --group {group} -q")
    assert stopped.returncode == 0, stopped.stderr
    assert paste(shell, "zk2kafka renew --execute --group 'nothing-here' -q").returncode == 1


def _seconds(stamp: str) -> float:
    """Prometheus's RFC 3339 time (nanoseconds, Z) as Unix seconds."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float(f"0.{fraction or 0}")
