"""A small S3-compatible loopback server with injected latency, a bandwidth cap and request counters.

Object storage is slow in two ways: every request waits for its first byte
(20-100 ms on S3), and each connection moves a bounded number of bytes per
second. :func:`latency_s3_server` reproduces both on 127.0.0.1, in memory,
with the standard library (and crc32c) only, and counts what clients do (requests by
kind, the most requests in flight at once, and *rounds*: the longest chain
of requests each started after the previous one had been answered, so a
client pays at least ``rounds * latency``), so tests and benchmarks can tell
rounds from requests. Unlike moto it costs well under a millisecond of CPU per request,
so the injected latency dominates.

It speaks enough S3 for s3fs, zarr-python's ``FsspecStore`` and tensorstore's
``s3`` kvstore to read and write: buckets (create, head, delete), objects
(GET with a single ``Range``, HEAD, PUT, DELETE, multi-object delete,
``If-Match`` / ``If-None-Match``), ``ListObjectsV2`` (prefix, delimiter,
``max-keys``, continuation tokens, ``start-after``, ``encoding-type=url``),
and ``aws-chunked`` upload bodies. No authentication is checked, and no
multipart uploads. Like S3, it keeps the checksum an upload came with
(``x-amz-checksum-*``, as a header or an ``aws-chunked`` trailer: botocore
sends a CRC32 with every PUT), refuses one that does not match
(``BadDigest``), and returns it with a whole object asked for with
``x-amz-checksum-mode: ENABLED``.

Real S3 speaks https, and a TLS handshake costs a client far more CPU than
a request: ``tls=`` (files from :func:`self_signed_certificate`) serves over
TLS, and ``storage_options`` then trust that certificate.

>>> import fsspec
>>> with latency_s3_server(latency=0.001) as s3:
...     fs = fsspec.filesystem("s3", **s3.storage_options)
...     _ = s3.create_bucket("doc"), fs.pipe_file("doc/a/b", b"hello")
...     fs.cat_file("doc/a/b", start=1, end=3), s3.stats.requests_by_kind["GET"] >= 1
(b'el', True)
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import ipaddress
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from xml.etree import ElementTree
from xml.sax.saxutils import escape

import crc32c

__all__ = [
    "LatencyS3Server",
    "RemoteServer",
    "RequestStats",
    "TlsFiles",
    "latency_s3_process",
    "latency_s3_server",
    "self_signed_certificate",
]

_RANGE = re.compile(r"bytes=(?:(\d+)-(\d*)|-(\d+))$")
_XML = "application/xml"
#: Largest request body accepted (one PUT); larger ones are refused with 413.
MAX_BODY_BYTES = 1 << 30
#: Most requests handled at once; more wait in the accept queue.
MAX_CONCURRENT = 256
_PIECE = 64 << 10
#: The whole-object checksums S3 keeps, each with how to compute it (``None``: kept as sent, not checked);
#: computed here, not with the client's own functions, which the server's answers test.
CHECKSUMS: dict[str, Callable[[bytes], bytes] | None] = {
    "crc32": lambda data: zlib.crc32(data).to_bytes(4, "big"),
    "crc32c": lambda data: crc32c.crc32c(data).to_bytes(4, "big"),
    "sha1": lambda data: hashlib.sha1(data).digest(),
    "sha256": lambda data: hashlib.sha256(data).digest(),
    "crc64nvme": None,
}
#: Path prefix of the control requests (not S3, never counted): stats, reset, config.
CONTROL = "/__control__/"


@dataclass
class _Object:
    data: bytes
    etag: str
    modified: float
    checksum: tuple[str, str] | None = None  # (name, base64 value), as uploaded


@dataclass
class RequestStats:
    """What clients asked for: totals by kind, peak concurrency, and rounds.

    ``rounds`` is the length of the longest chain of requests in which each
    began after the one before it had ended: the latency a client cannot
    hide. Requests sent together count once; requests that wait for a free
    connection behind others count again. ``waves`` counts the requests that
    arrived while no other was in flight.
    """

    requests: int = 0
    requests_by_kind: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    rounds: int = 0
    waves: int = 0
    bytes_sent: int = 0
    answered_depth: int = 0
    #: ``(depth, kind, path)`` of every request in the order they arrived: which request made a chain longer.
    chain: list[tuple[int, str, str]] = field(default_factory=list)

    def snapshot(self) -> dict[str, Any]:
        """A plain copy: ``requests``, ``by_kind``, ``max_in_flight``, ``rounds``, ``waves``, ``bytes_sent``."""
        return {
            "requests": self.requests, "by_kind": dict(self.requests_by_kind), "max_in_flight": self.max_in_flight,
            "rounds": self.rounds, "waves": self.waves, "bytes_sent": self.bytes_sent,
        }  # fmt: skip


@dataclass(frozen=True)
class TlsFiles:
    """A server certificate (chain) and its private key, and the CA certificate that signed it: PEM files.

    ``ca`` defaults to ``certificate`` (a certificate that is its own CA).
    """

    certificate: str
    key: str
    ca: str = ""

    @property
    def ca_file(self) -> str:
        """The file a client trusts to reach the server."""
        return self.ca or self.certificate


def self_signed_certificate(directory: str | Path) -> TlsFiles:
    """Write a one-day P-256 CA, a certificate for 127.0.0.1 it signed, and that certificate's key into ``directory``.

    Needs ``cryptography``. The server's certificate is no CA itself: rustls
    (obstore) refuses a CA certificate used as a server's.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "zarr3_backend test CA")])
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)

    def signed(subject: x509.Name, public_key: Any, *extensions: tuple[Any, bool]) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(public_key)
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )  # fmt: skip
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(ca_key, hashes.SHA256())

    ca = signed(ca_name, ca_key.public_key(), (x509.BasicConstraints(ca=True, path_length=0), True))
    certificate = signed(
        name, key.public_key(), (x509.BasicConstraints(ca=False, path_length=None), True),
        (x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False),
    )  # fmt: skip
    files = TlsFiles(*(str(Path(directory) / file) for file in ("certificate.pem", "key.pem", "ca.pem")))
    Path(files.ca).write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    Path(files.certificate).write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    Path(files.key).write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ))  # fmt: skip
    return files


