"""ready-for-kraft's verdict per group (migrate/ready/rules.py) and its text (migrate/report/ready.py), pure."""

from __future__ import annotations

from migrate.journal.authorship import named_run
import shlex

from migrate.ready.coverage import LeftBehind, blocking, elsewhere, move_command, summary
from migrate.ready.rules import Evidence, KafkaGroup, judge
from migrate.ready.watch import short_watch
from migrate.report.ready import markdown, text
from migrate.zk.ensemble import Search, Tree
from migrate.zk.quiet import Moved

from support.records import held

T = "orders"


def row(group, partition, offset=10, status="OK", reason=None, layout="standard", mtime=1_000):
    return {"group": group, "topic": T, "partition": partition, "offset": offset, "status": status,
            "reason": reason, "mtime": mtime, "layout": layout,
            "path": f"/consumers/{group}/{'offsets' if layout == 'standard' else 'offset'}/{T}/{partition}"}


def wrote(group, key, offset, metadata):   # as check.py decides without a journal
    return named_run(metadata) is not None


PARTITIONS = {(T, 0), (T, 1)}


def verdicts(rows, kafka, moved=(), liveness=None):
    return {v.group: v for v in judge(rows, kafka, PARTITIONS, moved, liveness or {}, wrote)}


def test_each_offset_in_kafka_with_the_same_value_is_ready():
    v = verdicts([row("g", 0), row("g", 1, 11)],
                 {"g": KafkaGroup("Empty", {(T, 0): (10, "zk2kafka migrate R"), (T, 1): (11, "")})})["g"]
    assert v.ready and (v.offsets, v.in_kafka) == (2, 2)


def test_what_is_left_behind_is_named_per_finding():
    found = verdicts(
        [row("missing", 0), row("moved", 0, 120), row("bad", 0, None, "MALFORMED", "not an integer"),
         row("twice", 0), row("twice", 0, layout="kafka-1.1.0-offset", mtime=500)],
        {"moved": KafkaGroup("Empty", {(T, 0): (100, "zk2kafka migrate R")})})
    assert found["missing"].not_in_kafka == ["orders-0 (ZooKeeper 10)"] and not found["missing"].ready
    assert found["moved"].differs == ["orders-0: ZooKeeper 120, Kafka 100 (written by zk2kafka: zk2kafka migrate R)"]
    assert found["moved"].foreign == 0
    assert found["bad"].unreadable == ["orders-0: MALFORMED: not an integer"]
    # two layouts of one partition are one offset, the newer znode's, as diff and sync pick it
    assert found["twice"].offsets == 1


def test_a_topic_gone_from_kafka_is_listed_and_blocks_nothing():
    v = judge([{**row("retired", 5), "topic": "legacy"}], {}, PARTITIONS, [], {}, wrote)[0]
    assert v.topic_gone == ["legacy-5 (ZooKeeper 10)"] and v.ready


def test_a_group_taken_over_by_new_consumers_is_ready_by_syncs_rules():
    # ZooKeeper's znode was last written at 1 s after the epoch (row's mtime); a consumer group
    # committed 10 minutes later.
    found = verdicts([row("live", 0), row("theirs", 0)],
                     {"live": KafkaGroup("Stable", {(T, 0): (5000, "")}, assigned={(T, 0): "m-1"},
                                         protocol_type="consumer", log=held("live", {(T, 0): (5000, 601.0)})),
                      "theirs": KafkaGroup("Empty", {(T, 0): (5000, "")}, protocol_type="consumer",
                                           log=held("theirs", {(T, 0): (5000, 601.0)}))})
    assert found["live"].ready and found["live"].taken_over == 1
    assert found["theirs"].ready and found["theirs"].taken_over == 1


