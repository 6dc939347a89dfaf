"""The ZooKeeper half's fence by read: which znodes a run rewrites, which it reads again after the Kafka
commit instead, and what that read accepts; and that the read follows a sync with the leader."""

from __future__ import annotations

import pytest
from kazoo.client import KazooState
from kazoo.exceptions import ConnectionLoss

from migrate.errors import ZkUnavailable
from migrate.journal.values import Partition
from migrate.write.zk_half import ZkHalf
from migrate.zk.writer import ZkOffsetWriter, Znode

PATH = "/consumers/g/offsets/t/{}"


def part(partition: int, offset: int, before: bytes, version: int = 4, mzxid: int = 90,
         layout: str = "plain") -> Partition:
    return Partition("t", partition, offset, PATH.format(partition), version, layout, None, mzxid,
                     None, None, before, version)


class Store:
    """A ZooKeeper of znodes by path, read and written as ZkOffsetWriter would."""

    def __init__(self, nodes: dict[str, Znode]):
        self.nodes, self.writes, self.latest_reads = dict(nodes), [], 0

    def read(self, paths):
        return {p: self.nodes[p] for p in paths}

    def read_latest(self, paths):
        self.latest_reads += 1
        return self.read(paths)

    def write_many(self, writes):
        self.writes.append(writes)
        for group_writes in writes.values():
            for path, (value, version) in group_writes.items():
                node = self.nodes[path]
                assert node.version == version
                self.nodes[path] = Znode(value, version + 1, node.mzxid + 100)
        return {g: None for g in writes}


def nodes_of(parts: list[Partition]) -> dict[str, Znode]:
    return {p.zk_path: Znode(p.before_zk_value, p.before_zk_version, p.zk_mzxid) for p in parts}


def test_only_the_znodes_whose_bytes_change_are_written():
    parts = [part(0, 10, b"10"), part(1, 11, b" 11\n"), part(2, 12, b'{"offset":12,"partition":2}', layout="storm"),
             part(3, 13, b"13")]
    store = Store(nodes_of(parts))
    half = ZkHalf(store, "next")
    assert [half.fenced(p) for p in parts] == [True, False, True, True]
    half.write({"g": parts}, store.nodes)
    assert store.writes == [{"g": {PATH.format(1): (b"11", 4)}}]
    back = half.read_back({"g": parts})
    assert back.wrong == {} and store.latest_reads == 1
    assert back.verified == {"g": {PATH.format(1): 5}}   # the versions its writes left; a fenced znode has none


def test_the_last_semantics_rewrites_every_znode():
    parts = [part(0, 10, b"10"), part(1, 11, b"11")]
    assert not any(ZkHalf(Store(nodes_of(parts)), "last").fenced(p) for p in parts)


@pytest.mark.parametrize("moved", [
    Znode(b"15", 5, 190),   # an old consumer read on
    Znode(b"10", 5, 190),   # ... or wrote its offset again: still a move of the version, still its write
    Znode(b"10", 0, 300),   # deleted and created again
    Znode(b"10", 4, 300),   # ... up to the same version: the mzxid tells
])
def test_a_fenced_znode_moved_since_the_first_read_fails_the_group(moved):
    parts = [part(0, 10, b"10"), part(1, 11, b" 11\n")]
    store = Store(nodes_of(parts))
    half = ZkHalf(store, "next")
    half.write({"g": parts}, store.nodes)
    store.nodes[PATH.format(0)] = moved
    back = half.read_back({"g": parts})
    if moved == Znode(b"10", 5, 190):   # the same bytes one version on: taken as a crashed run's own rewrite
        assert back.verified == {"g": {PATH.format(0): 5, PATH.format(1): 5}}
        return
    assert back.verified == {}
    assert back.wrong == {"g": "ZooKeeper offsets changed since the scan (a live old consumer?): "
                               + PATH.format(0)}


def test_a_fenced_znode_of_a_plan_without_mzxid_is_checked_by_version():
    parts = [part(0, 10, b"10", mzxid=None)]
    store = Store(nodes_of(parts) | {PATH.format(0): Znode(b"10", 4, 12345)})
    assert ZkHalf(store, "next").read_back({"g": parts}).verified == {"g": {}}


class Client:
    """What ZkOffsetWriter asks of kazoo for read_latest: a sync, failing `lost` times first."""

    state = KazooState.CONNECTED

    def __init__(self, lost: int = 0):
        self.calls, self.lost = [], lost

    def sync(self, path):
        self.calls.append(("sync", path))
        if self.lost:
            self.lost -= 1
            raise ConnectionLoss()
        return path


def test_the_fence_reads_after_a_sync_with_the_leader(monkeypatch):
    client = Client(lost=2)
    writer = ZkOffsetWriter(client, retry_deadline=30)
    monkeypatch.setattr("migrate.zk.writer.wait_random_exponential", lambda **_: lambda _state: 0)
    monkeypatch.setattr(writer, "read", lambda paths: client.calls.append(("read", tuple(paths))) or {})
    writer.read_latest(["/a", "/b"])
    assert client.calls == [("sync", "/a")] * 3 + [("read", ("/a", "/b"))]   # a lost sync is sent again


def test_a_sync_lost_past_the_deadline_is_an_outage():
    writer = ZkOffsetWriter(Client(lost=10**6), retry_deadline=0.2)
    with pytest.raises(ZkUnavailable, match="unreachable for more than"):
        writer.read_latest(["/a"])