class LatencyS3Server(ThreadingHTTPServer):
    """The server: in-memory buckets, the delays to inject, and the counters.

    ``latency`` seconds pass before the first byte of every response;
    ``bandwidth`` (bytes per second, ``None`` = unlimited) caps how fast one
    connection sends a response body. Both may be changed between requests.
    ``tls``: serve https with that certificate (each connection's handshake
    runs on its own thread, as a request does).
    """

    daemon_threads = True
    request_queue_size = 512

    def __init__(
        self, latency: float = 0.0, bandwidth: float | None = None, *, tls: TlsFiles | None = None
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.latency = latency
        self.bandwidth = bandwidth
        self.buckets: dict[str, dict[str, _Object]] = {}
        #: A fault to inject into object GETs, for tests: ``"extra"`` bytes after every body, ``"whole"``
        #: objects (a 200) for Range requests, ``"short"`` or ``"shifted"`` 206 answers (one byte).
        self.misbehave: str | None = None
        #: For tests: every object stored from now on has this ETag and a fixed Last-Modified (1970),
        #: as some S3-compatible servers answer.
        self.constant_etag: str | None = None
        #: For tests: every object stored from now on has an ETag made of its key's name alone (constant across
        #: rewrites, different for every key) and a fixed Last-Modified (1970).
        self.etag_per_key = False
        #: For tests: every object request whose key starts with this prefix is refused with S3's 403
        #: ``AccessDenied``, as S3 answers a client whose policy does not allow it.
        self.denied_prefix: str | None = None
        #: For tests: every object stored from now on has the ETag nginx and other HTTP servers send, its
        #: Last-Modified second and its size in hex, with the clock stopped at this second (a same-size rewrite
        #: keeps its ETag and time).
        self.mtime_size_etags: int | None = None
        self.stats = RequestStats()
        self.ca_file = tls.ca_file if tls else None
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT)
        self._connections: set[Any] = set()  # open, after their handshake
        self._busy: set[Any] = set()  # serving a request
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls.certificate, tls.key)
            self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            try:
                request.do_handshake()
            except (ssl.SSLError, OSError):  # a client that gave up, or does not trust us: nothing to answer
                return
        with self._lock:
            self._connections.add(request)
        try:
            super().finish_request(request, client_address)
        finally:
            with self._lock:
                self._connections.discard(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(
            sys.exc_info()[1], OSError
        ):  # a connection that ended (as drop_connections ends them) is no error
            super().handle_error(request, client_address)

    def drop_connections(self) -> int:
        """End every kept-alive connection that is waiting for its next request; how many.

        Benchmarks call it before each timed run, so that every client starts
        without connections, as in a fresh process (tensorstore keeps its
        connections across contexts, in one pool for the whole process).
        """
        with self._lock:
            idle = self._connections - self._busy
        for connection in idle:
            try:
                socket.socket.shutdown(
                    connection, socket.SHUT_RDWR
                )  # the socket's own, not TLS's: its thread reads EOF
            except OSError:
                pass
        return len(idle)

    @property
    def endpoint_url(self) -> str:
        return f"{'https' if self.ca_file else 'http'}://127.0.0.1:{self.server_address[1]}"

    @property
    def storage_options(self) -> dict[str, Any]:
        """s3fs ``storage_options`` (dummy credentials: nothing is checked; over TLS, our certificate is trusted)."""
        client_kwargs: dict[str, Any] = {"endpoint_url": self.endpoint_url, "region_name": "us-east-1"}
        if self.ca_file:
            client_kwargs["verify"] = self.ca_file
        return {"key": "foo", "secret": "foo", "anon": False, "client_kwargs": client_kwargs}

    def tensorstore_kvstore(self, bucket: str, path: str = "") -> dict[str, Any]:
        """A tensorstore ``s3`` kvstore spec for ``bucket``/``path`` on this server.

        Over TLS tensorstore trusts the CA bundle named by ``TENSORSTORE_CA_BUNDLE`` (set it to :attr:`ca_file`).
        """
        return {
            "driver": "s3", "bucket": bucket, "path": path, "endpoint": self.endpoint_url,
            "aws_region": "us-east-1", "aws_credentials": {"type": "anonymous"},
        }  # fmt: skip

    def create_bucket(self, name: str) -> str:
        """Create ``name`` (if needed) and return its ``s3://`` URL."""
        with self._lock:
            self.buckets.setdefault(name, {})
        return f"s3://{name}"

    def put(self, bucket: str, key: str, data: bytes, *, checksum: str | None = None) -> None:
        """Store one object directly (not counted as a request); ``checksum``: keep one of :data:`CHECKSUMS`, as an upload with it would."""
        kept = None
        if checksum is not None:
            value = _checksum(checksum, data)
            if value is None:
                raise ValueError(f"cannot compute a {checksum} checksum here")
            kept = checksum, value
        with self._lock:
            self.buckets.setdefault(bucket, {})[key] = _new_object(data, kept)

    def upload_directory(self, directory: str | Path, bucket: str, prefix: str = "") -> int:
        """Copy every file below ``directory`` to ``bucket`` under ``prefix``; the number of files."""
        root = Path(directory)
        files = [p for p in sorted(root.rglob("*")) if p.is_file()]
        for path in files:
            self.put(bucket, prefix + path.relative_to(root).as_posix(), path.read_bytes())
        return len(files)

    def reset_stats(self) -> None:
        """Zero every counter (requests still in flight keep counting down correctly)."""
        with self._lock:
            in_flight = self.stats.in_flight
            self.stats = RequestStats(in_flight=in_flight, max_in_flight=in_flight, waves=int(in_flight > 0))

    def _begin(self, kind: str, path: str = "") -> tuple[RequestStats, int]:
        """Count a request that arrived; the counters it belongs to and its depth (1 + the deepest answered)."""
        with self._lock:
            stats = self.stats
            if stats.in_flight == 0:
                stats.waves += 1
            stats.requests += 1
            stats.requests_by_kind[kind] += 1
            stats.in_flight += 1
            stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
            depth = stats.answered_depth + 1
            stats.rounds = max(stats.rounds, depth)
            stats.chain.append((depth, kind, path))
            return stats, depth

    def _end(self, counted: RequestStats, sent: int, depth: int) -> None:
        """A request ended; one that began before :meth:`reset_stats` only leaves the in-flight count."""
        with self._lock:
            self.stats.in_flight -= 1
            if counted is self.stats:
                counted.bytes_sent += sent
                counted.answered_depth = max(counted.answered_depth, depth)


def _checksum(name: str, data: bytes) -> str | None:
    """The base64 value of checksum ``name`` of ``data``, as S3 sends it; ``None`` where it is not computed here."""
    compute = CHECKSUMS[name]
    return None if compute is None else base64.b64encode(compute(data)).decode()


def _new_object(data: bytes, checksum: tuple[str, str] | None = None) -> _Object:
    return _Object(data, f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"', time.time(), checksum)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = (
        True  # headers and body leave in separate writes: no delayed-ACK stall between them
    )
    server: LatencyS3Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_POST(self) -> None:
        self._serve("POST")

    # -- dispatch ------------------------------------------------------------
    def _serve(self, method: str) -> None:
        with self.server._lock:
            self.server._busy.add(self.connection)
        try:
            self._serve_request(method)
        finally:
            with self.server._lock:
                self.server._busy.discard(self.connection)

    def _serve_request(self, method: str) -> None:
        self._ended = True  # control requests are not counted
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        if url.path.startswith(CONTROL):
            self._control(url.path[len(CONTROL) :], query)
            return
        bucket, _, key = urllib.parse.unquote(url.path.lstrip("/")).partition("/")
        kind = "LIST" if method == "GET" and not key and "list-type" in query else method
        counted, depth = self.server._begin(kind, url.path)
        self._sent = 0
        self._ended = False
        self._counted = counted, depth
        started = time.monotonic()
        try:
            with self.server._slots:
                body = self._read_body()
                self._first_byte_at = started + self.server.latency
                self._dispatch(method, bucket, key, query, body)
        finally:
            self._answered()

    def _answered(self) -> None:
        """Count the request as answered (once): called just before its last bytes leave, so that a client
        that reads them and sends its next request at once never finds this one still counted in flight."""
        if not self._ended:
            self._ended = True
            counted, depth = self._counted
            self.server._end(counted, self._sent, depth)

    def _dispatch(
        self, method: str, bucket: str, key: str, query: dict[str, str], body: bytes | None
    ) -> None:
        if body is None:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "EntityTooLarge", "request body too large")
            return
        if not bucket:
            self._list_buckets()
            return
        objects = self.server.buckets.get(bucket)
        if not key:
            self._bucket_call(method, bucket, objects, query, body)
        elif objects is None:
            self._error(HTTPStatus.NOT_FOUND, "NoSuchBucket", f"no bucket {bucket!r}", method)
        elif self.server.denied_prefix is not None and key.startswith(self.server.denied_prefix):
            self._error(HTTPStatus.FORBIDDEN, "AccessDenied", "Access Denied", method)
        elif method in ("GET", "HEAD"):
            self._get(objects, key, method == "HEAD")
        elif method == "PUT":
            if "uploadId" in query or "partNumber" in query:
                self._error(
                    HTTPStatus.NOT_IMPLEMENTED, "NotImplemented", "multipart uploads are not supported"
                )
                return
            self._put(objects, key, body)
        elif method == "DELETE":
            with self.server._lock:
                objects.pop(key, None)
            self._reply(HTTPStatus.NO_CONTENT, b"")
        else:
            self._error(HTTPStatus.NOT_IMPLEMENTED, "NotImplemented", f"{method} on an object", method)

    def _bucket_call(
        self, method: str, bucket: str, objects: dict[str, _Object] | None, query: dict[str, str], body: bytes
    ) -> None:
        if method == "PUT":
            self.server.create_bucket(bucket)
            self._reply(HTTPStatus.OK, b"", {"Location": f"/{bucket}"})
        elif objects is None:
            self._error(HTTPStatus.NOT_FOUND, "NoSuchBucket", f"no bucket {bucket!r}", method)
        elif method == "HEAD":
            self._reply(HTTPStatus.OK, b"", {"x-amz-bucket-region": "us-east-1"}, head=True)
        elif method == "GET" and "location" in query:
            self._reply(
                HTTPStatus.OK,
                b'<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>',
                {"Content-Type": _XML},
            )
        elif method == "GET":
            self._list(bucket, objects, query)
        elif method == "POST" and "delete" in query:
            self._delete_objects(objects, body)
        elif method == "DELETE":
            if objects:
                self._error(HTTPStatus.CONFLICT, "BucketNotEmpty", f"bucket {bucket!r} is not empty")
                return
            with self.server._lock:
                self.server.buckets.pop(bucket, None)
            self._reply(HTTPStatus.NO_CONTENT, b"")
        else:
            self._error(HTTPStatus.NOT_IMPLEMENTED, "NotImplemented", f"{method} on a bucket", method)

    def _control(self, command: str, query: dict[str, str]) -> None:
        """Not S3 and not counted: ``stats``, ``chain``, ``reset``, ``drop`` and ``config?latency=&bandwidth=`` (see :class:`RemoteServer`)."""
        self._first_byte_at = 0.0
        self._sent = 0
        server = self.server
        if command == "reset":
            server.reset_stats()
        elif command == "drop":
            server.drop_connections()
        elif command == "config":
            server.latency = float(query.get("latency", server.latency))
            if "bandwidth" in query:
                server.bandwidth = float(query["bandwidth"]) or None
        elif command == "chain":
            self._reply(
                HTTPStatus.OK, json.dumps(server.stats.chain).encode(), {"Content-Type": "application/json"}
            )
            return
        elif command != "stats":
            self._reply(HTTPStatus.NOT_FOUND, b"")
            return
        self._reply(
            HTTPStatus.OK, json.dumps(server.stats.snapshot()).encode(), {"Content-Type": "application/json"}
        )

    # -- objects -------------------------------------------------------------
    def _get(self, objects: dict[str, _Object], key: str, head: bool) -> None:
        found = objects.get(key)
        if found is None:
            self._error(HTTPStatus.NOT_FOUND, "NoSuchKey", f"no key {key!r}", "HEAD" if head else "GET")
            return
        headers = {
            "ETag": found.etag, "Last-Modified": formatdate(found.modified, usegmt=True),
            "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream",
        }  # fmt: skip
        if_match, if_none = self.headers.get("If-Match"), self.headers.get("If-None-Match")
        if if_match is not None and if_match.strip() not in (found.etag, "*"):
            self._error(
                HTTPStatus.PRECONDITION_FAILED,
                "PreconditionFailed",
                "If-Match failed",
                "HEAD" if head else "GET",
            )
            return
        if if_none is not None and if_none.strip() in (found.etag, "*"):
            self._reply(HTTPStatus.NOT_MODIFIED, b"", headers, head=True)
            return
        data, size = found.data, len(found.data)
        match = _RANGE.match(self.headers.get("Range", "").strip())
        if match is None:
            if (
                found.checksum is not None
                and self.headers.get("x-amz-checksum-mode", "").upper() == "ENABLED"
            ):
                name, value = found.checksum
                headers.update({f"x-amz-checksum-{name}": value, "x-amz-checksum-type": "FULL_OBJECT"})
            self._reply(HTTPStatus.OK, data, headers, head=head)
            return
        first, last, suffix = match.groups()
        if first is None:
            start, stop = max(0, size - int(suffix)), size
        else:
            start, stop = int(first), min(size, int(last) + 1) if last else size
        if start >= size or stop <= start:
            self._error(
                HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE,
                "InvalidRange",
                "range not satisfiable",
                "HEAD" if head else "GET",
                {"Content-Range": f"bytes */{size}"},
            )
            return
        misbehave = self.server.misbehave
        if misbehave == "whole":
            self._reply(HTTPStatus.OK, data, headers, head=head)
            return
        if misbehave == "short" and stop - start > 1:
            stop -= 1
        elif misbehave == "shifted" and stop < size:
            start, stop = start + 1, stop + 1
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
        self._reply(HTTPStatus.PARTIAL_CONTENT, memoryview(data)[start:stop], headers, head=head)

    def _put(self, objects: dict[str, _Object], key: str, body: bytes) -> None:
        checksum = self._sent_checksum()
        if checksum is not None and _checksum(checksum[0], body) not in (None, checksum[1]):
            self._error(
                HTTPStatus.BAD_REQUEST,
                "BadDigest",
                f"The {checksum[0].upper()} you specified did not match the calculated checksum.",
            )
            return
        with self.server._lock:
            current = objects.get(key)
            if_match, if_none = self.headers.get("If-Match"), self.headers.get("If-None-Match")
            if (
                if_match is not None and (current is None or if_match.strip() not in (current.etag, "*"))
            ) or (if_none is not None and current is not None and if_none.strip() in (current.etag, "*")):
                failed = True
            else:
                failed = False
                objects[key] = stored = _new_object(body, checksum)
                if self.server.constant_etag is not None:  # a poor server: one ETag and time for everything
                    stored.etag, stored.modified = self.server.constant_etag, 0.0
                elif self.server.etag_per_key:  # a poor server: one ETag per name, whatever the content
                    stored.etag, stored.modified = f'"{hashlib.md5(key.encode()).hexdigest()}"', 0.0
                elif (second := self.server.mtime_size_etags) is not None:
                    stored.etag, stored.modified = f'"{second:x}-{len(body):x}"', float(second)
        if failed:
            self._error(
                HTTPStatus.PRECONDITION_FAILED, "PreconditionFailed", f"precondition failed for {key!r}"
            )
        else:
            self._reply(HTTPStatus.OK, b"", {"ETag": stored.etag})

    def _sent_checksum(self) -> tuple[str, str] | None:
        """The checksum an upload came with, ``(name, base64 value)``: a header, or an ``aws-chunked`` trailer."""
        for name in CHECKSUMS:
            value = self.headers.get(f"x-amz-checksum-{name}") or self._trailers.get(f"x-amz-checksum-{name}")
            if value:
                return name, value.strip()
        return None

    def _delete_objects(self, objects: dict[str, _Object], body: bytes) -> None:
        keys = [e.text or "" for e in ElementTree.fromstring(body).iter() if e.tag.endswith("Key")]
        with self.server._lock:
            for key in keys:
                objects.pop(key, None)
        deleted = "".join(f"<Deleted><Key>{escape(k)}</Key></Deleted>" for k in keys)
        self._xml(f'<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{deleted}</DeleteResult>')

    # -- listing -------------------------------------------------------------
    def _list_buckets(self) -> None:
        names = "".join(f"<Bucket><Name>{escape(n)}</Name></Bucket>" for n in sorted(self.server.buckets))
        self._xml(f"<ListAllMyBucketsResult><Buckets>{names}</Buckets></ListAllMyBucketsResult>")

    def _list(self, bucket: str, objects: dict[str, _Object], query: dict[str, str]) -> None:
        prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
        limit = max(1, min(1000, int(query.get("max-keys", "1000") or 1000)))
        after = query.get("continuation-token") or query.get("start-after") or ""
        encode = (
            (lambda s: urllib.parse.quote(s, safe="/"))
            if query.get("encoding-type") == "url"
            else (lambda s: s)
        )
        with self.server._lock:
            keys = sorted(k for k in objects if k.startswith(prefix) and k > after)
            entries: list[tuple[str, _Object | None]] = []
            seen_prefixes: set[str] = set()
            for key in keys:
                cut = key.find(delimiter, len(prefix)) if delimiter else -1
                if cut >= 0:
                    common = key[: cut + len(delimiter)]
                    if common in seen_prefixes or (after and common <= after):
                        continue
                    seen_prefixes.add(common)
                    entries.append((common, None))
                else:
                    entries.append((key, objects[key]))
                if len(entries) > limit:
                    break
        truncated = len(entries) > limit
        entries = entries[:limit]
        parts = [
            f"<Name>{escape(bucket)}</Name><Prefix>{escape(encode(prefix))}</Prefix><KeyCount>{len(entries)}</KeyCount>",
            f"<MaxKeys>{limit}</MaxKeys><IsTruncated>{str(truncated).lower()}</IsTruncated>",
        ]
        if delimiter:
            parts.append(f"<Delimiter>{escape(encode(delimiter))}</Delimiter>")
        if query.get("encoding-type") == "url":
            parts.append("<EncodingType>url</EncodingType>")
        if truncated:
            last = entries[-1][0]
            # the last common prefix resumes after all keys below it
            token = last + "\U0010ffff" if entries[-1][1] is None else last
            parts.append(f"<NextContinuationToken>{escape(token)}</NextContinuationToken>")
        for name, obj in entries:
            if obj is None:
                parts.append(f"<CommonPrefixes><Prefix>{escape(encode(name))}</Prefix></CommonPrefixes>")
            else:
                modified = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(obj.modified))
                parts.append(
                    f"<Contents><Key>{escape(encode(name))}</Key><LastModified>{modified}</LastModified>"
                    f"<ETag>{escape(obj.etag)}</ETag><Size>{len(obj.data)}</Size>"
                    "<StorageClass>STANDARD</StorageClass></Contents>"
                )
        self._xml(
            f'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{"".join(parts)}</ListBucketResult>'
        )

    # -- bodies and responses --------------------------------------------------
    def _read_body(self) -> bytes | None:
        """The request body, de-chunked (HTTP chunked and ``aws-chunked``, whose trailers go to ``_trailers``); ``None`` if too large."""
        self._trailers: dict[str, str] = {}
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self._read_http_chunked()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self.close_connection = True
                return None
            raw = self.rfile.read(length)
        if raw is not None and "aws-chunked" in self.headers.get("Content-Encoding", ""):
            raw, self._trailers = _aws_unchunk(raw)
        return raw

    def _read_http_chunked(self) -> bytes | None:
        pieces: list[bytes] = []
        total = 0
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(pieces)
            total += size
            if total > MAX_BODY_BYTES:
                self.close_connection = True
                return None
            pieces.append(self.rfile.read(size))
            self.rfile.readline()

    def _xml(self, text: str) -> None:
        self._reply(
            HTTPStatus.OK, ('<?xml version="1.0" encoding="UTF-8"?>' + text).encode(), {"Content-Type": _XML}
        )

    def _error(
        self,
        status: HTTPStatus,
        code: str,
        message: str,
        method: str = "",
        extra: dict[str, str] | None = None,
    ) -> None:
        body = f"<Error><Code>{code}</Code><Message>{escape(message)}</Message></Error>".encode()
        self._reply(status, body, {"Content-Type": _XML, **(extra or {})}, head=method == "HEAD")

    def _reply(
        self,
        status: HTTPStatus,
        body: bytes | memoryview,
        headers: dict[str, str] | None = None,
        head: bool = False,
    ) -> None:
        """Wait out the latency, send headers, then the body at no more than the bandwidth cap."""
        delay = self._first_byte_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header(
            "x-amz-request-id",
            base64.b16encode(hashlib.md5(self.path.encode(), usedforsecurity=False).digest()[:8]).decode(),
        )
        if status not in (HTTPStatus.NO_CONTENT, HTTPStatus.NOT_MODIFIED):
            self.send_header("Content-Length", str(len(body)))
        if head or not body:
            self._answered()
            self.end_headers()
            return
        self.end_headers()
        view, bandwidth, start = memoryview(body), self.server.bandwidth, time.monotonic()
        for offset in range(0, len(view), _PIECE):
            piece = view[offset : offset + _PIECE]
            if bandwidth:  # a piece leaves no earlier than the cap allows for everything up to its end
                ahead = start + (self._sent + len(piece)) / bandwidth - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
            self._sent += len(piece)
            if offset + _PIECE >= len(view):
                self._answered()
            self.wfile.write(piece)
        if self.server.misbehave == "extra":
            self.wfile.write(b"0123456789" * 10)  # bytes after the body: part of no response


