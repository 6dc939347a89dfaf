"""The one reader of __consumer_offsets (migrate/kafka/offsets_log/), its pure parts: the wire (records.py,
wire/fetch.py), what a record means (schema.py), the records applied in log order as the coordinator applies them
(partition.py, group.py: members at the moment of each commit, transactions resolved by their markers, commits
during the watch), and the clocks they measure (clocks.py). The records are built from Kafka's schemas and
wrapped in batches by kafka-python's own builders (support/records.py); on real brokers of every release:
tests/compat."""

from __future__ import annotations

import struct

import pytest
from kafka.record.memory_records import MemoryRecords

from migrate.kafka.clocks import Clocks
from migrate.kafka import takeover
from migrate.kafka.offsets_log import partition_for
from migrate.kafka.offsets_log.group import GroupLog
from migrate.kafka.offsets_log.kept import Kept
from migrate.kafka.offsets_log.partition import PartitionLog
from migrate.kafka.offsets_log.records import CorruptRecords, batches
from migrate.kafka.offsets_log.schema import commit_clock, commit_value, group_metadata, member_key, offset_key
from migrate.kafka.wire import fetch as fetch_codec

from support import records as r

T0 = 1_800_000_000_000


def test_a_group_is_read_from_the_partition_its_coordinator_keeps_it_in():
    # Java: "abc".hashCode() == 96354; "polygenelubricants".hashCode() == Integer.MIN_VALUE (Utils.abs -> 0).
    assert partition_for("abc", 50) == 96354 % 50
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("", 50) == 0


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_an_offset_commit_value_of_every_version(version):
    value = r.commit_value(7, T0, "meta", version, expire_ms=T0 + 5)
    found = commit_value(value)
    assert (found.offset, found.metadata, found.commit_ms) == (7, "meta", T0)
    assert found.expire_ms == (T0 + 5 if version == 1 else None)
    assert commit_clock(value) == (found.commit_ms, found.expire_ms)
    assert commit_value(struct.pack(">h", 9) + b"\x00" * 20) is None
    assert commit_clock(struct.pack(">h", 9) + b"\x00" * 20) is None


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_a_group_metadata_value_of_every_version_names_its_members_and_their_partitions(version):
    value = r.group_value(6, [("m-1", {"orders": [0, 2]}), ("m-2", {"orders": [1]})], state_ms=T0, version=version)
    found = group_metadata(value)
    assert (found.protocol_type, found.generation) == ("consumer", 6)
    assert found.state_ms == (T0 if version >= 2 else None)
    assert [(m.member_id, m.client_id, sorted(m.assigned)) for m in found.members] == [
        ("m-1", "client-m-1", [("orders", 0), ("orders", 2)]), ("m-2", "client-m-2", [("orders", 1)])]
    # Another protocol type's assignment is not the ConsumerProtocol's: not told.
    assert group_metadata(r.group_value(6, [("w", {"x": [0]})], "connect", version=version)).members[0].assigned \
        is None


def test_keys_name_their_group_and_what_they_are_of():
    assert offset_key(r.offset_key("billing", "orders", 4)) == ("billing", "orders", 4)
    assert offset_key(r.offset_key("billing", "orders", 4, version=0)) == ("billing", "orders", 4)
    assert member_key(r.member_key("g", "m-1")) == ("g", "m-1")


def records(data: bytes, groups=None):
    return [(b.base_offset, b.last_offset, b.control, b.transactional, b.records) for b in batches(data, groups)]


def test_record_batches_are_read_as_kafka_python_reads_them():
    rows = [(r.offset_key("a", "t", p), r.commit_value(p, T0)) for p in range(3)] + [(r.group_key("a"), None)]
    data = r.batch(rows, base_offset=40, timestamp=T0) + r.batch(rows[:1], base_offset=44, timestamp=T0 + 1)
    ours = [(o, k, v) for b in batches(data) for o, k, v in b.records]
    theirs = []
    memory = MemoryRecords(data)
    while memory.has_next():
        theirs += [(rec.offset, rec.key, rec.value) for rec in memory.next_batch()]
    assert ours == theirs and len(ours) == 5
    assert [b.max_timestamp for b in batches(data)] == [T0, T0 + 1]