def test_a_value_no_consumer_is_shown_to_own_differs_and_blocks():
    kafka = {
        # committed from outside (no consumer ever joined), lower and higher than ZooKeeper's, after its write
        "outside-low": KafkaGroup("Empty", {(T, 0): (1, "")}, protocol_type="",
                                  log=held("outside-low", {(T, 0): (1, 601.0)}, by="never")),
        "outside-high": KafkaGroup("Empty", {(T, 0): (90, "")}, protocol_type="",
                                   log=held("outside-high", {(T, 0): (90, 601.0)}, by="never")),
        # an admin's reset of a consumer group all of whose members had left: Empty at the commit
        "reset": KafkaGroup("Empty", {(T, 0): (200, "")}, protocol_type="consumer",
                            log=held("reset", {(T, 0): (200, 601.0)}, by="empty")),
        # a canary of the new consumers committed, then the old ones committed to ZooKeeper after it
        "canary": KafkaGroup("Empty", {(T, 0): (100, "")}, protocol_type="consumer",
                             log=held("canary", {(T, 0): (100, -599.0)})),
        # commit times that could not be read
        "unknown": KafkaGroup("Empty", {(T, 0): (100, "")}, protocol_type="consumer",
                              clocks_unknown="reading __consumer_offsets took longer than 30s"),
    }
    found = verdicts([row(g, 0) for g in kafka], kafka)
    for name, v in found.items():
        assert not v.ready and v.taken_over == 0 and v.foreign == 1, name
        assert "committed by a new consumer" not in v.differs[0], v.differs
    assert "from outside: no consumer had joined the group then" in found["outside-low"].differs[0]
    assert "from outside: the group had no member then (protocol type consumer, Empty)" in found["reset"].differs[0]
    assert "before ZooKeeper's last write" in found["canary"].differs[0]
    assert "took longer than 30s" in found["unknown"].differs[0]


def test_a_client_of_no_group_seen_consuming_during_the_watch_took_over():
    flink = held("flink", {(T, 0): (50, 700.0)}, by="never", watched={(T, 0): [30, 40]})
    kafka = {"flink": KafkaGroup("Empty", {(T, 0): (50, "")}, protocol_type="", log=flink)}
    watched = judge([row("flink", 0)], kafka, PARTITIONS, [], {}, wrote, Evidence(True, 10.0))[0]
    assert watched.ready and "seen consuming: 3 commits during the watch, 30 to 50" in watched.taken_over_offsets[0]
    unwatched = judge([row("flink", 0)], kafka, PARTITIONS, [], {}, wrote, Evidence(False, 10.0))[0]
    assert not unwatched.ready
    once = held("admin", {(T, 0): (50, 700.0)}, by="never", watched={(T, 0): []})
    kafka = {"admin": KafkaGroup("Empty", {(T, 0): (50, "")}, protocol_type="", log=once)}
    reset = judge([row("admin", 0)], kafka, PARTITIONS, [], {}, wrote, Evidence(True, 10.0))[0]
    assert not reset.ready and "one commit during the watch: not shown to be a consumer" in reset.differs[0]


def test_registered_consumers_and_writes_during_the_watch_block():
    found = verdicts([row("old", 0), row("v0", 0)],
                     {"old": KafkaGroup("Empty", {(T, 0): (10, "zk2kafka migrate R")}),
                      "v0": KafkaGroup("Empty", {(T, 0): (10, "zk2kafka migrate R")})},
                     moved=[Moved("/consumers/v0/offsets/orders/0", 1_800_000_000.0)],
                     liveness={"old": (1, 2), "idle-registered": (1, 0)})
    assert found["old"].registered == ["1 in ids/", "2 partition(s) owned under owners/"]
    assert found["v0"].written == ["/consumers/v0/offsets/orders/0 at 08:00:00Z"]
    assert not found["idle-registered"].ready, "a registered consumer without offsets is still one"


def test_kafka_refusing_to_show_a_group_is_not_checked_so_not_ready():
    v = verdicts([row("secret", 0)], {"secret": KafkaGroup("Empty", {}, refused="GroupAuthorizationFailedError")})
    assert not v["secret"].ready and "would not show" in v["secret"].unreadable[0]


