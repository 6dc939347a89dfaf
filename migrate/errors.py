"""One exception root for zk2kafka; subclasses carry fields, the CLI maps them to exit codes.

Exit codes (docs/design.md): 0 success, 1 error, 2 usage or configuration error,
3 the diff has blockers, or verify found a mismatch or no offsets at all, 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BLOCKERS = 3
EXIT_INTERRUPTED = 130   # Ctrl-C: the shell's 128 + SIGINT


class MigrateError(Exception):
    """Root of every error zk2kafka raises on purpose."""

    exit_code = EXIT_ERROR


class ConfigError(MigrateError):
    """A flag, environment variable, TOML or properties file is wrong."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {message}" if where else message)
        self.source = source
        self.line = line


class UnknownOption(ConfigError):
    """A --config key that is no option."""


class JvmError(MigrateError):
    """A Java server zk2kafka runs itself (migrate/jvm/: the sandbox's, the private ZooKeeper on a
    copy of a data directory) could not be fetched, started or reached."""


class SandboxError(JvmError):
    """The local ZooKeeper + Kafka sandbox could not be started, reached or told what to do."""


class ArtifactError(JvmError):
    """A jar could not be downloaded or its checksum did not match the pinned one."""

    def __init__(self, message: str, *, url: str, expected: str | None = None,
                 actual: str | None = None):
        super().__init__(message)
        self.url = url
        self.expected = expected
        self.actual = actual


class StateDirError(MigrateError):
    """A file or folder of the state dir (snapshots, reports, the journal) could not be created,
    read or written."""

    def __init__(self, path, reason: str, *, resume: str | None = None):
        then = (f"; the journal holds how far the run got: `{resume}` goes on "
                "once it can be written" if resume else "")
        super().__init__(f"{path}: {reason}{then}")
        self.path = str(path)
        self.reason = reason
        self.resume = resume


class ZkUnavailable(MigrateError):
    """ZooKeeper could not be reached, or stayed unreachable past the retry deadline."""


class KafkaUnavailable(MigrateError):
    """Kafka could not be reached, refused us, or stayed failing past the retry deadline."""

    def __init__(self, message: str, *, bootstrap_server: str | None = None):
        super().__init__(message)
        self.bootstrap_server = bootstrap_server


class OffsetSyncsUnavailable(KafkaUnavailable):
    """MirrorMaker 2's offset-syncs topic is missing or could not be read to its end: without it
    no ZooKeeper offset can be translated, so nothing is planned."""

    def __init__(self, topic: str, bootstrap_server: str, reason: str):
        super().__init__(f"offset syncs {topic} on {bootstrap_server}: {reason}",
                         bootstrap_server=bootstrap_server)
        self.topic, self.reason = topic, reason


class NothingFound(MigrateError):
    """A scan found no offset at all: a forgotten chroot, a wrong --zk-root or a selection that
    matches nothing.

    Checking nothing is never success: verify exits 3, diff and migrate 1.
    """

    def __init__(self, command: str, source: str, selection: str, *, exit_code: int = EXIT_ERROR,
                 hint: str | None = None):
        hint = hint or ("a chroot missing from --zookeeper, e.g. zk:2181/kafka? a wrong "
                        "--zk-root? a selection that matches no group?")
        super().__init__(f"{command}: no offsets found under {source} for {selection}; "
                         f"nothing was checked ({hint})")
        self.command, self.source, self.selection = command, source, selection
        self.exit_code = exit_code


class WriterBusy(MigrateError):
    """Another zk2kafka writer holds the state dir's lock; one writer at a time per state dir."""

    def __init__(self, lock: str, holder: str):
        super().__init__(f"{lock}: the state dir is in use by another writer ({holder}); "
                         "wait for it to end (`zk2kafka status` shows its progress), "
                         "or use another --state-dir")
        self.lock, self.holder = lock, holder


class WorkerFailed(MigrateError):
    """A worker process (`migrate --writers N`, `sync --writers N`) stopped on an error, or died:
    its line, and the exit code the command ends with (that of the worker's own error)."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR):
        super().__init__(message)
        self.exit_code = exit_code


class PlanRefused(MigrateError):
    """A reviewed plan that cannot be executed as it stands: altered, made elsewhere or with other
    policies, too old."""

    def __init__(self, plan: str, reason: str):
        super().__init__(f"plan {plan}: {reason}")
        self.plan, self.reason = plan, reason


class LibraryMismatch(MigrateError):
    """An installed client library lacks an internal name zk2kafka relies on (checked when it is
    imported)."""

    def __init__(self, library: str, installed: str, missing: list[str], tested: str):
        super().__init__(f"{library} {installed} lacks {', '.join(missing)}, which zk2kafka uses; "
                         f"it was tested with {library} {tested}: "
                         f"install that (pip install '{library}=={tested}.*')")
        self.library, self.installed = library, installed
        self.missing, self.tested = missing, tested


def check_names(library: str, tested: str, needed: dict[str, object]) -> None:
    """Raise LibraryMismatch naming every `needed` entry that is falsy ({"Class.attr": found?})."""
    missing = [name for name, found in needed.items() if not found]
    if missing:
        try:
            installed = version(library)
        except PackageNotFoundError:
            installed = "(version unknown)"
        raise LibraryMismatch(library, installed, missing, tested)
