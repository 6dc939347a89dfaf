"""Which znodes a copy of a data directory read carry ACLs that would have refused the reader.

ZooKeeper enforces ACLs in the server that answers, not in its files: whoever holds the files holds
every offset. The private server on a copy (datadir.py) enforces them, but zk2kafka's scan logs in
as a throwaway super user of that server (`super_user`), so every znode reads, as a recovery needs.
Then the same scan is made again through the same server as the live reader would have made it
(its --zk-auth, or no credentials), and every znode ZooKeeper itself refuses it (NoAuth, on the
offset read or on a directory listed on the way down) is counted and the first ones named: the
operator is told which offsets the live ensemble would have refused.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
from kazoo.security import make_digest_acl_credential

from migrate.connection import Connection, Secret
from migrate.errors import ZkUnavailable
from migrate.settings import Settings
from migrate.zk.parse import UNREADABLE
from migrate.zk.scan import scan_to_parquet

log = logging.getLogger(__name__)

# How many of the refused znodes a warning and the JSON name.
SHOWN = 5
# The private server's super user: a name of zk2kafka's, a password made for each copy.
SUPER_USER = "zk2kafka-copy"


def super_user() -> tuple[str, Secret]:
    """A throwaway super user for one private server: the JVM option that makes it one (its
    password's digest only), and the --zk-auth credential that logs in as it."""
    password = secrets.token_urlsafe(24)
    digest = make_digest_acl_credential(SUPER_USER, password)
    return (f"-Dzookeeper.DigestAuthenticationProvider.superDigest={digest}",
            Secret(f"digest:{SUPER_USER}:{password}"))


@dataclass
class AclCheck:
    """The copy read again as the live reader: the znodes ZooKeeper refused it, the first ones."""

    reader: str                    # who the live reader would have been, as said to the operator
    seconds: float = 0.0
    rows: int = 0                  # the rows of that second read (offsets, and refused directories)
    refused: int = 0
    first: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"reader": self.reader, "seconds": round(self.seconds, 3),
                "rows_read_as_reader": self.rows, "znodes_refused": self.refused,
                "first_refused": self.first}

    def warning(self) -> str | None:
        """The scan's warning when any znode would have been refused, else None."""
        if not self.refused:
            return None
        more = f" ... and {self.refused - len(self.first):,} more" if self.refused > SHOWN else ""
        return (f"{self.refused:,} znode(s) the copy read carry ACLs that would have refused "
                f"{self.reader} on the live ensemble (NoAuth there): {', '.join(self.first)}"
                f"{more}; a data directory's files carry no ACL enforcement: whoever can read "
                "the files reads every offset in them (docs/security.md)")


def reader_text(connection: Connection) -> str:
    """Who the live reader is, as the warning says it (never a secret)."""
    given = [f"--zk-auth {scheme}:{credential.partition(':')[0]}"
             for scheme, credential in connection.zk_auth_data()]
    text = " and ".join(given) if given else "a reader with no credentials"
    if connection.zk_sasl_username:
        # The private server has no SASL: that login's own grants cannot be counted.
        text += f" (SASL user {connection.zk_sasl_username} not logged in: the copy has no SASL)"
    return text


def check_acls(settings: Settings, private: Settings, root: str) -> AclCheck:
    """The copy `private` reaches read again as `settings` would read the live ensemble (its
    --zk-auth; no SASL or TLS, which the private server has not), what ZooKeeper refused it."""
    started, found = time.monotonic(), AclCheck(reader_text(settings.connection))
    reader = dataclasses.replace(private, zk_auth=settings.zk_auth)
    with tempfile.TemporaryDirectory(prefix="zk2kafka-acl-check-") as work:
        dest = Path(work) / "as-the-reader.parquet"
        try:
            scan_to_parquet(reader, dest, {})
        except ZkUnavailable as exc:
            if "NoAuth" not in str(exc):
                raise
            found.refused, found.first = 1, [root]   # the root itself: nothing below is read
        else:
            table = pq.read_table(dest, columns=["path", "status", "reason"])
            found.rows = table.num_rows
            refused = table.filter(pc.and_(pc.equal(table["status"], UNREADABLE),
                                           pc.match_substring(table["reason"], "(NoAuth)")))
            found.refused = refused.num_rows
            found.first = sorted(refused.column("path").to_pylist())[:SHOWN]
    found.seconds = time.monotonic() - started
    log.info("the copy read again as %s in %.1fs: %d znode(s) refused", found.reader,
             found.seconds, found.refused)
    return found
