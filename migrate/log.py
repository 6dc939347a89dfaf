"""Logging to stderr, as text for people or JSON lines for machines; results go to stdout.

Every line is scrubbed of the run's secrets first: at debug level the client
libraries log what they send (kazoo its digest Auth packet, kafka-python its
whole configuration and SASL PLAIN token), and an error may quote a value.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable

_RESERVED = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
_SECRETS: tuple[str, ...] = ()  # every spelling of every secret of this run, longest first


def set_secrets(secrets: Iterable[str]) -> None:
    """The values `redact` hides from now on.

    Each as typed, as it shows inside a repr of a str or of bytes, and each of those again inside
    a JSON string (a JSON log line quoting a repr).
    """
    global _SECRETS
    forms = set()
    for secret in filter(None, secrets):
        for form in (secret, repr(secret)[1:-1], repr(secret.encode())[2:-1]):
            forms |= {form, json.dumps(form)[1:-1], json.dumps(form, ensure_ascii=False)[1:-1]}
    _SECRETS = tuple(sorted(forms, key=len, reverse=True))


def redact(text: str) -> str:
    """`text` with every known secret replaced by ***."""
    for secret in _SECRETS:
        text = text.replace(secret, "***")
    return text


class _Redacting(logging.Formatter):
    """Formats with `inner`, then redacts: message, arguments, traceback and extra fields alike."""

    def __init__(self, inner: logging.Formatter):
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, plus any `extra=` fields."""

    def format(self, record: logging.LogRecord) -> str:
        second = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        doc = {
            "ts": f"{second}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        doc.update({k: v for k, v in vars(record).items() if k not in _RESERVED})
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


class _NoLibraryTracebacks(logging.Filter):
    """A client library's error stays one line (kafka-python logs some with a traceback).

    -vv shows the tracebacks.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and not record.name.startswith("migrate"):
            record.exc_info = record.exc_text = None
        return True


class _OwnLinesOnly(logging.Filter):
    """Only zk2kafka's own lines: the libraries' (kafka-python reconnecting, kazoo's dropped
    connections, Python warnings, the Spark JVM's stderr) show from -v on. zk2kafka says what
    went wrong in one line of its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.startswith("migrate")


def configure_logging(fmt: str = "text", verbosity: int = 0, secrets: Iterable[str] = ()) -> None:
    """Send the `migrate` logs to stderr.

    Verbosity -1: warnings only, 0: info, 1: debug and the client libraries' warnings,
    2: also the client libraries' debug.

    `secrets` never reach stderr: they are replaced by *** in every line (see `redact`).
    """
    set_secrets(secrets)
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        formatter = JsonFormatter()
    else:
        formatter = logging.Formatter("%(asctime)s %(levelname)-7s %(message)s", "%H:%M:%S")
    handler.setFormatter(_Redacting(formatter))
    if verbosity < 2:
        handler.addFilter(_NoLibraryTracebacks())
    if verbosity < 1:
        handler.addFilter(_OwnLinesOnly())
    logging.captureWarnings(True)   # as lines of the py.warnings logger: shown from -v on
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)
    level = logging.WARNING if verbosity < 0 else logging.INFO if verbosity == 0 else logging.DEBUG
    logging.getLogger("migrate").setLevel(level)
    # kazoo and kafka-python are chatty at INFO; their warnings still show.
    for noisy in ("kazoo", "kafka"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)
