"""ZkOffsetReader: walk legacy offset znodes into one row per partition. Reads only, never
writes.

A layout is a list of path templates below the group, e.g. the standard
`{group}/offsets/{topic}/{partition}`. Each template segment is either a
literal (appended without a request; a missing node just yields nothing) or a
pattern with placeholders (one `get_children`, names matched and bound). The
walk goes level by level for a batch of groups, every level pipelined through
`AsyncBatch`, so memory stays bounded by the batch and not by the tree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import pyarrow as pa
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError, ZookeeperError
from kazoo.retry import KazooRetry, RetryFailedError

from migrate.errors import ConfigError, ZkUnavailable
from migrate.zk.parse import (MALFORMED, OK, UNREADABLE, Parsed, parse_decimal, parse_storm,
                              show_raw)
from migrate.zk.walk import RETRIABLE, AsyncBatch, Request

SCHEMA = pa.schema([
    ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("raw", pa.string()), ("offset", pa.int64()),
    ("status", pa.string()), ("reason", pa.string()),
    ("mtime", pa.timestamp("ms", tz="UTC")), ("ctime", pa.timestamp("ms", tz="UTC")),
    ("version", pa.int32()),
    ("layout", pa.string()), ("path", pa.string()),
    ("zk_consumers", pa.int32()), ("zk_owned_partitions", pa.int32()),
    # The zxid of the znode's last change: with the version, its identity (a znode deleted and
    # recreated starts again at version 0, never at the same mzxid). The writer checks both before
    # writing.
    ("mzxid", pa.int64()),
    # When the row's topic was created, by the ctime of ZooKeeper's /brokers/topics/<topic> (null
    # where ZooKeeper holds no such znode, e.g. another cluster's, or a chroot without brokers).
    ("topic_ctime", pa.timestamp("ms", tz="UTC")),
])
# Where ZooKeeper-mode brokers register each topic, below the chroot the offsets live under.
TOPICS_PATH = "/brokers/topics"


_PARTITION_NAME = re.compile(r"0|[1-9][0-9]{0,9}")
# The names Kafka gives a topic (Topic.validate): only these can have a znode of the brokers.
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


@dataclass(frozen=True)
class Template:
    """One path shape below the offsets root, e.g. `standard`:
    `{group}/offsets/{topic}/{partition}`.
    """

    layout: str
    segments: tuple[str, ...]  # after the {group} segment
    json_values: bool = False  # storm-kafka: the znode holds JSON naming topic and partition

    def pattern(self, i: int) -> re.Pattern | None:
        """The regex of segment `i`, or None when it is a plain literal (no request needed)."""
        seg = self.segments[i]
        if "{" not in seg:
            return None
        regex = re.escape(seg)
        for name in ("topic", "partition"):
            regex = regex.replace(re.escape("{" + name + "}"), f"(?P<{name}>.+)")
        return re.compile(regex)


STANDARD = (Template("standard", ("offsets", "{topic}", "{partition}")),
            # Kafka 1.1.0's v0 OffsetCommit wrote under a singular `offset` (KAFKA-6753 era bug).
            Template("kafka-1.1.0-offset", ("offset", "{topic}", "{partition}")))
STORM = (Template("storm", ("partition_{partition}",), json_values=True),
         Template("storm", ("{topic}", "partition_{partition}"), json_values=True))


def layout_from_template(template: str) -> tuple[str, tuple[Template, ...]]:
    """(root, templates) for a user template like `/myapp/{group}/{topic}/{partition}`.

    Raises ConfigError.
    """
    parts = template.strip("/").split("/")
    if "{group}" not in parts or not template.startswith("/"):
        raise ConfigError(f"--path-template must be absolute and have a {{group}} segment: "
                          f"{template!r}")
    at = parts.index("{group}")
    root, rest = "/" + "/".join(parts[:at]), tuple(parts[at + 1:])
    if any("{" in p for p in parts[:at]) or "{partition}" not in "/".join(rest):
        raise ConfigError(f"--path-template needs literal segments before {{group}} "
                          f"and a {{partition}} after it: {template!r}")
    if "{topic}" not in "/".join(rest):
        raise ConfigError(f"--path-template needs a {{topic}} placeholder: {template!r}")
    return (root if root != "/" else ""), (Template("template", rest),)


@dataclass(frozen=True)
class Selection:
    """Which groups and topics to read; applied before anything below them is read.

    Each pattern is a full match, as Java's `matches()` in Kafka's own tools: `--group billing` is
    exactly `billing`, and `--exclude-group test` leaves `contest-billing` in.
    """

    groups: tuple[str, ...] = ()
    exclude_groups: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    _compiled: dict = field(default_factory=dict, compare=False, repr=False)

    def _any(self, patterns: tuple[str, ...], name: str) -> bool:
        return any(self._compiled.setdefault(p, re.compile(p)).fullmatch(name) for p in patterns)

    def group(self, name: str) -> bool:
        included = not self.groups or self._any(self.groups, name)
        return included and not self._any(self.exclude_groups, name)

    def topic(self, name: str | None) -> bool:
        return name is None or not self.topics or self._any(self.topics, name)

    @classmethod
    def of(cls, settings) -> Selection:
        """The selection a command's settings make (`--group`, `--exclude-group`, `--topic`)."""
        return cls(settings.groups, settings.exclude_groups, settings.topics)

    @property
    def text(self) -> str:
        """The selection as the flags that made it (`--group billing.* --exclude-group .*-test`)."""
        given = (("--group", self.groups), ("--exclude-group", self.exclude_groups),
                 ("--topic", self.topics))
        flags = [f"{flag} {pattern}" for flag, patterns in given for pattern in patterns]
        return " ".join(flags) if flags else "every group and topic"


