"""The shell a long-running command runs in, the same for `sync` and `renew`: its endpoint bound
before any store is reached (a typo or a port in use is said at once), then the writers' lock and
the journal; SIGTERM and --stop-after setting the one stop event the command waits on; the run
journaled as it begins and as it ends; and all of it closed on the way out, whatever the way.

    with ServiceShell("renew", run_id, settings, journal=True, writer=...) as shell:
        ...                       # reach the stores, build the work
        shell.serve(registry, health)
        shell.begin_run(record)   # --execute: journaled, kind `renew`
        shell.stop_after(settings.stop_after)
        ...                       # the work, until shell.stop is set
        shell.end_run()
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

from migrate import stores
from migrate.endpoint import Endpoint, Health
from migrate.journal.journal import DONE, Journal
from migrate.settings import Settings


class ServiceShell:
    """`kind`'s run `run_id` in its shell. `address`: the endpoint's (None: none served);
    `journal`: whether to open the state dir's journal; `writer`: the writers' lock to hold
    while it is open (None: read only)."""

    def __init__(self, kind: str, run_id: str, settings: Settings, *, address: str | None,
                 journal: bool, writer: str | None = None):
        self.kind, self.run_id, self.settings = kind, run_id, settings
        self._address, self._open_journal, self._writer = address, journal, writer
        self.stop = threading.Event()
        self.endpoint: Endpoint | None = None
        self.journal: Journal | None = None
        self._closers: list[Callable[[], Any]] = []
        self._previous: Any = None

    def __enter__(self) -> ServiceShell:
        if self._address is not None:
            self.endpoint = Endpoint(self._address, self.kind)
        try:
            # The writers' lock before any store: a second writer stops before it connects.
            if self._open_journal:
                self.journal = Journal.open(self.settings.state_dir, writer=self._writer)
        except BaseException:
            if self.endpoint is not None:
                self.endpoint.close()
            raise
        self._previous = signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
        return self

    def closing(self, close: Callable[[], Any]) -> None:
        """`close` called on the way out, before the journal is closed (the last first)."""
        self._closers.append(close)

    def serve(self, registry, health: Health) -> None:
        """The endpoint, where there is one, serving `registry` and `health`."""
        if self.endpoint is not None:
            self.endpoint.serve(registry, health)

    def begin_run(self, record: dict[str, Any], report: str | None = None) -> None:
        """The run journaled as begun, with what it was given and the stores it reaches (Kafka
        only: neither service writes ZooKeeper); `record` adds the command's own."""
        reached = stores.reach(self.settings.connection, zookeeper=False)
        self.journal.create_run(self.run_id, self.kind, "", {
            **self.settings.recorded(), "stores": reached.to_json(), "no_zk_write": True,
            **record}, {}, report=report)

    def end_run(self, state: str = DONE) -> None:
        self.journal.set_run(self.run_id, state)

    def stop_after(self, seconds: float | None) -> None:
        """--stop-after: the stop event set after `seconds` (None: never)."""
        if seconds:
            timer = threading.Timer(seconds, self.stop.set)
            timer.daemon = True   # never what keeps the process alive
            timer.start()

    def __exit__(self, *exc) -> None:
        self.stop.set()
        signal.signal(signal.SIGTERM, self._previous)
        if self.endpoint is not None:
            self.endpoint.close()
        try:
            for close in reversed(self._closers):
                close()
        finally:
            if self.journal is not None:
                self.journal.close()
