"""A minimal HTTP/1.1 client on reused connections, for the writes every pod event can cost.

aiohttp measured 196 us per 10-endpoint slice PUT against 82 us over a plain asyncio stream.
:class:`KeepAlivePool` sends one JSON request per connection at a time over kept-alive
connections (one closed while idle is dropped before use; any failure mid-request closes it),
with TLS from :func:`tls_context` as kubernetes-asyncio builds it, and reads ``Content-Length``,
chunked or close-delimited answers. Failures raise ``aiohttp.ClientConnectionError``; no retries
(the work queue retries the sync), no proxy (then :class:`~.direct_requests.DirectRequests` uses
aiohttp), no compression.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

__all__ = ["MAX_IDLE", "KeepAlivePool", "Response", "tls_context"]

MAX_IDLE = 100
"""Idle connections kept per server by default (kubernetes-asyncio's default pool size): one
per concurrent write, which the queue workers bound (``--workers``, per syncer)."""
HEAD_END = b"\r\n\r\n"
CRLF = b"\r\n"
NO_BODY_STATUSES = frozenset({204, 304})


def tls_context(configuration: Any) -> ssl.SSLContext:
    """The TLS settings of a kubernetes-asyncio ``Configuration``, as its REST client applies
    them to its own session.

    Built again from the same fields rather than taken from the client: kubernetes-asyncio
    creates its ``SSLContext`` inside ``RESTClientObject.__init__`` and hands it to its aiohttp
    connector without keeping it anywhere public (only the connector's private ``_ssl``). The
    real-server tests (``tests/realcluster/test_write_path.py``: client certificate,
    ``tls-server-name``) hold the two to the same behaviour."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if getattr(configuration, "disable_strict_ssl_verification", False):
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


class Response:
    """A complete answer, read already (the interface :func:`~.writer.raise_for_status` uses
    of an aiohttp response)."""

    __slots__ = ("_body", "status")

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self._body = body

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        return None


@dataclass(slots=True)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class KeepAlivePool:
    """HTTP/1.1 requests over kept-alive connections (TLS for ``https`` URLs)."""

    def __init__(
        self,
        tls: Callable[[], ssl.SSLContext],
        server_hostname: str | None = None,
        max_idle: int = MAX_IDLE,
    ) -> None:
        self._max_idle = max_idle
        self._make_tls = tls
        """Builds the TLS context on the first ``https`` connection (loading certificates
        takes milliseconds; plain-HTTP servers never need it)."""
        self._tls: ssl.SSLContext | None = None
        self._server_hostname = server_hostname or None
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._closed = False

    async def request(
        self, method: str, origin: URL, target: str, headers: dict[str, str], body: bytes | None
    ) -> Response:
        """Send one request to ``origin`` (scheme, host and port) for ``target`` (the path and
        query, encoded already) and read its whole answer."""
        if self._closed:
            raise aiohttp.ClientConnectionError("the connection pool is closed")
        head = [f"{method} {target} HTTP/1.1", f"Host: {origin.host_port_subcomponent}"]
        head.extend(f"{name}: {value}" for name, value in headers.items())
        if body is not None:
            head.append(f"Content-Length: {len(body)}")
        message = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if body:
            message += body
        key = (origin.scheme, str(origin.raw_host), int(origin.port or 0))
        connection = self._take(key) or await self._open(origin)
        try:
            connection.writer.write(message)
            status, reusable, payload = await self._read_answer(connection.reader, method)
        except BaseException as exc:
            connection.close()
            if isinstance(exc, (OSError, EOFError, ValueError, asyncio.LimitOverrunError)):
                raise aiohttp.ClientConnectionError(
                    f"{method} {origin}{target}: connection failed: {exc!r}"
                ) from exc
            raise
        if reusable and not self._closed:
            self._put(key, connection)
        else:
            connection.close()
        return Response(status, payload)

    async def close(self) -> None:
        """Close the idle connections; requests in flight close theirs when done."""
        self._closed = True
        idle = [c for connections in self._idle.values() for c in connections]
        self._idle.clear()
        for connection in idle:
            connection.close()
        for connection in idle:
            with contextlib.suppress(OSError, ssl.SSLError):
                await connection.writer.wait_closed()

    # -- connections ------------------------------------------------------------------------

    def _take(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection
            connection.close()  # the server ended it while it was idle
        return None

    def _put(self, key: tuple[str, str, int], connection: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) < self._max_idle:
            idle.append(connection)
        else:
            connection.close()

    async def _open(self, url: URL) -> _Connection:
        secure = url.scheme == "https"
        if secure and self._tls is None:
            self._tls = self._make_tls()
        try:
            reader, writer = await asyncio.open_connection(
                url.raw_host,
                url.port,
                ssl=self._tls if secure else None,
                server_hostname=(self._server_hostname or url.raw_host) if secure else None,
            )
        except (OSError, ValueError) as exc:
            raise aiohttp.ClientConnectionError(
                f"cannot connect to {url.origin()}: {exc!r}"
            ) from exc
        return _Connection(reader, writer)

    # -- answers ----------------------------------------------------------------------------

    async def _read_answer(
        self, reader: asyncio.StreamReader, method: str
    ) -> tuple[int, bool, bytes]:
        """``(status, connection reusable, body)``."""
        while True:
            head = await reader.readuntil(HEAD_END)
            lines = head[:-4].decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            status = int(rest[:3])
            if not 100 <= status < 200:
                break  # (an interim 1xx answer is followed by the real one)
        fields: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        connection = fields.get("connection", "").lower()
        reusable = (version == "HTTP/1.1" and connection != "close") or connection == "keep-alive"
        if method == "HEAD" or status in NO_BODY_STATUSES:
            return status, reusable, b""
        if "chunked" in fields.get("transfer-encoding", "").lower():
            return status, reusable, await _read_chunks(reader)
        length = fields.get("content-length")
        if length is not None:
            return status, reusable, await reader.readexactly(int(length))
        return status, False, await reader.read()  # delimited by the end of the connection


async def _read_chunks(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = await reader.readuntil(CRLF)
        size = int(size_line.split(b";", 1)[0], 16)
        if size == 0:
            while await reader.readuntil(CRLF) != CRLF:
                pass  # trailer fields, then the empty line
            return b"".join(parts)
        chunk = await reader.readexactly(size + 2)
        parts.append(chunk[:-2])
