"""HTTP/1.1 GETs on a pool of connections of our own, each body read straight into its buffer.

aiohttp spends about 0.2 ms of CPU on a request and hands a body over in
pieces: every TLS record is decrypted into bytes of its own, parsed, queued
and joined. All of that runs on fsspec's one event-loop thread, where it
delays every other request and the hand-over to the decoders. Here a
connection is an :class:`asyncio.BufferedProtocol`: the socket (or, over
TLS, OpenSSL) writes the body into the buffer that becomes the answer, and
parsing is one look at the head. Over https, :mod:`.tls` runs OpenSSL
under that protocol, its handshakes on threads of their own.

:class:`HttpPool` keeps only what it can read plainly: a status line,
headers, and a ``Content-Length`` body. Anything else (a chunked body, a
connection that fails or stalls past the read timeout) raises
:class:`HttpError`, and the caller sends the request its usual way. A
request on a reused connection that the server closed while it was idle is
sent again on the next idle connection, or a new one.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .tls import RECEIVE_BYTES, open_tls

__all__ = ["Answer", "HttpError", "HttpPool"]

#: Most a response head may take.
MAX_HEAD = 64 << 10
#: A body up to this size is received into one buffer, which becomes the answer without a copy;
#: a larger one (a server could claim any length) arrives in blocks as its bytes do, and is joined.
MAX_SINGLE = 256 << 20
BLOCK = 8 << 20
#: How long resolved addresses are used (aiohttp's default).
DNS_TTL = 10.0
#: About the CPU one TLS handshake costs us (0.6-0.9 ms measured): see :meth:`HttpPool._connect_limit`.
HANDSHAKE_CPU = 0.001
MIN_CONNECTING = 4


class HttpError(Exception):
    """The request failed, or its answer is not one this module reads."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]  # names in lower case
    body: bytes | bytearray  # a bytearray: the buffer it was received into, held by nobody else


