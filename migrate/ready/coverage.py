"""What ready-for-kraft's verdict covers beyond the groups it judged: the groups under the root a
selection left out, the offsets trees elsewhere in the ensemble (migrate/zk/ensemble.py), and what
the operator leaves behind on purpose (--leave-behind). Pure: the stores were read before.

The cluster is ready only when nothing ZooKeeper holds for it would be left behind unnamed: a
group under the root that the selection (--group, --exclude-group, --topic) did not check, an
offsets tree elsewhere whose offsets this cluster's topics have and Kafka does not, a subtree the
search could not list, or a search cut short each blocks, unless --leave-behind names it. What
lies under another Kafka cluster's chroot (brokers of its own registered, another cluster id), or
is for topics this cluster lacks, is listed and blocks nothing.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from migrate.kafka.values import Key
from migrate.options import exactly
from migrate.ready.rules import Evidence, KafkaGroup, judge
from migrate.zk.ensemble import Search, Tree

MOST_NAMED = 10   # groups named in a printed command; past that, the whole tree


class LeftBehind:
    """--leave-behind: a PATTERN starting with / matches the whole path of an offsets tree, a
    group's directory or an offset znode; any other matches a group's whole name."""

    def __init__(self, patterns: Iterable[str]):
        self.patterns = tuple(patterns)
        self._paths = [re.compile(p) for p in self.patterns if p.startswith("/")]
        self._groups = [re.compile(p) for p in self.patterns if not p.startswith("/")]

    def group(self, name: str, root: str) -> bool:
        """Whether group `name` of the offsets tree `root` is left behind on purpose."""
        return (any(p.fullmatch(name) for p in self._groups)
                or any(p.fullmatch(path) for p in self._paths
                       for path in (root or "/", f"{root}/{name}")))

    def path(self, path: str) -> bool:
        """Whether the znode or subtree `path` is left behind on purpose."""
        return any(p.fullmatch(path) for p in self._paths)


def not_checked(outside: Iterable[Mapping[str, Any]], root: str,
                left: LeftBehind) -> list[dict[str, Any]]:
    """The groups under the root holding offsets the selection did not check (rows read but not
    selected), each with its count and whether it is left behind on purpose."""
    counts: dict[str, int] = {}
    for row in outside:
        counts[row["group"]] = counts.get(row["group"], 0) + 1
    return [{"group": g, "offsets": n, "left_behind": left.group(g, root)}
            for g, n in sorted(counts.items())]


def elsewhere(search: Search, kafka: Mapping[str, KafkaGroup], partitions: set[Key],
              zk2kafka_wrote: Callable[..., bool], cluster_id: str | None,
              left: LeftBehind, evidence: Evidence,
              refused: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Per offsets tree found by the search and group in it: what Kafka lacks of it, and whether
    that blocks (this cluster's topics, not another cluster's chroot, not left behind). Judged
    with the checked root's `evidence` (its watch, its margin and measured lead)."""
    out = []
    for tree in search.trees:
        other = _other_cluster(tree, cluster_id)
        liveness = {r["group"]: (r["zk_consumers"] or 0, r["zk_owned_partitions"] or 0)
                    for r in tree.rows if r.get("zk_consumers") or r.get("zk_owned_partitions")}
        for v in judge(tree.rows, kafka, partitions, [], liveness, zk2kafka_wrote, evidence,
                       refused):
            findings = {p: getattr(v, p) for p in ("not_in_kafka", "registered", "differs",
                                                   "unreadable") if getattr(v, p)}
            if not findings and not v.topic_gone:
                continue   # every offset in Kafka, or the group taken over there
            on_purpose = left.group(v.group, tree.path)
            out.append({"path": f"{tree.path}/{v.group}", "tree": tree.path, "group": v.group,
                        "offsets": v.offsets, "findings": findings, "topic_gone": v.topic_gone,
                        "other_cluster": other, "left_behind": on_purpose,
                        "blocking": bool(findings) and other is None and not on_purpose})
    return out


def move_command(hosts: str, tree: str, groups: list[str]) -> str:
    """The diff of the groups of an offsets tree outside the checked root, as a command to paste:
    the bare ensemble and the tree as --zk-root (flags win over ZK2KAFKA_ZOOKEEPER)."""
    named = "" if len(groups) > MOST_NAMED else "".join(
        " --group " + shlex.quote(exactly(g)) for g in groups)
    return (f"zk2kafka diff --zookeeper {shlex.quote(hosts)} --zk-root {shlex.quote(tree)}"
            f"{named}")


def _other_cluster(tree: Tree, cluster_id: str | None) -> str | None:
    """The id of the other Kafka cluster whose chroot holds `tree`, or None when it is this
    cluster's (or no broker's, or the ids cannot tell them apart)."""
    if tree.brokers_of is None:
        return None
    if tree.brokers_of and cluster_id and tree.brokers_of != cluster_id:
        return tree.brokers_of
    return None


def summary(search: Search, found: list[dict[str, Any]], left: LeftBehind) -> dict[str, Any]:
    """The search as the verdict's JSON holds it: what was searched, how far and how long, and
    what it found."""
    unreadable = [{"path": u.split(":", 1)[0], "why": u.split(":", 1)[-1].strip(),
                   "left_behind": left.path(u.split(":", 1)[0])} for u in search.unreadable]
    blocking_trees = sorted({f["tree"] for f in found if f["blocking"]})
    return {"hosts": search.hosts, "from": "/", "checked_root": search.skipped_root,
            "listed": search.listed, "read": search.read, "seconds": round(search.seconds, 3),
            "complete": search.complete, "cut_short": search.cut_short,
            "trees": [t.path for t in search.trees], "unreadable": unreadable,
            "elsewhere": found,
            "move": [move_command(search.hosts, t, sorted(f["group"] for f in found
                                                          if f["tree"] == t and f["blocking"]))
                     for t in blocking_trees]}


def blocking(data: Mapping[str, Any]) -> list[str]:
    """Why the cluster is not ready, each said in a few words for the verdict's first line;
    [] when nothing ZooKeeper holds for it would be left behind unnamed."""
    reasons = []
    if data["not_ready"]:
        reasons.append(f"{len(data['not_ready']):,} of {data['groups']:,} group(s) checked under "
                       f"{data['source']} would leave offsets behind in ZooKeeper")
    unchecked = [g for g in data["not_checked"] if not g["left_behind"]]
    if unchecked:
        reasons.append(f"{len(unchecked):,} group(s) under the root with offsets were not checked "
                       f"(outside the selection)")
    ensemble = data["ensemble"]
    elsewhere_ = [f for f in ensemble["elsewhere"] if f["blocking"]]
    if elsewhere_:
        trees = sorted({f["tree"] for f in elsewhere_})
        reasons.append(f"{len(elsewhere_):,} group(s) elsewhere in the ensemble hold offsets of "
                       f"this cluster's topics that Kafka lacks ({', '.join(trees)})")
    unreadable = [u for u in ensemble["unreadable"] if not u["left_behind"]]
    if unreadable:
        reasons.append(f"{len(unreadable):,} path(s) of the ensemble could not be listed")
    if ensemble["cut_short"]:
        reasons.append(f"the search of the ensemble {ensemble['cut_short']}")
    return reasons