def _data(found, ready, **more):
    data = {"run": "R", "report": "/s/reports/R", "source": "zk:2181/kafka/consumers", "groups": len(found),
            "offsets": sum(v.offsets for v in found), "ready": ready, "watched": {"quiet_for": 120.0, "shown": "2m"},
            "not_ready": [v.group for v in found if not v.ready], "verdicts": [v.to_json() for v in found],
            "under_root": len(found), "selected_by": [], "not_checked": [], "short_watch": None,
            "left_behind": {"patterns": [], "groups": []}, "own_differences": {},
            "ensemble": summary(Search("zk:2181", "/kafka/consumers", listed=40, seconds=0.25), [], LeftBehind(()))}
    data.update(more)
    data["blocking"] = blocking(data)
    return data


def test_the_text_tables_the_groups_rarest_finding_first_and_says_what_to_do():
    found = judge([row("a-plain", 0), row("z-v0", 0)], {}, PARTITIONS,
                  [Moved("/consumers/z-v0/offsets/orders/0", 1_800_000_000.0)], {"reporting": (1, 2)}, wrote)
    out = text(_data(found, False))
    assert out.splitlines()[:3] == [
        "ready-for-kraft: NOT READY: 3 of 3 group(s) checked under zk:2181/kafka/consumers would leave offsets "
        "behind in ZooKeeper (watched 2m for writes; exit 3)",
        "checked: 3 of 3 group(s) under zk:2181/kafka/consumers; selection: every group and topic",
        "ensemble: searched zk:2181 from / in 0.2s (40 znodes listed, 0 offsets read elsewhere; broker metadata and "
        "/kafka/consumers not walked): 0 other offsets tree(s) with offsets"]
    table = out.split("\n\n")[1].splitlines()
    assert table[0].split() == ["GROUP", "NOT-IN-KAFKA", "OLD-CONSUMER", "WRITTEN", "DIFFERS", "UNREADABLE"]
    assert [line.split() for line in table[1:]] == [["z-v0", "1", "-", "1", "-", "-"],
                                                   ["reporting", "-", "1", "-", "-", "-"],
                                                   ["a-plain", "1", "-", "-", "-", "-"]]
    assert "written during the watch: a client that does not register still commits" in out
    assert "a reviewed plan (its plan id kept in $PLAN: `PLAN=$(zk2kafka diff --group z-v0 --group a-plain " \
           "--json | jq -r .plan_id)`; review its report (`less /s/reports/\"${PLAN%@*}\"/report.md`), " \
           "then `zk2kafka migrate --execute --plan \"$PLAN\" --group z-v0 --group a-plain`)" in out
    assert "a rolling switch with `zk2kafka sync --execute --group z-v0 --group a-plain`" in out
    assert out.endswith("run=R report=/s/reports/R")


def test_no_advice_names_sync_for_a_group_it_would_leave_alone():
    # `mixed` lacks orders-1 in Kafka and holds another committer's value for orders-0: sync would stop it.
    kafka = {"mixed": KafkaGroup("Empty", {(T, 0): (1, "")}, protocol_type="",
                                 log=held("mixed", {(T, 0): (1, 601.0)}, by="never"))}
    found = judge([row("mixed", 0), row("mixed", 1), row("plain", 0)], kafka, PARTITIONS, [], {}, wrote)
    expiry = {"groups": [{"group": "mixed", "clock": "commit", "expires_at": "2026-12-01T00:00:00Z",
                          "all_expire_at": "2026-12-01T00:00:00Z", "time_left_seconds": 3600, "renewable": True,
                          "unknown": None, "sync_refuses": True}],
              "effective_minutes": 10080, "source": "broker", "broker_version": "3.9", "renew_every": "42h",
              "evidence": "/s/snapshots/zk-R.parquet"}
    out = text(_data(found, False, expiry=expiry))
    assert "a rolling switch with `zk2kafka sync --execute --group plain`" in out
    assert "--group mixed" not in out.split("or a rolling switch")[1].split("\n")[0]
    assert "`zk2kafka sync --execute --group mixed" not in out
    assert "not renewed by sync, which writes only over values zk2kafka wrote: mixed" in out
    assert "decide with the group's owner which value its new consumers start from" in out