class HttpPool:
    """Up to ``limit`` keep-alive connections to one origin (``ssl_context``: ``None`` for plain http).

    ``connect_timeout`` bounds opening a connection (TLS handshake included),
    ``read_timeout`` any wait for the next bytes of an answer.
    """

    def __init__(
        self, host: str, port: int, ssl_context: ssl.SSLContext | None, *, limit: int, connect_timeout: float | None,
        read_timeout: float | None,
    ) -> None:
        self._host, self._port, self._ssl = host, port, ssl_context
        self._limit = max(1, limit)
        self._connect_timeout, self._read_timeout = connect_timeout, read_timeout
        self._idle: list[_Connection] = []
        self._open = 0  # connections counted against the limit: idle, busy or being opened
        self._connecting = 0
        self._fastest_connect: float | None = None  # seconds
        self._waiting: deque[asyncio.Future[_Connection | None]] = deque()
        self._addresses: tuple[float, asyncio.Future[list[tuple[int, str, int]]]] | None = None
        self._literal = _ip_literal(host, port)
        self._closed = False
        self._warming: set[asyncio.Task[None]] = set()
        self._ciphertext: bytearray | None = None  # over https, every connection's receive buffer (one loop: one at a time)

    async def get(self, target: str, headers: Mapping[str, str]) -> Answer:
        """GET ``target`` (path and query) with ``headers`` (``host`` among them, as signed)."""
        lines = [f"GET {target} HTTP/1.1", *(f"{name}: {value}" for name, value in headers.items())]
        if any("\r" in line or "\n" in line for line in lines):
            raise HttpError(f"a line break in the request for {target[:80]!r}")
        request = "\r\n".join([*lines, "", ""]).encode("latin-1")
        while True:
            connection = await self._acquire()
            reused = connection.served > 0 or connection.warmed  # it may have waited long enough to time out
            try:
                answer = await connection.exchange(request, self._read_timeout)
            except _Stale:
                self._discard(connection)
                if reused:  # closed while idle: the next idle one, or a new one (each tried once)
                    continue
                raise HttpError(f"{self._host}:{self._port} closed the connection before answering") from None
            except BaseException:
                self._discard(connection)
                raise
            if connection.keep_alive:
                self._release(connection)
            else:
                self._discard(connection)
            return answer

    def warm(self, count: int) -> None:
        """Open connections in the background until ``count`` (at most the limit) are open or opening."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        for _ in range(min(count, self._limit) - self._open):
            self._open += 1
            task = loop.create_task(self._open_idle())
            self._warming.add(task)
            task.add_done_callback(self._warming.discard)

    async def _open_idle(self) -> None:
        """Open one connection (already counted in ``_open``) for the idle list, or for a request waiting for one."""
        try:
            while True:
                if self._closed:
                    raise HttpError("the connection pool is closed")
                if self._connecting < self._connect_limit():
                    break
                waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
                self._waiting.append(waiter)
                handed = await waiter
                if handed is not None:  # a request's connection came free: it goes to whoever waits next
                    self._release(handed)
            self._connecting += 1
            try:
                connection = await self._connect()
            finally:
                self._connecting -= 1
        except (HttpError, asyncio.CancelledError):  # nobody asked for this one: its failure is nobody's error
            self._open -= 1
            self._wake_one()
            return
        connection.warmed = True
        self._wake_one()
        self._release(connection)

    def close(self) -> None:
        """Close the idle connections now and the busy ones as they finish."""
        self._closed = True
        for connection in self._idle:
            connection.close()
        self._idle.clear()
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def _acquire(self) -> _Connection:
        while True:
            if self._closed:
                raise HttpError("the connection pool is closed")
            while self._idle:
                connection = self._idle.pop()  # the most recently used: the least likely to have timed out
                if connection.is_open:
                    return connection
                self._open -= 1
            if self._open < self._limit and self._connecting < self._connect_limit():
                self._open += 1
                self._connecting += 1
                try:
                    return await self._connect()
                except BaseException:
                    self._open -= 1
                    raise
                finally:
                    self._connecting -= 1
                    self._wake_one()  # a place to open a connection in
            waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            handed = await waiter
            if handed is not None:
                return handed

    def _connect_limit(self) -> int:
        """Connections opened at once: about as many handshakes as our CPU completes while one waits on the network.

        Handshakes are CPU, on few threads, with the GIL taken back between
        their steps. Near the server (a loopback or in-region S3: a connection
        in 1-3 ms) 60 of them opened together progressed in lockstep for ~50 ms
        of CPU, and no request went out until all were done; a few at a time,
        requests leave as each one is ready (with handshakes on threads, 8 or
        16 at a time were still slower than 4). Far from it (100 ms a round
        trip) the network is the wait, and all ``limit`` are opened at once. Judged by the fastest
        connection so far; :data:`MIN_CONNECTING` until one is open.
        """
        if self._fastest_connect is None:
            return MIN_CONNECTING
        return max(MIN_CONNECTING, min(self._limit, int(self._fastest_connect / HANDSHAKE_CPU)))

    def _release(self, connection: _Connection) -> None:
        if self._closed:
            self._discard(connection)
            return
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        self._idle.append(connection)

    def _discard(self, connection: _Connection) -> None:
        connection.close()
        self._open -= 1
        self._wake_one()

    def _wake_one(self) -> None:
        """Let a waiting request open a connection of its own, now that one fewer is counted."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        errors = []
        for family, address, port in await self._resolve():
            started = loop.time()
            try:
                connection = await asyncio.wait_for(self._open_connection(family, address, port), self._connect_timeout)
            except (OSError, asyncio.TimeoutError) as exc:
                errors.append(f"{address}: {type(exc).__name__}: {exc}")
                continue
            took = loop.time() - started  # TCP and TLS, not the address lookup
            self._fastest_connect = min(took, self._fastest_connect or took)
            return connection
        raise HttpError(f"cannot connect to {self._host}:{self._port}: {'; '.join(errors) or 'no address'}")

    async def _open_connection(self, family: int, address: str, port: int) -> _Connection:
        loop = asyncio.get_running_loop()
        connection = _Connection(loop)
        if self._ssl is None:
            await loop.create_connection(lambda: connection, address, port, family=family)
            return connection
        if self._ciphertext is None:
            self._ciphertext = bytearray(RECEIVE_BYTES)
        await open_tls(connection, address, port, family=family, context=self._ssl, server_hostname=self._host,
                       receive_buffer=self._ciphertext)  # fmt: skip
        return connection

    async def _resolve(self) -> list[tuple[int, str, int]]:
        """The origin's addresses, looked up once per :data:`DNS_TTL` by all the connections opened meanwhile.

        An IP address is its own (no lookup: that would wait for a thread of
        the loop's default executor, which other work may keep busy).
        """
        if self._literal is not None:
            return [self._literal]
        loop = asyncio.get_running_loop()
        if self._addresses is None or loop.time() - self._addresses[0] > DNS_TTL:
            lookup = asyncio.ensure_future(loop.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM))
            found: asyncio.Future[list[tuple[int, str, int]]] = loop.create_future()
            lookup.add_done_callback(lambda done: _settle_addresses(found, done))
            self._addresses = (loop.time(), found)
        try:
            return await asyncio.shield(self._addresses[1])
        except OSError as exc:
            self._addresses = None
            raise HttpError(f"cannot resolve {self._host}: {exc}") from exc


def _ip_literal(host: str, port: int) -> tuple[int, str, int] | None:
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    return (socket.AF_INET6 if address.version == 6 else socket.AF_INET), str(address), port