def _aws_unchunk(raw: bytes) -> tuple[bytes, dict[str, str]]:
    """The payload and trailers of an ``aws-chunked`` body.

    ``<hex size>[;chunk-signature=...]\\r\\n<data>\\r\\n`` ... ``0\\r\\n``, then
    ``name:value\\r\\n`` trailer lines (names in lower case).
    """
    out, position = [], 0
    while position < len(raw):
        line_end = raw.index(b"\r\n", position)
        size = int(raw[position:line_end].split(b";")[0], 16)
        position = line_end + 2
        if size == 0:
            break
        out.append(raw[position : position + size])
        position += size + 2
    trailers = {}
    for line in raw[position:].decode("latin-1").split("\r\n"):
        name, colon, value = line.partition(":")
        if colon:
            trailers[name.strip().lower()] = value.strip()
    return b"".join(out), trailers


@contextmanager
def latency_s3_server(
    latency: float = 0.0, bandwidth: float | None = None, *, tls: TlsFiles | None = None
) -> Iterator[LatencyS3Server]:
    """Run a :class:`LatencyS3Server` on 127.0.0.1 (free port) in a daemon thread until the block ends.

    ``latency`` is the first-byte delay of every request in seconds;
    ``bandwidth`` the per-connection cap in bytes per second (``100e6`` is
    close to one S3 connection); ``tls``: serve https.
    """
    server = LatencyS3Server(latency, bandwidth, tls=tls)
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="latency-s3-server", daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class RemoteServer:
    """A :class:`LatencyS3Server` running in another process, driven over its control requests.

    Benchmarks use it so that the server's threads do not compete with the
    client for this process's GIL. ``stats()`` returns
    :meth:`RequestStats.snapshot`.
    """

    def __init__(self, endpoint_url: str, ca_file: str | None = None) -> None:
        self.endpoint_url = endpoint_url
        self.ca_file = ca_file

    storage_options = LatencyS3Server.storage_options
    tensorstore_kvstore = LatencyS3Server.tensorstore_kvstore

    def _call(self, command: str, **query: float) -> Any:
        import http.client

        host, port = urllib.parse.urlsplit(self.endpoint_url).netloc.split(":")
        connection = (
            http.client.HTTPSConnection(
                host, int(port), timeout=60, context=ssl.create_default_context(cafile=self.ca_file)
            )
            if self.ca_file
            else http.client.HTTPConnection(host, int(port), timeout=60)
        )
        try:
            connection.request(
                "GET", CONTROL + command + ("?" + urllib.parse.urlencode(query) if query else "")
            )
            return json.loads(connection.getresponse().read())
        finally:
            connection.close()

    def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("stats")
        return result

    def chain(self) -> list[tuple[int, str, str]]:
        """:attr:`RequestStats.chain`: ``(depth, kind, path)`` of every request since the last reset."""
        return [(depth, kind, path) for depth, kind, path in self._call("chain")]

    def reset_stats(self) -> None:
        self._call("reset")

    def drop_connections(self) -> None:
        """:meth:`LatencyS3Server.drop_connections`."""
        self._call("drop")

    def configure(self, latency: float, bandwidth: float | None = None) -> None:
        """Set the first-byte latency (s) and per-connection bandwidth (bytes/s, ``None`` = unlimited)."""
        self._call("config", latency=latency, bandwidth=bandwidth or 0)


