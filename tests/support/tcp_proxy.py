"""A network cut the test controls: a TCP forwarder on loopback between a client and a real
server. `cut()` drops every connection through it and refuses new ones (each is closed as soon as
it is accepted) until `restore()`; the server stays up and goes on with its own clocks, so a
ZooKeeper session whose client is cut off past its timeout expires there, as it does when a
network partitions."""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    """Forwards 127.0.0.1:<port> to `upstream` (host:port) until `close`."""

    def __init__(self, upstream: str):
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._cut = threading.Event()
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True, name="tcp-proxy").start()

    def cut(self) -> None:
        """Drop every connection through the proxy, and refuse new ones until `restore`."""
        self._cut.set()
        with self._lock:
            doomed, self._open = self._open, set()
        for sock in doomed:
            _close(sock)

    def restore(self) -> None:
        self._cut.clear()

    def close(self) -> None:
        self._closed.set()
        self.cut()
        _close(self.listener)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self._cut.is_set():
                _close(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._open |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True,
                                 name="tcp-proxy-pump").start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            with self._lock:
                self._open.discard(sock)
            _close(sock)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
