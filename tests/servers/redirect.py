"""A loopback server that redirects every request to another loopback host, and one that records what it gets.

:func:`redirecting_server` answers every request on 127.0.0.1 with a
redirect (307 by default) to the same path and query on 127.0.0.2, where a
second server records the method, path and headers of each request it
receives and answers like a tiny object store (one value, ``b"hello"``, with
an ETag). Tests use it to see which credentials a client forwards to a host
it was redirected to.

>>> import urllib.request
>>> with redirecting_server() as server:
...     urllib.request.urlopen(server.url + "/b/k", timeout=10).read(), server.received[0].path
(b'hello', '/b/k')
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["Received", "RedirectingServer", "redirecting_server"]

BODY = b"hello"


@dataclass(frozen=True)
class Received:
    """One request the redirect target received: method, path and headers (names in lower case)."""

    method: str
    path: str
    headers: dict[str, str]


@dataclass
class RedirectingServer:
    """``url`` redirects to the target server, whose requests are in ``received``."""

    url: str
    target_url: str
    received: list[Received] = field(default_factory=list)


class _Target(BaseHTTPRequestHandler):
    server: _TargetServer

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.server.received.append(
            Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()})
        )
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.send_header("ETag", '"5d41402abc4b2a76b9719d911017c592"')
        self.send_header("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(BODY)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


class _TargetServer(ThreadingHTTPServer):
    daemon_threads = True
    received: list[Received]


class _Redirect(BaseHTTPRequestHandler):
    server: _RedirectServer

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(self.server.status)
        self.send_header("Location", self.server.target_url + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


class _RedirectServer(ThreadingHTTPServer):
    daemon_threads = True
    status: int
    target_url: str


@contextmanager
def redirecting_server(status: int = 307) -> Iterator[RedirectingServer]:
    """Run both servers (127.0.0.1 redirecting with ``status`` to 127.0.0.2) until the block ends."""
    target = _TargetServer(("127.0.0.2", 0), _Target)
    target.received = []
    source = _RedirectServer(("127.0.0.1", 0), _Redirect)
    source.status, source.target_url = status, f"http://127.0.0.2:{target.server_address[1]}"
    threads = [threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True) for s in (target, source)]
    for thread in threads:
        thread.start()
    try:
        yield RedirectingServer(
            f"http://127.0.0.1:{source.server_address[1]}", source.target_url, target.received
        )
    finally:
        for server in (source, target):
            server.shutdown()
            server.server_close()
        for thread in threads:
            thread.join()