@contextmanager
def latency_s3_process(
    latency: float = 0.0, bandwidth: float | None = None, *, tls: bool = False
) -> Iterator[RemoteServer]:
    """Run the server in a child process (``python -m tests.servers.latency_s3``) until the block ends.

    Buckets are created with S3 requests (``PUT /bucket``), e.g. by s3fs's ``mkdir``.
    ``tls``: serve https with a fresh self-signed certificate (:attr:`RemoteServer.ca_file`).
    """
    command = [sys.executable, "-m", "tests.servers.latency_s3", "--latency", str(latency)]
    if bandwidth:
        command += ["--bandwidth", str(bandwidth)]
    package_parent = str(Path(__file__).resolve().parents[2])  # the child imports this very package
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory() as directory:
        files = self_signed_certificate(directory) if tls else None
        if files is not None:
            command += ["--tls-certificate", files.certificate, "--tls-key", files.key]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert child.stdout is not None
            url = child.stdout.readline().strip()
            if not url:
                raise RuntimeError(f"the latency S3 server did not start: {' '.join(command)}")
            yield RemoteServer(url, files.ca_file if files else None)
        finally:
            child.terminate()
            child.wait(timeout=30)


def _main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="S3-compatible loopback server with latency (prints its URL)"
    )
    parser.add_argument("--latency", type=float, default=0.0, help="first-byte latency per request, seconds")
    parser.add_argument("--bandwidth", type=float, default=None, help="per-connection cap, bytes per second")
    parser.add_argument("--tls-certificate", help="serve https with this PEM certificate (and --tls-key)")
    parser.add_argument("--tls-key", help="the certificate's PEM private key")
    args = parser.parse_args(argv)
    tls = TlsFiles(args.tls_certificate, args.tls_key) if args.tls_certificate else None
    server = LatencyS3Server(args.latency, args.bandwidth, tls=tls)
    print(server.endpoint_url, flush=True)
    server.serve_forever(0.05)


if __name__ == "__main__":
    _main()