def test_ready_says_what_was_checked():
    found = judge([row("g", 0)], {"g": KafkaGroup("Empty", {(T, 0): (10, "")})}, PARTITIONS, [], {}, wrote)
    assert text(_data(found, True)).startswith("ready-for-kraft: ready: every ZooKeeper offset of the 1 group(s)")


def test_a_selection_never_clears_the_cluster_and_is_named_with_where_it_came_from():
    found = judge([row("retired", 0)], {"retired": KafkaGroup("Empty", {(T, 0): (10, "")})}, PARTITIONS, [], {}, wrote)
    selected = [{"option": "--group", "pattern": "retired", "from": "flag"},
                {"option": "--exclude-group", "pattern": "scratch-.*", "from": "config file /etc/zk2kafka.toml"}]
    left = LeftBehind(())
    data = _data(found, False, under_root=7, selected_by=selected,
                 not_checked=[{"group": f"g{i}", "offsets": 2, "left_behind": left.group(f"g{i}", "/kafka/consumers")}
                              for i in range(6)])
    lines = text(data).splitlines()
    assert lines[0] == ("ready-for-kraft: NOT READY: 6 group(s) under the root with offsets were not checked "
                        "(outside the selection) (watched 2m for writes; exit 3)")
    assert lines[1] == ("checked: 1 of 7 group(s) under zk:2181/kafka/consumers; selection: --group retired (flag), "
                        "--exclude-group 'scratch-.*' (config file /etc/zk2kafka.toml)")
    assert "not checked (outside the selection): g0 (2 offsets), g1 (2 offsets)" in text(data)


def test_left_behind_on_purpose_by_group_name_or_by_path_on_the_bare_ensemble():
    left = LeftBehind(["retired-.*", "/other-app/.*", "/kafka/consumers/legacy"])
    assert left.group("retired-1", "/kafka/consumers") and not left.group("retired", "/kafka/consumers")
    assert left.group("anything", "/other-app/consumers") and left.group("legacy", "/kafka/consumers")
    assert not left.group("legacy", "/consumers"), "a path is matched whole, on the bare ensemble"
    assert left.path("/other-app/secret") and not left.path("/secret")


def _tree(path, rows, brokers_of=None):
    return Tree(path, path.rsplit("/", 1)[0], brokers_of,
                [{**r, "path": path + r["path"].removeprefix("/consumers"), "zk_consumers": None,
                  "zk_owned_partitions": None} for r in rows])


def test_offsets_elsewhere_block_for_this_clusters_topics_and_are_listed_for_another_clusters_or_gone_topics():
    search = Search("zk:2181", "/kafka/consumers", trees=[
        _tree("/consumers", [row("rootless", 0, offset=20), row("moved", 1)]),
        _tree("/other-app/consumers", [{**row("gone", 0), "topic": "no-such-topic"}]),
        _tree("/theirs/consumers", [row("theirs", 0)], brokers_of="another-cluster"),
        _tree("/same/consumers", [row("same", 0)], brokers_of="this-cluster")])
    kafka = {"moved": KafkaGroup("Empty", {(T, 1): (10, "")})}
    found = {f["path"]: f for f in elsewhere(search, kafka, PARTITIONS, wrote, "this-cluster", LeftBehind(()),
                                             Evidence())}
    assert set(found) == {"/consumers/rootless", "/other-app/consumers/gone", "/theirs/consumers/theirs",
                          "/same/consumers/same"}, "a group whose offsets Kafka holds is clear"
    assert found["/consumers/rootless"]["blocking"] and found["/consumers/rootless"]["findings"] == {
        "not_in_kafka": ["orders-0 (ZooKeeper 20)"]}
    assert not found["/other-app/consumers/gone"]["blocking"]
    assert not found["/theirs/consumers/theirs"]["blocking"]
    assert found["/theirs/consumers/theirs"]["other_cluster"] == "another-cluster"
    assert found["/same/consumers/same"]["blocking"], "brokers of this very cluster: its offsets all the same"
    data = summary(search, list(found.values()), LeftBehind(()))
    assert data["move"] == ["zk2kafka diff --zookeeper zk:2181 --zk-root /consumers --group rootless",
                            "zk2kafka diff --zookeeper zk:2181 --zk-root /same/consumers --group same"]


