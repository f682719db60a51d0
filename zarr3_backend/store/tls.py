"""TLS for our own HTTP connections: OpenSSL over a plain TCP transport, its handshakes off the event loop's thread.

asyncio's TLS layer runs everything on the event loop's one thread: a
handshake's ~0.6-0.9 ms of OpenSSL, a 256 KiB receive buffer allocated (and
its pages faulted in) per connection, and its own state machine around every
record. An open of many documents makes ~60 connections, so that CPU held
back the requests and answers of the connections already open. Here
:class:`TlsLayer` sits between the TCP transport and an HTTP protocol: the
handshake's steps that wait on the peer's answer run on a small thread pool
(OpenSSL releases the GIL while it computes), the receive buffer is the
caller's (one per connection pool), and each record is decrypted straight into
the buffer the HTTP protocol offers. The certificate and host-name checks are
the ``ssl.SSLContext``'s, exactly as with asyncio (both wrap an ``SSLObject``).
"""

from __future__ import annotations

import asyncio
import os
import ssl
from typing import Any

from ..executor import shared_pool

__all__ = ["open_tls"]

#: Threads that run handshake steps (CPU-bound, a fraction of a millisecond each).
HANDSHAKE_THREADS = max(1, min(4, os.cpu_count() or 1))
#: Size of a receive buffer (asyncio's TLS layer takes the same per connection).
RECEIVE_BYTES = 256 << 10


async def open_tls(
    app: asyncio.BufferedProtocol, address: str, port: int, *, family: int, context: ssl.SSLContext,
    server_hostname: str, receive_buffer: bytearray,
) -> None:
    """Connect to ``address``, complete the TLS handshake, then hand ``app`` the connection (its ``connection_made``).

    ``receive_buffer`` takes each read from the socket before it is
    decrypted; connections of one event loop may share it. Raises what the
    handshake raised (``ssl.SSLError``, ``ConnectionError``: both
    ``OSError``); cancelled (a timeout), the connection is closed.
    """
    loop = asyncio.get_running_loop()
    layer = TlsLayer(app, context, server_hostname, receive_buffer)
    try:
        await loop.create_connection(lambda: layer, address, port, family=family)
        await layer.handshake
    except BaseException:
        layer.abort()
        raise


class TlsLayer(asyncio.BufferedProtocol, asyncio.Transport):
    """The TCP transport's protocol, and the HTTP protocol's transport: ciphertext on one side, plaintext on the other."""

    def __init__(self, app: asyncio.BufferedProtocol, context: ssl.SSLContext, server_hostname: str,
                 receive_buffer: bytearray) -> None:  # fmt: skip
        asyncio.Transport.__init__(self)
        self._loop = asyncio.get_running_loop()
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_hostname=server_hostname)
        self._app = app
        self._tcp: asyncio.Transport | None = None
        self._receive = memoryview(receive_buffer)
        self.handshake: asyncio.Future[None] = self._loop.create_future()
        self._stepping = False  # a handshake step runs on a thread: the ssl object is not ours to touch
        self._unread: list[bytes] = []  # ciphertext that arrived meanwhile
        self._error: Exception | None = None

    # ------------------------------------------------------------ the HTTP protocol's side
    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._tls.write(data)
        self._send()

    def close(self) -> None:
        if self._tcp is not None and not self._tcp.is_closing():
            if self.handshake.done() and not self._stepping:
                try:
                    self._tls.unwrap()  # close_notify, without waiting for the peer's
                except (ssl.SSLError, ValueError):
                    pass
                self._send()
            self._tcp.close()

    def abort(self) -> None:
        if self._tcp is not None:
            self._tcp.abort()

    def is_closing(self) -> bool:
        return self._tcp is None or self._tcp.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "ssl_object":
            return self._tls
        return default if self._tcp is None else self._tcp.get_extra_info(name, default)

    # ------------------------------------------------------------ the TCP transport's side
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._tcp = transport  # type: ignore[assignment]  # a stream transport
        self._step_here()  # the ClientHello: nothing to wait for, and the sooner it leaves the better

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._receive

    def buffer_updated(self, nbytes: int) -> None:
        if not self.handshake.done():
            self._unread.append(bytes(self._receive[:nbytes]))
            if not self._stepping:
                self._step_on_thread()
            return
        self._incoming.write(self._receive[:nbytes])
        self._decrypt()

    def eof_received(self) -> bool:
        return False  # close: connection_lost tells whoever waits

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.handshake.done():
            self.handshake.set_exception(exc or ConnectionError("the server closed the connection during the TLS handshake"))
            return
        self._app.connection_lost(exc or self._error)

    # ------------------------------------------------------------ handshake
    def _step_here(self) -> None:
        try:
            self._tls.do_handshake()
        except ssl.SSLWantReadError:
            self._send()
            return
        except Exception as exc:
            self._fail(exc)
            return
        self._shaken()

    def _step_on_thread(self) -> None:
        self._take_unread()
        self._stepping = True
        step = self._loop.run_in_executor(shared_pool("tls", HANDSHAKE_THREADS, inline=False), self._tls.do_handshake)
        step.add_done_callback(self._stepped)

    def _stepped(self, step: asyncio.Future[None]) -> None:
        self._stepping = False
        exc = ConnectionError("the TLS handshake was cancelled") if step.cancelled() else step.exception()
        assert exc is None or isinstance(exc, Exception)  # do_handshake raises nothing else
        if self.is_closing():
            if not self.handshake.done():
                self.handshake.set_exception(ConnectionError("the connection closed during the TLS handshake"))
            return
        if exc is None:
            self._shaken()
        elif isinstance(exc, ssl.SSLWantReadError):
            self._send()
            if self._unread:
                self._step_on_thread()
        else:
            self._fail(exc)

    def _shaken(self) -> None:
        self._send()
        self.handshake.set_result(None)
        self._app.connection_made(self)
        if self._unread:  # what the server sent after its last handshake message (TLS 1.3 session tickets)
            self._take_unread()
            self._decrypt()

    def _take_unread(self) -> None:
        for data in self._unread:
            self._incoming.write(data)
        self._unread.clear()

    def _fail(self, exc: Exception) -> None:
        self._send()  # the alert, if OpenSSL wrote one
        if not self.handshake.done():
            self.handshake.set_exception(exc)
        self.abort()

    # ------------------------------------------------------------ records
    def _decrypt(self) -> None:
        while not self.is_closing():
            buffer = memoryview(self._app.get_buffer(-1))
            try:
                # typeshed has read() return bytes; given a buffer to read into, it returns the count
                count: int = self._tls.read(len(buffer), buffer)  # type: ignore[assignment]
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:  # the server's close_notify
                self.close()
                return
            except ssl.SSLError as exc:  # a record that fails its check
                self._error = exc
                self.abort()
                return
            if not count:
                break
            self._app.buffer_updated(count)
        self._send()  # anything reading made OpenSSL answer (a key update)

    def _send(self) -> None:
        if self._outgoing.pending and self._tcp is not None and not self._tcp.is_closing():
            self._tcp.write(self._outgoing.read())
