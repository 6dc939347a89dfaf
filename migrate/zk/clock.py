"""ZooKeeper's clock measured from both sides, by the one znode zk2kafka writes outside a run.

ZooKeeper stamps a znode's ctime and mtime with its leader's clock, and the takeover rule
compares those with the coordinators' commit times. A leader elected with a clock behind stamps
the old consumers' last writes early, and a commit made before them reads as newer. The brokers'
registrations bound the leader of the day each broker started, not the one of today; so the gate
and `sync --execute` (at each re-scan) create an ephemeral znode under a path of their own
(PROBE, never under /consumers) and delete it at once: its ctime was stamped between the moment
the create was sent and the moment its answer came back, which bounds the current leader's clock
both ways (migrate/kafka/clocks.py). `--no-clock-probe` forbids the write; ZooKeeper's clock is
then bounded from below only (the znodes seen written), and the evidence says so.
"""

from __future__ import annotations

import logging
import time
from typing import NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

log = logging.getLogger(__name__)
PROBE = "/zk2kafka/clock-"   # ephemeral and sequential: one per probe, gone with its session
NOT_PROBED = "the clock probe is forbidden (--no-clock-probe)"
DRY_RUN = "a dry run makes no clock probe (it writes nothing)"


class Probe(NamedTuple):
    """One measurement: the create's send and answer times (zk2kafka's clock, s), the ctime the
    leader stamped (ms), and the leader's epoch (the znode's czxid's high half)."""

    sent: float
    answered: float
    ctime_ms: int
    epoch: int
    path: str

    @property
    def how(self) -> str:
        return f"the clock probe {self.path} (ZooKeeper's leader of epoch {self.epoch})"


def probe(client: KazooClient) -> Probe | str:
    """ZooKeeper's clock measured by an ephemeral znode created and deleted under PROBE; why it
    could not be (a string: no right to create there, the session lost, ...)."""
    try:
        client.ensure_path(PROBE.rsplit("/", 1)[0])
        sent = time.time()
        path = client.create(PROBE, b"", ephemeral=True, sequence=True)
        answered = time.time()
        try:
            stat = client.exists(path)
        finally:
            client.delete(path)
    except KazooException as exc:
        why = (f"could not create {PROBE}N to measure ZooKeeper's clock: "
               f"{type(exc).__name__} {exc}".rstrip())
        log.warning("%s", why)
        return why
    if stat is None:   # gone before it was read: its session expired meanwhile
        return f"{path} was gone before its time could be read"
    return Probe(sent, answered, stat.ctime, stat.czxid >> 32, path)
