"""Hypothesis strategies for hostile legacy-offset trees in ZooKeeper, and a helper that writes one.

Shared by the scan test (test_hostile_zk.py) and the diff-and-reports test (test_hostile_reports.py).
"""

from __future__ import annotations

from hypothesis import strategies as st
from kazoo.security import make_digest_acl

# ZooKeeper refuses these in a node name (PathUtils.validatePath), and anything past the BMP (Java sees
# surrogates); everything else is fair game.
FORBIDDEN = {chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0xFFF0, 0x10000))} | {"/"}
NAME = st.text(st.characters(max_codepoint=0xFFEF, exclude_characters=FORBIDDEN, exclude_categories=("Cs", "Co")),
               min_size=1,
               max_size=40).filter(lambda s: s not in (".", "..", "zookeeper"))
VALUE = st.one_of(
    st.integers(min_value=-2, max_value=2**70).map(lambda n: str(n).encode()),
    st.sampled_from([b"", b" 42\n", b"1.5E2", b"-1", b"0x10", b"{\"offset\": 7}", b"\xff\xfe", b"9" * 30]),
    st.binary(max_size=64),
    st.integers(min_value=1, max_value=200_000).map(lambda n: b"7" * n),   # huge, up to ~200 KB
)
# Numbers as Kafka names them, and names it never writes: '07' and '٧' look like 7, '²' passes str.isdigit().
PARTITION = st.one_of(st.integers(min_value=0, max_value=2**31 - 1).map(str), NAME,
                      st.sampled_from(["07", "٧", "²", "-1", "+1", "2147483648", " 1"]))
LOCK = make_digest_acl("someone-else", "secret", all=True)


def tree(topics: st.SearchStrategy[str] = NAME, partitions: st.SearchStrategy[str] = PARTITION,
         values: st.SearchStrategy[bytes] = VALUE, groups: tuple[int, int] = (1, 6),
         min_offsets: int = 0) -> st.SearchStrategy[dict]:
    """{group: {"topics": {topic: {partition: value}}, "locked": bool, "deep": bool}}: `groups` (min, max)
    groups, each with at least `min_offsets` topics of at least `min_offsets` partitions."""
    group = st.fixed_dictionaries({
        "topics": st.dictionaries(topics, st.dictionaries(partitions, values, min_size=min_offsets, max_size=4),
                                  min_size=min_offsets, max_size=3),
        "locked": st.booleans(),                 # the group's offsets/ behind a digest ACL the scan lacks
        "deep": st.booleans(),                   # a child below an offset znode
    })
    return st.dictionaries(NAME, group, min_size=groups[0], max_size=groups[1])


TREE = tree()


def write_tree(zk, base: str, generated: dict) -> int:
    """Create `generated` under `base`/consumers; returns how many groups have their offsets/ locked."""
    locked = 0
    for group, spec in generated.items():
        for topic, partitions in spec["topics"].items():
            for partition, value in partitions.items():
                path = f"{base}/consumers/{group}/offsets/{topic}/{partition}"
                zk.create(path, value, makepath=True)
                if spec["deep"]:
                    zk.create(f"{path}/child", b"1")
        if spec["locked"] and offsets(spec):
            zk.set_acls(f"{base}/consumers/{group}/offsets", [LOCK])
            locked += 1
        else:
            zk.ensure_path(f"{base}/consumers/{group}")
    return locked


def offsets(spec: dict) -> int:
    """Offset znodes of one generated group."""
    return sum(len(partitions) for partitions in spec["topics"].values())


def is_locked(spec: dict) -> bool:
    return spec["locked"] and offsets(spec) > 0