def _settle_addresses(found: asyncio.Future[list[tuple[int, str, int]]], lookup: asyncio.Future[Any]) -> None:
    if lookup.cancelled():
        found.cancel()
    elif (exc := lookup.exception()) is not None:
        found.set_exception(exc)
    else:
        found.set_result([(family, str(address[0]), int(address[1])) for family, _, _, _, address in lookup.result()])


class _Stale(Exception):
    """The connection ended before any byte of the answer arrived."""


class _Connection(asyncio.BufferedProtocol):
    """One HTTP/1.1 connection: one request at a time, the answer's body received into blocks."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._scratch = bytearray(MAX_HEAD)
        self._head = bytearray()
        self._answer: asyncio.Future[Answer] | None = None
        self._status = 0
        self._headers: dict[str, str] = {}
        self._blocks: list[bytearray] = []
        self._filled = 0  # bytes in the last block
        self._missing = 0  # body bytes not yet in a block
        self._received = 0
        self._seen = 0  # ``_received`` when the read timer last looked
        self._timer: asyncio.TimerHandle | None = None
        self.served = 0
        self.warmed = False  # opened by :meth:`HttpPool.warm`, before any request wanted it
        self.keep_alive = True
        self.is_open = False

    # ------------------------------------------------------------ the pool's side
    async def exchange(self, request: bytes, read_timeout: float | None) -> Answer:
        assert self._transport is not None and self._answer is None
        self._answer = self._loop.create_future()
        self._head.clear()
        self._received = self._seen = 0
        if read_timeout is not None:
            self._timer = self._loop.call_later(read_timeout, self._check_progress, read_timeout)
        self._transport.write(request)
        try:
            return await self._answer
        finally:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._answer = None
            self._blocks = []

    def close(self) -> None:
        self.is_open = False
        if self._transport is not None:
            self._transport.close()

    def _check_progress(self, read_timeout: float) -> None:
        if self._received == self._seen:
            self._fail(HttpError(f"no data for {read_timeout} s"))
            self.close()
            return
        self._seen = self._received
        self._timer = self._loop.call_later(read_timeout, self._check_progress, read_timeout)

    # ------------------------------------------------------------ asyncio's side
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # a stream transport
        self.is_open = True

    def connection_lost(self, exc: Exception | None) -> None:
        self.is_open = False
        if self._received == 0:
            self._fail(_Stale())
        else:
            self._fail(HttpError(f"the connection was lost mid-answer: {exc or 'closed by the server'}"))

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost fails an unfinished answer

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._missing and self._blocks:
            block = self._blocks[-1]
            if self._filled == len(block):
                block = bytearray(min(self._missing, BLOCK))
                self._blocks.append(block)
                self._filled = 0
            return memoryview(block)[self._filled :]
        return memoryview(self._scratch)

    def buffer_updated(self, nbytes: int) -> None:
        self._received += nbytes
        if self._missing and self._blocks:
            self._filled += nbytes
            self._missing -= nbytes
            if not self._missing:
                self._finish()
            return
        if self._answer is None or self._answer.done():
            self.keep_alive = False  # bytes nobody asked for: this connection's framing cannot be trusted
            self.close()
            return
        self._head += memoryview(self._scratch)[:nbytes]
        self._parse_head()

    # ------------------------------------------------------------ parsing
    def _parse_head(self) -> None:
        end = self._head.find(b"\r\n\r\n")
        if end < 0:
            if len(self._head) > MAX_HEAD:
                self._give_up(f"a response head longer than {MAX_HEAD} bytes")
            return
        lines = self._head[:end].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit() or code.startswith("1"):
            self._give_up(f"an unexpected status line {lines[0][:80]!r}")
            return
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                self._give_up(f"a malformed header line {line[:80]!r}")
                return
            name = name.strip().lower()
            headers[name] = f"{headers[name]},{value.strip()}" if name in headers else value.strip()
        length = headers.get("content-length", "")
        if "transfer-encoding" in headers or not length.isdigit():
            self._give_up("an answer without a plain Content-Length")
            return
        self._status, self._headers = int(code), headers
        self.keep_alive = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
        body = self._head[end + 4 :]
        self._missing = int(length) - len(body)
        if self._missing < 0:
            self._give_up("more bytes than its Content-Length")
            return
        if int(length) <= MAX_SINGLE:
            whole = bytearray(int(length))
            whole[: len(body)] = body
            self._blocks, self._filled = [whole], len(body)
        else:
            self._blocks, self._filled = [bytearray(body), bytearray(min(self._missing, BLOCK))], 0
        if not self._missing:
            self._finish()

    def _finish(self) -> None:
        blocks = self._blocks
        body = blocks[0] if len(blocks) == 1 else b"".join(blocks)
        self.served += 1
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(Answer(self._status, self._headers, body))

    def _give_up(self, what: str) -> None:
        self.keep_alive = False
        self._fail(HttpError(f"{what}: left to the usual client"))
        self.close()

    def _fail(self, exc: Exception) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(exc)
