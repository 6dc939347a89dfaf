"""A request zk2kafka encodes itself, as kafka-python's connection sends one: the one base that
Fetch, OffsetFetch, OffsetCommit and ConsumerGroupDescribe subclass.

kafka-python builds each request and answer as generic protocol objects, a Python object per
field; zk2kafka's own codecs pack a request from its own values and read an answer straight into
them. The connection asks the request for little: `API_VERSION` (left None, it picks the highest
version both ends know within `min_version`-`max_version`, as for its own requests), a header
(`with_header`), the framed bytes (`encode`), and, to read the answer, the class the header's
`get_response_class()` gives: its `parse_header` and `decode` over the receive buffer. The
connection's future then holds an `Answer`: the request's own decoded value, and the throttle time
the broker asked for, which kafka-python's connection honours.

Headers: request header v1 (api key, version, correlation id, client id as an int16-length
string even in a flexible request), v2 when the version is flexible (an empty tagged-field
section after it); the answer's header: the correlation id, then tagged fields when flexible.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from migrate.kafka.wire.primitives import INT32, NO_TAGS, Reader, string

_HEADER = struct.Struct(">hhi")   # api key, version, correlation id


class Request:
    """One request of `API_KEY`; a subclass gives its versions, its first flexible version (None:
    none it sends is), `body` and `decode`."""

    API_KEY: int
    name: str
    min_version = 0
    max_version = 0
    flexible_from: int | None = None
    # The first version whose answer starts with the throttle time the connection is told of (None:
    # none is told; a Fetch's is left to the broker, as zk2kafka's reader always left it).
    throttle_from: int | None = None
    # kafka-python reads a request's own version bounds here (None: the class's)
    _min_version = None
    _max_version = None

    def __init__(self, version: int | None = None):
        self.API_VERSION: int | None = version
        self.header: _Header | None = None

    def flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def check_version(self, version: int) -> None:
        if not self.min_version <= version <= self.max_version:
            raise ValueError(f"{self.name} version {version}: this codec writes "
                             f"v{self.min_version}-v{self.max_version}")

    def with_header(self, correlation_id: int = 0, client_id: str = "zk2kafka") -> None:
        self.header = _Header(correlation_id, client_id, self)

    def expect_response(self) -> bool:
        return True

    def encode(self, framed: bool = True, header: bool = True) -> bytes:
        assert framed and header and self.header is not None, "sent only by a connection"
        return self.encoded(self.API_VERSION, self.header.correlation_id, self.header.client_id)

    def encoded(self, version: int, correlation_id: int, client_id: str) -> bytes:
        """The framed request of `version`: its header, then its body."""
        self.check_version(version)
        message = _HEADER.pack(self.API_KEY, version, correlation_id) + string(client_id, False)
        if self.flexible(version):
            message += NO_TAGS
        message += b"".join(self.body(version))
        return INT32.pack(len(message)) + message

    def body(self, version: int) -> list[bytes]:
        """The request's fields after the header, in parts."""
        raise NotImplementedError

    def decode(self, version: int, body: bytes) -> Any:
        """The answer's body (after its header) as zk2kafka's own values."""
        raise NotImplementedError

    def __str__(self) -> str:
        return f"{self.name}Request_v{self.API_VERSION}({self.described()})"

    def described(self) -> str:
        return ""


class _Header:
    """What kafka-python's parser keeps of a request in flight, to read its answer."""

    __slots__ = ("correlation_id", "client_id", "request")

    def __init__(self, correlation_id: int, client_id: str, request: Request):
        self.correlation_id, self.client_id, self.request = correlation_id, client_id, request

    # kafka-python logs these of a header whose answer it cannot match
    @property
    def api_key(self) -> int:
        return self.request.API_KEY

    @property
    def api_version(self) -> int | None:
        return self.request.API_VERSION

    request_api_key, request_api_version = api_key, api_version

    def get_response_class(self) -> _Response:
        return _Response(self.request, self.request.API_VERSION)


class _ResponseHeader(NamedTuple):
    correlation_id: int


class Answer(NamedTuple):
    """A decoded answer, as the connection's future gives it: `value` is the request's decode;
    kafka-python's connection reads `throttle_time_ms` to hold back as the broker asks."""

    value: Any
    throttle_time_ms: int = 0


class _Response:
    """Reads one answer off kafka-python's receive buffer: the header, then the body, decoded by
    the request."""

    def __init__(self, request: Request, version: int):
        self.request, self.version = request, version
        self.compact = request.flexible(version)
        self.throttled = request.throttle_from is not None and version >= request.throttle_from

    def parse_header(self, buffer) -> _ResponseHeader:
        header = _ResponseHeader(INT32.unpack(buffer.read(4))[0])
        if self.compact:
            rest = buffer.read()
            src = Reader(rest, True)
            src.tags()
            buffer.seek(buffer.tell() - (len(rest) - src.at))
        return header

    def decode(self, buffer) -> Answer:
        body = buffer.read()
        throttle = INT32.unpack_from(body)[0] if self.throttled and len(body) >= 4 else 0
        return Answer(self.request.decode(self.version, body), throttle)