def test_only_the_asked_groups_records_are_kept_and_a_cut_batch_waits_for_the_next_fetch():
    data = r.batch([(r.offset_key("a", "t", 0), r.commit_value(1, T0)), (r.offset_key("b", "t", 0),
                                                                       r.commit_value(2, T0))], base_offset=0)
    (only_b,) = records(data, frozenset({b"b"}))
    assert [k for _, k, _ in only_b[4]] == [r.offset_key("b", "t", 0)] and only_b[:2] == (0, 1)
    assert records(data + data[:30]) == records(data)   # the next batch is cut: left for the next fetch


@pytest.mark.parametrize("codec", [0, 1])   # none, gzip
def test_message_sets_of_kafka_0_10_2_are_read_too(codec):
    rows = [(r.offset_key("a", "t", p), r.commit_value(p, T0, version=1)) for p in range(3)]
    got = [(o, k, v) for b in batches(r.messages(rows, base_offset=10, timestamp=T0, compression=codec))
           for o, k, v in b.records]
    assert got == [(10 + p, k, v) for p, (k, v) in enumerate(rows)]


def test_a_compressed_batch_is_read_and_corrupt_bytes_are_said():
    rows = [(r.offset_key("a", "t", 0), r.commit_value(1, T0))]
    assert records(r.batch(rows, compression=1)) == records(r.batch(rows))
    broken = bytearray(r.batch(rows, base_offset=7))
    broken[-3] ^= 0xFF
    with pytest.raises(CorruptRecords, match="at offset 7: the record batch's CRC-32C does not match"):
        list(batches(bytes(broken)))


def apply(log: PartitionLog, rows, base, **kw):
    for b in batches(r.batch(rows, base_offset=base, **kw)):
        log.apply(b)


def commit(group, partition, offset, at=T0):
    return r.offset_key(group, "t", partition), r.commit_value(offset, at)


def test_a_commit_is_a_members_only_while_the_records_show_members_and_one_is_assigned_it():
    groups = {"g": GroupLog("g")}
    log = PartitionLog(groups)
    apply(log, [commit("g", 0, 5)], 0)                                            # before any consumer joined
    apply(log, [(r.group_key("g"), r.group_value(1, [("m-1", {"t": [1]})], state_ms=T0))], 1)
    apply(log, [commit("g", 1, 10), commit("g", 2, 11)], 2)                        # a member's; p2 no one's
    apply(log, [(r.group_key("g"), r.group_value(2, [], state_ms=T0 + 9))], 4)    # the last member left: Empty
    apply(log, [commit("g", 3, 20)], 5)                                           # an admin's reset
    g = groups["g"]
    by = {p: g.committed(("t", p)).by for p in range(4)}
    assert by[0].members == 0 and by[0].generation is None
    assert (by[1].members, by[1].generation, by[1].member.member_id, by[1].covered) == (1, 1, "m-1", True)
    assert (by[2].members, by[2].covered, by[2].member) == (1, False, None)
    assert (by[3].members, by[3].generation, by[3].protocol_type) == (0, 2, "consumer")
    assert g.empty_since == T0 + 9 and g.protocol_type == "consumer"
    assert g.commits == ((T0, None),)   # the distinct retention clocks


def test_a_kip848_groups_members_are_its_member_records_until_their_tombstones():
    groups = {"g": GroupLog("g")}
    log = PartitionLog(groups)
    apply(log, [(r.group_key("g", kind=3), b"\x00\x00" + b"\x00" * 6),
                (r.member_key("g", "m-1"), r.member_value("app"))], 0)
    apply(log, [commit("g", 0, 5)], 2)
    apply(log, [(r.member_key("g", "m-1"), None)], 3)
    apply(log, [commit("g", 1, 6)], 4)
    g = groups["g"]
    assert g.committed(("t", 0)).by.members == 1 and g.protocol_type == "consumer"
    assert g.committed(("t", 1)).by.members == 0