def test_the_diff_that_moves_a_tree_elsewhere_quotes_what_the_shell_would_read():
    command = move_command("zk1:2181,zk2:2181", "/my app/consumers", ["a.b", "it's"])
    assert shlex.split(command) == ["zk2kafka", "diff", "--zookeeper", "zk1:2181,zk2:2181", "--zk-root",
                                    "/my app/consumers", "--group", r"a\.b", "--group", "it's"]
    assert " --group " not in move_command("zk:2181", "/consumers", [f"g{i}" for i in range(11)])


def test_an_incomplete_search_or_a_path_it_could_not_list_blocks_unless_left_behind():
    found = judge([row("g", 0)], {"g": KafkaGroup("Empty", {(T, 0): (10, "")})}, PARTITIONS, [], {}, wrote)
    search = Search("zk:2181", "/kafka/consumers", listed=10, unreadable=["/secret: NoAuthError"],
                    cut_short="stopped after 10 znodes (--ensemble-max-znodes)")
    data = _data(found, False, ensemble=summary(search, [], LeftBehind(())))
    assert data["blocking"] == ["1 path(s) of the ensemble could not be listed",
                                "the search of the ensemble stopped after 10 znodes (--ensemble-max-znodes)"]
    assert "could not list (offsets may lie below): /secret: NoAuthError" in text(data)
    left = _data(found, True, ensemble=summary(Search("zk:2181", "/kafka/consumers", unreadable=[
        "/secret: NoAuthError"]), [], LeftBehind(["/secret"])),
        left_behind={"patterns": [{"option": "--leave-behind", "pattern": "/secret", "from": "flag"}], "groups": []})
    assert left["blocking"] == []
    assert "left behind on purpose (--leave-behind /secret (flag)): /secret" in text(left)


def test_a_short_watch_is_said_in_the_first_lines():
    found = judge([row("g", 0)], {"g": KafkaGroup("Empty", {(T, 0): (10, "")})}, PARTITIONS, [], {}, wrote)
    lines = text(_data(found, True, watched={"quiet_for": 1.5, "shown": "1.5s"},
                       short_watch=short_watch(1.5))).splitlines()
    assert "nothing written for 1.5s" in lines[0]
    assert lines[3] == ("warning: --quiet-for 1.5s is shorter than 60s, the old consumer's default "
                        "auto.commit.interval.ms: a client committing at that interval may not have written within "
                        "the watch, and would not be seen (2m covers one interval with room to spare)")


def test_groups_taken_over_are_listed_with_their_values_ready_or_not():
    found = judge([row("new", 0), row("old", 0)], {"new": KafkaGroup("Stable", {(T, 0): (50, "")})}, PARTITIONS,
                  [], {}, wrote)
    taken = ["orders-0: ZooKeeper 10, Kafka 50 (a value zk2kafka did not write)"]
    verdicts = [{**v.to_json(), "taken_over_offsets": taken if v.group == "new" else []} for v in found]
    for ready in (True, False):
        data = {**_data(found, ready), "verdicts": verdicts}
        assert f"taken over in Kafka: new: {taken[0]}" in text(data)


