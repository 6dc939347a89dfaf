"""Worker processes, started one way for every command that spreads its work over processes
(`migrate --writers N`: write/writer_shards.py; `sync --writers N`: sync/follower_shards.py;
`scan --zk-readers N`: zk/scan.py), and whether a process still runs.

One process is the limit of each of them on a small machine: CPU-bound on kafka-python's and
kazoo's encoding, under one interpreter lock. So N processes each open their own sessions and
take a share of the work. Each is forked from a server (multiprocessing's forkserver) that has
imported the workers' module already: it can start (warm_up) while the command does other work,
so the workers do not wait for interpreters to import kafka-python, kazoo and pyarrow. The server
is a fresh interpreter, not a fork of the command's process: kazoo and kafka-python run threads,
never fork them.

A worker dies with the command's process (`kill -9` included), leaves Ctrl-C to it, logs through
its handlers (one format, secrets scrubbed, at the command's levels) and answers on a pipe of
its own; what it sends, and what the command makes of it, is its caller's.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Sequence
from logging.handlers import QueueHandler, QueueListener
from multiprocessing import forkserver

CONTEXT = "forkserver"
_PR_SET_PDEATHSIG = 1   # linux/prctl.h


def pid_alive(pid: int) -> bool:
    """True while process `pid` runs (a zombie child of ours is reaped and counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def warm_up(module: str) -> None:
    """Start the workers' server now, with `module` (the one their target is in) imported."""
    multiprocessing.set_forkserver_preload([module])
    forkserver.ensure_running()


def context() -> multiprocessing.context.BaseContext:
    """The context workers are started in: what their shared events and counters are made in."""
    return multiprocessing.get_context(CONTEXT)


class Workers:
    """Worker processes started together: worker k runs `target(pipe, *args[k])`, named
    `{name}-{k}`, and the command reads what it sends on `pipes[k]`.

    The command closes them (`close`) whatever happens: each is waited for, then killed.
    """

    def __init__(self, target: Callable, args: Sequence[tuple], name: str):
        warm_up(target.__module__)   # a no-op once the server runs
        ctx = context()
        records = ctx.Queue()
        # The workers' log records are written here, by this process's handlers.
        self._listener = QueueListener(records, *logging.getLogger().handlers,
                                       respect_handler_level=True)
        self._listener.start()
        self.processes: list[multiprocessing.Process] = []
        self.pipes: list = []
        levels = log_levels()
        try:
            for k, own in enumerate(args):
                mine, theirs = ctx.Pipe(duplex=False)
                process = ctx.Process(target=_child, name=f"{name}-{k}", daemon=True,
                                      args=(target, os.getpid(), records, levels, theirs, *own))
                process.start()
                theirs.close()
                self.processes.append(process)
                self.pipes.append(mine)
        except BaseException:
            self.kill()
            self.close(0)
            raise

    def __len__(self) -> int:
        return len(self.processes)

    def alive(self, k: int) -> bool:
        return self.processes[k].is_alive()

    def exitcode(self, k: int) -> int | None:
        return self.processes[k].exitcode

    def wait(self, k: int, timeout: float) -> None:
        """Wait up to `timeout` seconds for worker k to end (its exit code is then known)."""
        self.processes[k].join(timeout=timeout)

    def kill(self) -> None:
        """Stop every worker where it is, as `kill -9` would."""
        for process in self.processes:
            process.kill()

    def close(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for each worker to end, kill those that did not, and stop
        writing their log records."""
        for process in self.processes:
            process.join(timeout=timeout)
            if process.is_alive():
                process.kill()
        self._listener.stop()


def log_levels() -> dict[str, int]:
    """The levels this process's loggers are set to, for a worker to log the same."""
    manager = logging.getLogger().manager
    levels = {name: logger.level for name, logger in manager.loggerDict.items()
              if isinstance(logger, logging.Logger) and logger.level}
    return {**levels, "": logging.getLogger().level}


# -- in a worker -----------------------------------------------------------------------------------

def _child(target: Callable, parent: int, records, levels: dict[str, int], pipe, *args) -> None:
    become_child(parent, records, levels)
    target(pipe, *args)


class ToParent(QueueHandler):
    """A record as the command's handlers expect it: message merged, traceback as text."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record = logging.makeLogRecord(record.__dict__)
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        return record


def become_child(parent: int, records, levels: dict[str, int]) -> None:
    """Set up a process forked for the command's process `parent`: it dies with it, leaves Ctrl-C
    to it, and logs through it (`records`: the queue its QueueListener reads) at `levels`."""
    die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the command's process decides
    root = logging.getLogger()
    root.handlers[:] = [ToParent(records)]
    for name, level in levels.items():
        logging.getLogger(name or None).setLevel(level)


def die_with(parent: int) -> None:
    """End this process when the command's process ends, `kill -9` included: no worker outlives
    the command (nor the writers' lock it holds).

    Its own parent is the fork server, which ends when the command's process does (its pipe
    from the command closes); the kernel then kills this process. The command is watched too.
    """
    try:   # Linux: the kernel sends SIGKILL the moment the fork server dies
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass

    server = os.getppid()

    def watch() -> None:
        try:   # Linux 5.3+: woken the moment the command's process ends
            with open(os.pidfd_open(parent), closefd=True) as ended:
                select.select([ended], [], [])
        except (OSError, AttributeError):   # elsewhere: poll
            while pid_alive(parent) and os.getppid() == server:
                time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)

    if not pid_alive(parent):
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, name="zk2kafka-parent-watch", daemon=True).start()