def test_a_commit_whose_groups_earlier_records_the_cleaner_removed_shows_no_membership_either_way():
    # Offsets 0-2 are gone: the record that showed g's members, superseded by its Empty record (kept, at 5).
    groups = {"g": GroupLog("g"), "seeded": GroupLog("seeded"), "kept": GroupLog("kept")}
    log = PartitionLog(groups)
    apply(log, [(r.group_key("kept"), r.group_value(3, [], state_ms=T0))], 0)     # kept: its latest record
    apply(log, [commit("g", 0, 40), commit("seeded", 0, 7), commit("kept", 0, 9)], 3)
    apply(log, [(r.group_key("g"), r.group_value(2, [], state_ms=T0 + 9))], 5)   # g's members left: Empty
    assert log.compacted == 3
    g = groups["g"].committed(("t", 0))
    assert g.by.compacted and g.by.members == 0
    writer, words = takeover.committer(g, None, watching=True)
    assert writer == takeover.COMPACTED and "whether a consumer had joined then is not shown" in words
    finding = takeover.judge(zk_written=T0 / 1000 - 3600, seen=takeover.Seen(g), watching=True)
    assert not finding.taken_over and "no consumer is shown" in finding.words
    # A group with no record anywhere never had members (its latest would have survived); one whose record
    # before the commit survived is as that record shows it.
    assert takeover.committer(groups["seeded"].committed(("t", 0)), None, watching=False) == (
        takeover.OUTSIDE, "from outside: no consumer had joined the group then")
    assert takeover.committer(groups["kept"].committed(("t", 0)), None, watching=False)[0] == takeover.OUTSIDE
    # Nothing removed: the records show who committed.
    whole = {"g": GroupLog("g")}
    log = PartitionLog(whole)
    apply(log, [commit("g", 0, 40)], 0)
    apply(log, [(r.group_key("g"), r.group_value(2, [], state_ms=T0 + 9))], 1)
    assert log.compacted is None and not whole["g"].committed(("t", 0)).by.compacted


def test_a_members_commit_seen_once_is_kept_in_the_state_dir_and_shown_after_the_cleaner_ran(tmp_path, caplog):
    # Seen whole: m-1's commit at log offset 1 (the record that showed m-1 at 0).
    seen = {"g": GroupLog("g")}
    log = PartitionLog(seen)
    apply(log, [(r.group_key("g"), r.group_value(4, [("m-1", {"t": [0]})], state_ms=T0))], 0)
    apply(log, [commit("g", 0, 80, at=T0 + 5)], 1)
    apply(log, [(r.group_key("g"), r.group_value(5, [], state_ms=T0 + 9))], 2)
    assert log.compacted is None
    kept = Kept(tmp_path)
    first = kept.use("g", ("t", 0), seen["g"].committed(("t", 0)))
    assert first.by.member.member_id == "m-1" and not first.by.kept
    kept.save()
    # Read again once cleaned: offset 0 gone, the commit at 1 and the Empty record at 2 kept (h: the same).
    cleaned = {"g": GroupLog("g"), "h": GroupLog("h")}
    log = PartitionLog(cleaned)
    apply(log, [commit("g", 0, 80, at=T0 + 5), commit("h", 0, 80, at=T0 + 5)], 1)
    apply(log, [(r.group_key("g"), r.group_value(5, [], state_ms=T0 + 9)),
                (r.group_key("h"), r.group_value(5, [], state_ms=T0 + 9))], 3)
    assert cleaned["g"].committed(("t", 0)).by.compacted
    again = Kept(tmp_path)   # another command, later
    shown = again.use("g", ("t", 0), cleaned["g"].committed(("t", 0)))
    assert (shown.by.members, shown.by.generation, shown.by.member.member_id, shown.by.kept) == (1, 4, "m-1", True)
    writer, words = takeover.committer(shown, None, watching=True)
    assert writer == takeover.MEMBER and "seen by zk2kafka before __consumer_offsets was cleaned" in words
    # Kept for that record only: another group, or a commit at another place in the log, is not shown.
    assert again.use("h", ("t", 0), cleaned["h"].committed(("t", 0))).by.compacted
    moved = {"g": GroupLog("g")}
    log = PartitionLog(moved)
    apply(log, [commit("g", 0, 80, at=T0 + 5)], 7)
    apply(log, [(r.group_key("g"), r.group_value(5, [], state_ms=T0 + 9))], 8)
    assert again.use("g", ("t", 0), moved["g"].committed(("t", 0))).by.compacted
    # A state dir that cannot keep it says so once and loses nothing else.
    (tmp_path / "file").write_text("")
    broken = Kept(tmp_path / "file")
    broken.use("g", ("t", 0), first)
    broken.save()
    assert "could not keep the members' commits" in caplog.text