def test_a_difference_zk2kafka_made_itself_is_not_called_another_writer():
    kafka = {"clamped": KafkaGroup("Empty", {(T, 0): (50, "zk2kafka migrate R")})}
    found = judge([row("clamped", 0, offset=999)], kafka, PARTITIONS, [], {}, wrote)
    own = {"clamped": ["orders-0: run R committed Kafka 50 while ZooKeeper held 999, unchanged since "
                       "(--out-of-range clamp --no-zk-write)"]}
    out = text(_data(found, False, own_differences=own))
    assert "something still commits there" not in out
    assert f"  clamped: zk2kafka's own: {own['clamped'][0]}" in out
    assert "differs from Kafka: zk2kafka itself committed to Kafka another value than ZooKeeper's" in out
    assert "something still commits there" in text(_data(found, False))


def test_the_search_sets_the_connections_chroot_aside():
    from migrate.connection import Connection
    from migrate.zk.ensemble import bare

    plain, chroot = bare(Connection(zookeeper="zk1:2181,zk2:2181/kafka/prod"))
    assert (plain.zookeeper, chroot) == ("zk1:2181,zk2:2181", "/kafka/prod")
    assert bare(Connection(zookeeper="zk1:2181"))[1] == "" and bare(Connection(zookeeper="zk1:2181/"))[1] == ""


def test_the_report_lists_what_the_selection_left_out_and_what_lies_elsewhere():
    search = Search("zk:2181", "/kafka/consumers", trees=[_tree("/consumers", [row("rootless", 0, offset=20)])])
    found = judge([row("g", 0)], {"g": KafkaGroup("Empty", {(T, 0): (10, "")})}, PARTITIONS, [], {}, wrote)
    none = LeftBehind(())
    data = _data(found, False, selection="--group g", bootstrap_server="k:9092",
                 evidence={"zookeeper": "z", "kafka": "k"},
                 not_checked=[{"group": "late", "offsets": 2, "left_behind": False}],
                 ensemble=summary(search, elsewhere(search, {}, PARTITIONS, wrote, None, none, Evidence()), none))
    data["watched"].update({"from": "a", "to": "b"})
    report = markdown(data)
    assert report.splitlines()[2].startswith("**NOT READY: 1 group(s) under the root with offsets were not checked "
                                             "(outside the selection); 1 group(s) elsewhere in the ensemble")
    assert "- `late`: 2 offsets" in report
    assert "- `/consumers/rootless` (blocks): not in Kafka: orders-0 (ZooKeeper 20)" in report


def test_a_live_group_takes_over_only_the_partitions_its_members_show_they_consume():
    # ZooKeeper holds orders and invoices (last written 1 s after the epoch); the new consumers in Kafka
    # subscribe to orders only. Member m-1 committed orders-0 ten minutes after ZooKeeper's write: taken over.
    # m-2 holds orders-1 and has committed nothing of it: its process may be gone (a session not timed out
    # yet, a static member), so holding it shows nothing.
    rows = [row("g", 0, 10), row("g", 1, 11), {**row("g", 0, 7), "topic": "invoices",
                                               "path": "/consumers/g/offsets/invoices/0"}]
    kafka = {"g": KafkaGroup("Stable", {(T, 0): (15, "")}, members=2, assigned={(T, 0): "m-1", (T, 1): "m-2"},
                             log=held("g", {(T, 0): (15, 601.0)}))}
    v = judge(rows, kafka, PARTITIONS | {("invoices", 0)}, [], {}, wrote)[0]
    assert not v.ready and v.not_in_kafka == ["invoices-0 (ZooKeeper 7)"]
    assert v.taken_over_offsets == [
        "orders-0: ZooKeeper 10, Kafka 15 (committed by a new consumer 1970-01-01T00:10:01Z, by member m-1 of "
        "generation 4, assigned it (protocol type consumer), after ZooKeeper's last write 1970-01-01T00:00:01Z "
        "(clock margin 60s))"]
    assert v.differs == ["orders-1: ZooKeeper 11, Kafka none (assigned to live member m-2, not shown consuming it: "
                         "it has committed nothing of it)"]
    assert (v.taken_over, v.foreign, v.kafka_state, v.kafka_members) == (1, 0, "Stable", 2)


