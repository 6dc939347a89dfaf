"""Logging to stderr, as text for people or JSON lines for machines; results go to stdout."""

from __future__ import annotations

import json
import logging
import sys
import time

_RESERVED = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, plus any `extra=` fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        doc.update({k: v for k, v in vars(record).items() if k not in _RESERVED})
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def configure_logging(fmt: str = "text", verbosity: int = 0) -> None:
    """Send the `migrate` logs to stderr; verbosity -1 warnings only, 0 info, 1 debug, 2 also client libraries."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else
                         logging.Formatter("%(asctime)s %(levelname)-7s %(message)s", "%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)
    level = logging.WARNING if verbosity < 0 else logging.INFO if verbosity == 0 else logging.DEBUG
    logging.getLogger("migrate").setLevel(level)
    # kazoo and kafka-python are chatty at INFO; their warnings still show.
    for noisy in ("kazoo", "kafka"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)