def test_transactions_are_resolved_by_their_markers_as_the_coordinator_resolves_them():
    groups = {"g": GroupLog("g")}
    log = PartitionLog(groups)
    apply(log, [commit("g", 0, 100)], 0)
    apply(log, [commit("g", 0, 150)], 1, producer_id=7, transactional=True)       # aborted below
    apply(log, [r.marker(commit=False)], 2, producer_id=7, transactional=True, control=True)
    assert groups["g"].committed(("t", 0)).offset == 100 and groups["g"].committed(("t", 0)).log_offset == 0
    apply(log, [commit("g", 1, 40)], 3, producer_id=8, transactional=True)        # committed below
    apply(log, [commit("g", 1, 30)], 4)                                           # newer in the log: it wins
    apply(log, [commit("g", 2, 77)], 5, producer_id=8, transactional=True)
    apply(log, [r.marker(commit=True)], 6, producer_id=8, transactional=True, control=True)
    assert groups["g"].committed(("t", 1)).offset == 30
    assert groups["g"].committed(("t", 2)).offset == 77
    apply(log, [commit("g", 3, 9)], 7, producer_id=9, transactional=True)         # still open: no commit
    assert groups["g"].committed(("t", 3)) is None
    # the quick look at the newest record's value (the gate's and sync's check against Kafka's) agrees
    assert [groups["g"].newest_offset(("t", p)) for p in range(4)] == [100, 30, 77, None]


def test_a_transactions_commit_while_the_group_has_members_is_no_members_by_itself():
    # m-1 is assigned t-0; a producer commits t-0 in a transaction: the record does not say whether it carried
    # m-1's generation, so only the watch can show a consumer there.
    groups = {"g": GroupLog("g")}
    log = PartitionLog(groups, watch_from=3)
    apply(log, [(r.group_key("g"), r.group_value(4, [("m-1", {"t": [0]})], state_ms=T0))], 0)
    apply(log, [commit("g", 0, 90)], 1, producer_id=8, transactional=True)
    apply(log, [r.marker(commit=True)], 2, producer_id=8, transactional=True, control=True)
    by = groups["g"].committed(("t", 0)).by
    assert by.transactional and by.members == 1 and by.member.member_id == "m-1"
    writer, words = takeover.committer(groups["g"].committed(("t", 0)), None, watching=True)
    assert writer == takeover.TRANSACTIONAL and "the record does not show the member's generation" in words
    # Committing on in transactions during the watch, moving forward: seen consuming.
    for i, offset in enumerate((91, 95)):
        apply(log, [commit("g", 0, offset)], 3 + 2 * i, producer_id=8, transactional=True)
        apply(log, [r.marker(commit=True)], 4 + 2 * i, producer_id=8, transactional=True, control=True)
    commit_ = groups["g"].committed(("t", 0))
    assert takeover.committer(commit_, groups["g"].watched(("t", 0)), watching=True)[0] == takeover.WATCHED
    # A plain commit by the member is the member's.
    apply(log, [commit("g", 0, 99)], 7)
    assert takeover.committer(groups["g"].committed(("t", 0)), None, watching=False)[0] == takeover.MEMBER


def test_commits_during_the_watch_are_counted_from_the_watchs_mark_in_the_log():
    groups = {"g": GroupLog("g")}
    log = PartitionLog(groups, watch_from=2)
    for i, offset in enumerate((10, 20, 30, 35)):
        apply(log, [commit("g", 0, offset)], i)
    apply(log, [commit("g", 1, 50)], 4)
    apply(log, [(r.offset_key("g", "t", 2), r.commit_value(5, T0)), (r.offset_key("g", "t", 2), None)], 5)
    watched = groups["g"].watched
    assert watched(("t", 0)) == (2, 30, 35) and watched(("t", 0)).consuming
    assert watched(("t", 1)) == (1, 50, 50) and not watched(("t", 1)).consuming
    assert groups["g"].committed(("t", 2)) is None    # a tombstone: the offset deleted