def test_a_member_that_holds_a_partition_but_committed_before_zookeepers_last_write_differs():
    # A canary joined, committed 5 at 00:00:30 and was killed; its session has not timed out, so the group
    # is still Stable with it holding the partition. The old consumers went on and wrote ZooKeeper at 00:05:00.
    zk = {**row("g", 0, 90), "mtime": 300_000}
    since = held("g", {(T, 0): (5, 30.0)})
    since.metadata = since.metadata._replace(state_ms=20_000)
    kafka = {"g": KafkaGroup("Stable", {(T, 0): (5, "")}, members=1, assigned={(T, 0): "canary-1"}, log=since)}
    v = judge([zk], kafka, PARTITIONS, [], {}, wrote)[0]
    assert not v.ready and v.taken_over == 0 and v.foreign == 1
    assert v.differs == [
        "orders-0: ZooKeeper 90, Kafka 5 (assigned to live member canary-1 (the group's generation since "
        "1970-01-01T00:00:20Z), not shown consuming it: Kafka's commit 1970-01-01T00:00:30Z by member m-1 of "
        "generation 4, assigned it (protocol type consumer), before ZooKeeper's last write 1970-01-01T00:05:00Z: "
        "the old consumers committed after it (clock margin 60s))"]
    # Committing it during the watch, after ZooKeeper's write, is consuming: taken over.
    kafka["g"] = KafkaGroup("Stable", {(T, 0): (95, "")}, members=1, assigned={(T, 0): "canary-1"},
                            log=held("g", {(T, 0): (95, 900.0)}, watched={(T, 0): [93]}))
    v = judge([zk], kafka, PARTITIONS, [], {}, wrote, Evidence(watching=True))[0]
    assert v.ready and v.taken_over == 1


def test_a_live_groups_unassigned_partition_already_in_kafka_is_ready():
    kafka = {"g": KafkaGroup("Stable", {(T, 1): (11, "zk2kafka migrate R"), (T, 0): (5000, "")}, members=1,
                             assigned={(T, 0): "m-1"}, log=held("g", {(T, 0): (5000, 601.0)}))}
    v = verdicts([row("g", 0), row("g", 1, 11)], kafka)["g"]
    assert v.ready and (v.in_kafka, v.taken_over) == (1, 1)


def test_a_value_a_new_consumer_committed_is_named_as_taken_over():
    v = verdicts([row("g", 0)], {"g": KafkaGroup("Empty", {(T, 0): (5000, "")}, protocol_type="consumer",
                                                 log=held("g", {(T, 0): (5000, 601.0)}))})["g"]
    assert v.ready and v.taken_over_offsets == [
        "orders-0: ZooKeeper 10, Kafka 5000 (committed by a new consumer 1970-01-01T00:10:01Z, by member m-1 of "
        "generation 4, assigned it (protocol type consumer), after ZooKeeper's last write 1970-01-01T00:00:01Z "
        "(clock margin 60s))"]


def test_ready_with_groups_left_behind_counts_only_the_groups_it_cleared():
    found = judge([row("moved", 0), row("moved", 1), row("abandoned", 0)],
                  {"moved": KafkaGroup("Empty", {(T, 0): (10, ""), (T, 1): (10, "")})}, PARTITIONS, [], {}, wrote)
    data = _data(found, True, not_ready=[], left_behind={
        "patterns": [{"option": "--leave-behind", "pattern": "abandoned", "from": "flag"}], "groups": ["abandoned"]})
    first = text(data).splitlines()[0]
    assert first.startswith("ready-for-kraft: ready: every ZooKeeper offset of the 1 cleared of 2 group(s) checked "
                            "under zk:2181/kafka/consumers (2 offsets) is in Kafka"), first
    assert first.endswith("what is not cleared is left behind on purpose (below)")