@dataclass
class _Node:
    group: str
    path: str
    template: Template
    depth: int  # segments of the template consumed so far
    topic: str | None = None
    partition: str | None = None


class _Leaf(NamedTuple):
    """A node to read (answer None), or a listing ZooKeeper refused (answer: its error)."""

    node: _Node
    answer: object


class _Liveness(NamedTuple):
    """A group's old high-level consumers, as ZooKeeper registers them."""

    consumers: int | None  # registered under ids/
    owned_partitions: int | None  # owned under owners/<topic>/


_NO_LIVENESS = _Liveness(None, None)


class ZkOffsetReader:
    """Reads offsets below `root` for the selected groups; `batches()` yields Arrow batches."""

    def __init__(self, client: KazooClient, root: str, templates: tuple[Template, ...] = STANDARD,
                 selection: Selection = Selection(), semantics: str = "next", window: int = 512,
                 group_batch: int = 64, retry_deadline: float = 120.0, multi: bool | None = None):
        self.client = client
        self.root = root.rstrip("/")
        self.templates = templates
        self.selection = selection
        self.semantics = semantics
        self.batch = AsyncBatch(client, window=window, deadline=retry_deadline, multi=multi)
        self.group_batch = group_batch
        # ids/ and owners/ exist only for the old high-level consumer
        self.liveness = templates == STANDARD
        # ZooKeeper takes any digest credential and only denies reads later: a wrong password
        # looks like this.
        self.noauth_hint = ("the credentials given (--zk-auth) may not read it: "
                            "wrong password or user?"
                            if getattr(client, "auth_data", None) else "pass --zk-auth")

    def groups(self) -> list[str]:
        """The selected group names under the root, sorted; [] when the root does not exist."""
        answer = self.batch.run([Request("root", "children", self.root or "/")])["root"]
        if isinstance(answer, NoNodeError):
            return []
        if isinstance(answer, ZookeeperError):
            hint = f"; {self.noauth_hint}" if isinstance(answer, NoAuthError) else ""
            raise ZkUnavailable(f"cannot list {self.root or '/'}: {type(answer).__name__}{hint}")
        return sorted(g for g in answer if self.selection.group(g))

    def batches(self, groups: list[str], unchanged: Callable[[str, str], bool] | None = None
                ) -> Iterator[pa.RecordBatch]:
        """One record batch per slice of `group_batch` groups, in the order given.

        `unchanged(group, path)`: True for an offset znode the caller knows to be as it last read
        it (sync: its watch has not fired); it is not read, and gives no row. Asked once per znode.
        """
        created: dict[str, object] = {}   # this pass's topic creation times, read once each
        for i in range(0, len(groups), self.group_batch):
            rows = self._read(groups[i:i + self.group_batch], unchanged)
            self._topic_created(rows, created)
            yield pa.RecordBatch.from_pylist(rows, schema=SCHEMA)

    def offset_row(self, group: str, path: str, layout: str, topic: str, partition: int,
                   answer: object) -> dict | None:
        """The row `batches()` gives for one offset znode read again on its own: `answer` is
        ZooKeeper's reply to reading it, (data, stat) or the error raised. The row's liveness
        columns are None (ids/ and owners/ are not read). None when `layout` names no template
        whose path alone tells its topic and partition (storm's JSON values may name others).
        """
        template = next((t for t in self.templates if t.layout == layout and not t.json_values),
                        None)
        if template is None:
            return None
        node = _Node(group, path, template, len(template.segments), topic, str(partition))
        return self._row(node, answer, _NO_LIVENESS)

    def _read(self, groups: list[str],
              unchanged: Callable[[str, str], bool] | None = None) -> list[dict]:
        frontier = [_Node(g, f"{self.root}/{g}", t, 0) for g in groups for t in self.templates]
        liveness = self._liveness(groups) if self.liveness else {}
        leaves: list[_Leaf] = []
        while frontier:
            frontier = self._descend(frontier, leaves)
        if unchanged is not None:
            leaves = [leaf for leaf in leaves
                      if leaf.answer is not None or not unchanged(leaf.node.group, leaf.node.path)]
        pending = [i for i, leaf in enumerate(leaves) if leaf.answer is None]
        answers = self.batch.run(Request(i, "get", leaves[i].node.path) for i in pending)
        rows = (self._row(leaf.node, answers.get(i, leaf.answer),
                          liveness.get(leaf.node.group, _NO_LIVENESS))
                for i, leaf in enumerate(leaves))
        return [r for r in rows if r is not None]

    def _topic_created(self, rows: list[dict], created: dict[str, object]) -> None:
        """Fill each row's `topic_ctime`: one stat of /brokers/topics/<topic> per topic and pass,
        pipelined (`exists` needs no read permission and carries no data).

        A topic ZooKeeper registers no znode for gives none: nothing is judged by it.
        """
        topics = sorted({r["topic"] for r in rows if r["topic"] is not None} - created.keys())
        pending = [(t, self.client.exists_async(f"{TOPICS_PATH}/{t}")) for t in topics
                   if _TOPIC_NAME.fullmatch(t) and t not in (".", "..")]
        retry = KazooRetry(max_tries=-1, deadline=self.batch.deadline)
        for topic, answer in pending:
            path = f"{TOPICS_PATH}/{topic}"
            try:
                stat = answer.get(timeout=self.batch.request_timeout)
            except RETRIABLE:
                self.batch.retries += 1   # sent again, like the offset reads the batch re-sends
                try:
                    stat = retry(self.client.exists, path)
                except RetryFailedError as exc:
                    raise ZkUnavailable(f"ZooKeeper unreachable for more than "
                                        f"{self.batch.deadline:.0f}s; {path} could not be "
                                        "read") from exc
            except ZookeeperError:
                stat = None
            created[topic] = stat.ctime if stat is not None else None
        for row in rows:
            row["topic_ctime"] = created.get(row["topic"])

    def _descend(self, frontier: list[_Node], leaves: list[_Leaf]) -> list[_Node]:
        """One level down: literals are appended, patterns listed and matched.

        Returns the next frontier. Leaves to read go to `leaves` with answer None; a listing
        refused (NoAuth, ...) goes there with its error, so an unreadable subtree becomes an
        UNREADABLE row instead of silently vanishing.
        """
        nxt: list[_Node] = []
        listed = [(i, n) for i, n in enumerate(frontier) if n.template.pattern(n.depth) is not None]
        answers = self.batch.run(Request(i, "children", n.path) for i, n in listed)
        for i, node in enumerate(frontier):
            pattern = node.template.pattern(node.depth)
            if pattern is None:
                children = [(node.template.segments[node.depth], {})]
            else:
                names = answers[i]
                # absent (other layout) or deleted mid-walk: nothing below
                if isinstance(names, NoNodeError):
                    continue
                if isinstance(names, ZookeeperError):
                    leaves.append(_Leaf(node, names))
                    continue
                children = [(name, m.groupdict()) for name in sorted(names)
                            if (m := pattern.fullmatch(name))]
            for name, bound in children:
                topic = bound.get("topic", node.topic)
                if "topic" in bound and not self.selection.topic(topic):
                    continue
                nxt.append(_Node(node.group, f"{node.path}/{name}", node.template, node.depth + 1,
                                 topic, bound.get("partition", node.partition)))
        leaves.extend(_Leaf(n, None) for n in nxt if n.depth == len(n.template.segments))
        return [n for n in nxt if n.depth < len(n.template.segments)]

    def _liveness(self, groups: list[str]) -> dict[str, _Liveness]:
        """Per group: its registered old consumers and the partitions they own."""
        def children(key, path: str) -> Request:
            return Request(key, "children", f"{self.root}/{path}")

        first = self.batch.run([children((g, "ids"), f"{g}/ids") for g in groups] +
                               [children((g, "owners"), f"{g}/owners") for g in groups])
        owner_topics = [(g, t) for g in groups if isinstance(first[(g, "owners")], list)
                        for t in first[(g, "owners")]]
        second = self.batch.run(children((g, t), f"{g}/owners/{t}") for g, t in owner_topics)
        owned = dict.fromkeys(groups, 0)
        for (g, t), partitions in second.items():
            owned[g] += len(partitions) if isinstance(partitions, list) else 0
        ids = {g: first[(g, "ids")] for g in groups}
        return {g: _Liveness(len(ids[g]) if isinstance(ids[g], list) else 0, owned[g])
                for g in groups}

    def _row(self, node: _Node, answer: object, liveness: _Liveness) -> dict | None:
        topic, partition_name = node.topic, node.partition
        raw = mtime = ctime = version = mzxid = None
        listing = node.depth < len(node.template.segments)  # a directory we could not list
        if isinstance(answer, NoNodeError):
            parsed = Parsed(None, UNREADABLE, "znode vanished during the walk")
        elif isinstance(answer, NoAuthError):
            what = "list" if listing else "read"
            parsed = Parsed(None, UNREADABLE,
                            f"no permission to {what} {node.path} (NoAuth); {self.noauth_hint}")
        elif isinstance(answer, ZookeeperError):
            parsed = Parsed(None, UNREADABLE, f"{type(answer).__name__} on {node.path}")
        else:
            raw, stat = answer
            raw = raw or b""
            mtime, ctime, version, mzxid = stat.mtime, stat.ctime, stat.version, stat.mzxid
            if node.template.json_values:
                storm = parse_storm(raw, self.semantics)
                parsed = storm.parsed
                topic = topic or storm.topic
                if (partition_name is not None and storm.partition is not None
                        and str(storm.partition) != partition_name):
                    parsed = Parsed(None, MALFORMED, f"JSON names partition {storm.partition}, "
                                                     f"path {partition_name}")
                if topic is None and parsed.status == OK:
                    parsed = Parsed(None, MALFORMED, "JSON names no topic")
                if not self.selection.topic(topic):
                    return None
            else:
                parsed = parse_decimal(raw, self.semantics)
        # Only the name Kafka writes, str(partition): '²' passes str.isdigit() yet int() refuses
        # it, and '07' or Arabic-Indic '٧' would become partition 7 and hide the real `7` znode
        # behind one deduplicated row.
        canonical = partition_name is not None and _PARTITION_NAME.fullmatch(partition_name)
        partition = int(partition_name) if canonical and int(partition_name) <= 2**31 - 1 else None
        if partition is None and not listing and parsed.status != UNREADABLE:
            parsed = Parsed(None, MALFORMED,
                            f"partition name {partition_name!r} is not a partition number")
        return {
            "group": node.group, "topic": topic, "partition": partition, "raw": show_raw(raw),
            "offset": parsed.offset, "status": parsed.status, "reason": parsed.reason,
            "mtime": mtime, "ctime": ctime, "version": version,
            "layout": node.template.layout, "path": node.path,
            "zk_consumers": liveness.consumers, "zk_owned_partitions": liveness.owned_partitions,
            "mzxid": mzxid, "topic_ctime": None,
        }