def test_zk2kafkas_own_commits_during_the_watch_are_never_a_consumers():
    groups = {"g": GroupLog("g")}
    log = PartitionLog(groups, watch_from=0)
    ours = [(r.offset_key("g", "t", 0), r.commit_value(8, T0, "zk2kafka migrate 20261205-101010-ab12cd")),
            (r.offset_key("g", "t", 0), r.commit_value(8, T0, "zk2kafka sync 20261205-101010-ab12cd")),
            (r.offset_key("g", "t", 0), r.commit_value(8, T0, "moved by ops"))]
    for i, record in enumerate([*ours[:2], commit("g", 0, 9), ours[2]]):
        apply(log, [record], i)
    g = groups["g"]
    # One outside commit beside zk2kafka's renewals: one commit, not a consumer seen consuming.
    assert g.watched(("t", 0), own=frozenset({"moved by ops"})) == (1, 9, 9)
    # Without the journal's custom --metadata, that one is another committer's: still no consumer.
    assert not g.watched(("t", 0)).consuming
    apply(log, [commit("g", 0, 12)], 4)
    assert g.watched(("t", 0), own=frozenset({"moved by ops"})) == (2, 9, 12)
    assert g.watched(("t", 0), own=frozenset({"moved by ops"})).consuming


def test_clocks_bound_each_server_and_widen_the_margin_by_the_measured_lead():
    clocks = Clocks()
    assert clocks.lead().widened(60) == 60 and clocks.lead().assumed
    clocks.kafka_read(0, stamped_ms=1_000_300_000, read_at=1_000_000.2)          # stamped 300 s after we read it
    lead = clocks.lead()
    assert round(lead.lo, 1) == 299.8 and lead.hi is None and lead.assumed and lead.widened(60) == 360
    clocks.kafka_sent(0, sent_at=1_000_000.0, stamped_ms=1_000_300_500)            # our commit, stamped +300.5
    clocks.zk_seen(mtime_ms=1_000_000_000, seen_at=1_000_000.1)                    # ZooKeeper -0.1 at least
    lead = clocks.lead()
    assert round(lead.hi, 1) == 300.6 and not lead.assumed and lead.widened(60) == 361
    assert lead.to_json(60)["effective_margin"] == 361
    registered = Clocks()
    registered.broker_registered(1, timestamp_ms=5_300_000, ctime_ms=5_000_000)
    assert registered.lead().lo == 300 and registered.lead().widened(60) == 360
    behind = Clocks()
    behind.kafka_sent(0, sent_at=1_000_000.0, stamped_ms=999_000_000)              # the broker 1000 s behind
    behind.zk_seen(mtime_ms=1_000_000_000, seen_at=1_000_000.0)
    assert behind.lead().widened(60) == 60   # never narrower than the margin given


def test_a_zookeeper_clock_probed_behind_widens_the_margin_unless_a_broker_is_shown_behind_too():
    class Probed:
        sent, answered, ctime_ms, how = 1_000_000.0, 1_000_000.2, 999_700_100, "the clock probe /zk2kafka/clock-1"

    clocks = Clocks()
    clocks.broker_registered(0, timestamp_ms=5_000_000, ctime_ms=5_000_000)   # registered when the clocks agreed
    clocks.kafka_read(0, stamped_ms=999_000_000, read_at=1_000_000.3)           # an old record: a weak bound
    assert clocks.lead().widened(1) == 1
    clocks.zk_probed(Probed())                                                  # ZooKeeper 299.9 s behind at most
    lead = clocks.lead()
    assert round(lead.zk_behind, 1) == 299.9 and lead.widened(1) == 301
    assert lead.to_json(1)["zookeeper"]["ahead_at_most"] == {"seconds": -299.899, "by": Probed.how}
    assert lead.to_json(1)["zookeeper"]["not_measured_from_above"] is None
    clocks.kafka_sent(0, sent_at=1_000_000.0, stamped_ms=999_800_000)          # the broker 200 s behind at most
    assert clocks.lead().zk_behind is None and clocks.lead().widened(1) == 102  # its lead: 100.1 at most

    unprobed = Clocks()
    unprobed.zk_probed("the clock probe is forbidden (--no-clock-probe)")
    assert unprobed.lead().widened(1) == 1
    assert unprobed.lead().to_json(1)["zookeeper"]["not_measured_from_above"] == (
        "the clock probe is forbidden (--no-clock-probe)")


