"""Secrets never reach stderr: not in a client library's debug log, a JSON log line, an error or a traceback."""

from __future__ import annotations

import logging

import pytest

from migrate import cli, commands
from migrate.log import configure_logging, set_secrets

SECRET = 'pw-"quoted"\\-é'


@pytest.fixture(autouse=True)
def _forget_secrets():
    yield
    set_secrets(())


@pytest.fixture(autouse=True)
def _logging_as_it_was():
    """configure_logging points the root logger at this test's captured stderr, closed after it: the
    threads of later tests (py4j's) must not log there."""
    root = logging.getLogger()
    names = ("migrate", "kazoo", "kafka")
    handlers, level, levels = root.handlers[:], root.level, {n: logging.getLogger(n).level for n in names}
    yield
    root.handlers[:], root.level = handlers, level
    for name, was in levels.items():
        logging.getLogger(name).setLevel(was)
    logging.captureWarnings(False)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_spelling_of_a_secret_is_redacted_in_log_lines(capsys, fmt):
    configure_logging(fmt, verbosity=2, secrets=[SECRET])
    # What kazoo and kafka-python log at debug level: a repr of a namedtuple, a dict, bytes.
    logging.getLogger("kazoo.protocol.connection").debug("Sending request(xid=-4): %s",
                                                         ("Auth", "digest", f"bob:{SECRET}"))
    logging.getLogger("kafka.admin.client").debug("Starting with configuration: %s", {"sasl_plain_password": SECRET})
    logging.getLogger("kafka.protocol.parser").debug("Send: %r", b"\x00alice\x00" + SECRET.encode())
    logging.getLogger("migrate").info("extra fields too", extra={"credential": SECRET})
    try:
        raise ValueError(f"bad value {SECRET}")
    except ValueError:
        logging.getLogger("migrate").exception("failed")
    err = capsys.readouterr().err
    assert err.count("***") == (4 if fmt == "text" else 5), err  # JSON lines carry the extra field too
    for spelling in ("pw-", "quoted"):
        assert spelling not in err, err


def test_errors_and_tracebacks_are_redacted(monkeypatch, capsys, tmp_path):
    def fail(*_args):
        raise RuntimeError(f"the server said no to digest:bob:{SECRET}")

    monkeypatch.setattr(commands, "run", fail)
    assert cli.main(["verify", "--zk-auth", f"digest:bob:{SECRET}", "--debug", "--state-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "the server said no to digest:***" in err and "pw-" not in err


@pytest.mark.parametrize("verbosity, shown", [(-1, False), (0, False), (1, True), (2, True)])
def test_library_lines_show_only_from_v_on(capsys, verbosity, shown):
    import warnings

    configure_logging("text", verbosity=verbosity)
    try:
        logging.getLogger("kafka.conn").error("<connected> [IPv4 ('127.0.0.1', 1)]: Connection refused")
        logging.getLogger("kazoo.client").warning("Connection dropped: socket connection error")
        logging.getLogger("spark.jvm").warning("WARNING: Using incubator modules: jdk.incubator.vector")
        warnings.warn("No chroot path exists", UserWarning)
        logging.getLogger("migrate").warning("zk2kafka's own")
    finally:
        logging.captureWarnings(False)
    err = capsys.readouterr().err
    assert "zk2kafka's own" in err
    for line in ("Connection refused", "Connection dropped", "incubator", "No chroot"):
        assert (line in err) is shown, err
