"""Loopback servers for tests: a moto S3 server and a static HTTP server with Range support.

Both bind to 127.0.0.1 on a free port, run in a daemon thread and shut down
cleanly when their ``with`` block ends. Nothing here talks to the network.

>>> import tempfile
>>> with http_server(tempfile.mkdtemp()) as url:
...     url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["RangeRequestHandler", "S3Endpoint", "http_server", "moto_s3_process", "moto_s3_server"]

_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "foo", "AWS_SECRET_ACCESS_KEY": "foo", "AWS_DEFAULT_REGION": "us-east-1"}
_RANGE = re.compile(r"bytes=(?:(\d+)-(\d*)|-(\d+))$")


@dataclass(frozen=True)
class S3Endpoint:
    """A running S3-compatible endpoint with s3fs ``storage_options`` for it."""

    endpoint_url: str
    #: The server's process id when it runs in a child process (`moto_s3_process()`).
    pid: int | None = None

    @property
    def storage_options(self) -> dict[str, Any]:
        """Keyword arguments for ``s3fs.S3FileSystem`` / ``make_store(..., storage_options=)``."""
        return {
            "key": "foo",
            "secret": "foo",
            "anon": False,
            "client_kwargs": {"endpoint_url": self.endpoint_url},
        }

    def make_bucket(self, name: str | None = None) -> str:
        """Create a bucket (a fresh random name by default) and return its ``s3://`` URL."""
        import s3fs

        name = name or f"test-{uuid.uuid4().hex[:16]}"
        s3fs.S3FileSystem(**self.storage_options).mkdir(name)
        return f"s3://{name}"


@contextmanager
def patched_env(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of the block, then restore them."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def moto_s3_server() -> Iterator[S3Endpoint]:
    """Run moto's S3 server on 127.0.0.1 (free port) with dummy credentials ``foo``/``foo``.

    >>> with moto_s3_server() as s3:  # doctest: +SKIP
    ...     url = s3.make_bucket()   # "s3://test-…", use with s3.storage_options
    """
    from moto.server import ThreadedMotoServer

    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    werkzeug = logging.getLogger("werkzeug")
    level = werkzeug.level
    werkzeug.setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    with patched_env({**_CREDENTIALS, "NO_PROXY": no_proxy}):
        server.start()
        try:
            host, port = server.get_host_and_port()
            yield S3Endpoint(f"http://{host}:{port}")
        finally:
            server.stop()
            werkzeug.setLevel(level)


@contextmanager
def moto_s3_process() -> Iterator[S3Endpoint]:
    """Run moto's S3 server in a child process (``python -m moto.server``), off this process's GIL.

    Credentials and bucket creation as `moto_s3_server()`, which runs it in a thread.
    """
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **_CREDENTIALS},
    )  # fmt: skip
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        with patched_env(_CREDENTIALS):
            yield S3Endpoint(f"http://127.0.0.1:{port}", child.pid)
    finally:
        child.terminate()
        child.wait(timeout=30)


class RangeRequestHandler(SimpleHTTPRequestHandler):
    """Static files with single ``Range: bytes=a-b`` / ``a-`` / ``-n`` support, silent logs.

    Like a plain object store, directories are 404 (no index pages). Each
    response waits ``latency`` seconds first, to mimic a remote store.
    """

    latency = 0.0

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_head(self) -> Any:
        time.sleep(self.latency)
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        match = _RANGE.match(self.headers.get("Range", "").strip())
        if match is None:
            return super().send_head()
        try:
            file = open(path, "rb")  # noqa: SIM115 - closed by do_GET/do_HEAD, like the parent's
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        size = os.fstat(file.fileno()).st_size
        first, last, suffix = match.groups()
        span = _byte_span(first, last, suffix, size)
        if span is None:
            file.close()
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        first, last = span
        file.seek(first)
        self.send_response(HTTPStatus.PARTIAL_CONTENT)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(last - first + 1))
        self.end_headers()
        return _Window(file, last - first + 1)


def _byte_span(first: str | None, last: str | None, suffix: str | None, size: int) -> tuple[int, int] | None:
    """Inclusive ``(first, last)`` of an RFC 9110 byte range, or ``None`` if unsatisfiable."""
    if first is None:  # suffix: the last ``suffix`` bytes
        length = min(int(suffix or 0), size)
        return (size - length, size - 1) if length > 0 else None
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    return (start, end) if start < size and start <= end else None


class _Window:
    """The ``length`` bytes of ``file`` from its current position, read by ``copyfile``."""

    def __init__(self, file: Any, length: int) -> None:
        self._file = file
        self._left = length

    def read(self, size: int = -1) -> bytes:
        size = self._left if size < 0 else min(size, self._left)
        data: bytes = self._file.read(size)
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._file.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default 5 drops connections of a concurrent batch


@contextmanager
def http_server(directory: str | os.PathLike[str], latency: float = 0.0) -> Iterator[str]:
    """Serve ``directory`` over HTTP on 127.0.0.1 (free port); yield the base URL (no trailing '/').

    ``latency`` (seconds) delays every response, e.g. to show what concurrent batches buy.
    """
    handler_class = type("Handler", (RangeRequestHandler,), {"latency": latency})
    handler = partial(handler_class, directory=os.fspath(directory))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="zarr3-http-server", daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