def test_a_fetch_request_and_answer_of_each_version():
    for version in (3, 4, 5, 7, 9, 11):
        request = fetch_codec.FetchRequest(version, "__consumer_offsets", {3: 40, 1: 7}, 1 << 20, 1 << 25).encoded(
            version, 9, "c")
        (size,) = struct.unpack_from(">i", request)
        assert size == len(request) - 4 and struct.unpack_from(">hhi", request, 4) == (1, version, 9)
        body = struct.pack(">i", 0) + (struct.pack(">hi", 0, 0) if version >= 7 else b"")
        part = struct.pack(">ihq", 3, 0, 99) + (struct.pack(">q", 99) if version >= 4 else b"")
        part += struct.pack(">q", 0) if version >= 5 else b""
        part += struct.pack(">i", 1) + struct.pack(">qq", 7, 40) if version >= 4 else b""
        part += struct.pack(">i", -1) if version >= 11 else b""
        part += struct.pack(">i", 3) + b"abc"
        body += struct.pack(">i", 1) + r.string("__consumer_offsets") + struct.pack(">i", 1) + part
        error, (found,) = fetch_codec.decode_answer(version, body)
        assert error == 0 and found == (3, 0, 99, 0 if version >= 5 else -1, b"abc")


def test_records_that_cannot_be_read_date_nothing_and_show_no_member():
    groups = {"g": GroupLog("g")}
    log = PartitionLog(groups, watch_from=0)
    apply(log, [(r.group_key("g"), r.group_value(1, [("m-1", {"t": [0]})])[:12])], 0)   # cut short
    apply(log, [(r.offset_key("g", "t", 0), r.commit_value(5, T0)[:6])], 1)              # cut short
    apply(log, [commit("g", 1, 7)], 2)
    g = groups["g"]
    assert g.metadata is None and g.committed(("t", 0)) is None
    assert g.committed(("t", 1)).by.members == 0 and g.commits == ((T0, None),)
    assert g.watched(("t", 0)) is None and g.watched(("t", 1)) == (1, 7, 7)


def _membership_as_read(state, key):
    """The rule membership() applies, written plainly: the first member assigned the partition
    holds it; a partition no member holds is known unheld only when every assignment is told."""
    from migrate.kafka.offsets_log.group import Membership

    told = [m for m in state.members if m.assigned is not None]
    holder = next((m for m in told if key in m.assigned), None)
    covered = None if len(told) < len(state.members) and holder is None else holder is not None
    return Membership(len(state.members), state.generation, state.protocol_type, holder, covered)


@pytest.mark.parametrize("assignments", [
    [{("t", 0), ("t", 1)}, {("t", 2)}],              # every assignment told
    [{("t", 0)}, None],                                # one untold
    [None, None],                                      # none told (another protocol type)
    [{("t", 0), ("t", 1)}, {("t", 1)}],                # a partition in two: the first holds it
    [set(), {("u", 0)}],                               # an empty assignment
])
def test_a_commits_membership_is_the_first_member_assigned_its_partition(assignments):
    from migrate.kafka.offsets_log.group import membership
    from migrate.kafka.offsets_log.schema import GroupMetadata, Member

    members = tuple(Member(f"m{i}", f"c{i}", "/10.0.0.1", None if a is None else frozenset(a))
                    for i, a in enumerate(assignments))
    state = GroupMetadata("consumer", 7, 1_700_000_000_000, members)
    for key in [("t", 0), ("t", 1), ("t", 2), ("t", 3), ("u", 0)]:
        assert membership(state, key) == _membership_as_read(state, key), key
    assert membership(state, ("t", 0)) is membership(state, ("t", 0))   # shared, not one per commit
