"""GetObject sent straight on an s3fs client's own connection pool, without botocore's per-request work.

botocore spends close to a millisecond of CPU on every request: the user
agent is rebuilt twice, endpoint rules are evaluated, parameters validated,
a dozen event hooks run, and dateutil parses ``Last-Modified``. All of it
runs on fsspec's one event-loop thread, so an open that sends 200 GETs was
bound by that CPU, not by latency. :class:`DirectGets` sends the same GET
to the URL botocore builds for the bucket, signed with SigV4 from the
client's own credentials, for about a sixth of the CPU: on connections of
our own (:mod:`.http_gets`) with the client's TLS context, timeouts and pool
size, or, behind a proxy, on the client's own aiohttp session.

It keeps only the answers whose meaning is plain: 200 or 206 with exactly
the bytes promised (checked against a full object's ``x-amz-checksum-*``
as botocore checks it), and 404 ``NoSuchKey``. Any other answer or failure
raises :class:`Unhandled`; the caller sends the request again through
botocore, which retries or raises exactly as before. An answer saying the
request was wrong for the bucket (a redirect, or a 4xx other than 404 and
416) also turns the direct path off for that bucket, so a mistake costs
one request. Clients it cannot speak for (SigV2, S3 Express, SSE-C keys,
requester pays, other signers) get ``None`` and stay on botocore, as does
every client when ``ZARR3_BACKEND_S3_DIRECT=0``.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import hmac
import inspect
import os
import re
import ssl
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlsplit
from weakref import WeakKeyDictionary, ref

import crc32c
from fsspec import AbstractFileSystem

from ..errors import StoreError
from .http_gets import HttpPool

__all__ = ["DirectGets", "Unhandled", "direct_gets", "sigv4_headers"]

_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
#: Names that address a bucket the plain way (not an ARN, not an S3 Express directory bucket).
_PLAIN_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_PROBE_KEY = "zarr3-direct-probe"
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)$")
#: Full-object checksums S3 may send, in botocore's order of preference, with how to compute each.
_CHECKSUMS: dict[str, Callable[[bytes | bytearray], bytes]] = {
    "crc32c": lambda data: crc32c.crc32c(data).to_bytes(4, "big"),
    "crc32": lambda data: zlib.crc32(data).to_bytes(4, "big"),
    "sha1": lambda data: hashlib.sha1(data).digest(),
    "sha256": lambda data: hashlib.sha256(data).digest(),
    "sha512": lambda data: hashlib.sha512(data).digest(),
}
#: A whole object at least this large has its checksum computed on a thread of the event loop's executor
#: (CRC32 of a 29 MB shard: 8 ms, in which the loop would receive and hand over nothing; the GIL is released).
CHECKSUM_ON_THREAD_BYTES = 1 << 20
#: What each client's GETs take; a value refers to its client only weakly, or no client would ever be freed.
_BY_CLIENT: WeakKeyDictionary[Any, DirectGets | None] = WeakKeyDictionary()


@dataclass(frozen=True)
class _Route:
    prefix: str  # the URL of a key in the bucket, up to the key
    proxy: str | None
    proxy_headers: Mapping[str, str] | None
    pool: HttpPool | None  # our own connections to the bucket's origin; None: the session's (aiohttp)


class Unhandled(Exception):
    """An answer (or failure) the direct path leaves to botocore."""


def sigv4_headers(
    url: str, headers: Mapping[str, str], *, access_key: str, secret_key: str, token: str | None, region: str,
    when: datetime.datetime,
) -> dict[str, str]:
    """``headers`` plus the SigV4 headers of a body-less S3 GET of ``url`` (path and query encoded; one parameter at most).

    The same signature botocore's ``S3SigV4Auth`` computes for the same request at the same time.
    """
    parts = urlsplit(url)
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    signed = {name.lower(): str(value).strip() for name, value in headers.items()}
    signed.update({"host": parts.netloc, "x-amz-date": stamp, "x-amz-content-sha256": _EMPTY_SHA256})
    if token:
        signed["x-amz-security-token"] = token
    names = sorted(signed)
    canonical = "\n".join([  # the query is one parameter at most (versionId): already in canonical order
        "GET", parts.path or "/", parts.query, "".join(f"{name}:{signed[name]}\n" for name in names), ";".join(names),
        _EMPTY_SHA256,
    ])  # fmt: skip
    scope = f"{stamp[:8]}/{region}/s3/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    signature = hmac.new(_signing_key(secret_key, stamp[:8], region), to_sign.encode(), hashlib.sha256).hexdigest()
    signed["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return signed


@lru_cache(maxsize=16)
def _signing_key(secret_key: str, day: str, region: str) -> bytes:
    key = f"AWS4{secret_key}".encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


class DirectGets:
    """GetObject requests for one botocore S3 client; see the module docstring."""

    def __init__(self, client: object, credentials: object | None, region: str, http: object) -> None:
        from yarl import URL  # aiohttp's URL type (aiobotocore's dependency)

        self._client = ref(client)  # the key of this value in _BY_CLIENT
        self._credentials: Any = credentials  # None: an unsigned (anonymous) client
        self._region = region
        self._http: Any = http  # aiobotocore's session: one aiohttp session per proxy, with the client's TLS and timeouts
        self._url_type = URL
        self._checksums = getattr(client, "meta").config.response_checksum_validation == "when_supported"
        self._routes: dict[str, _Route | None] = {}  # bucket -> where its GETs go; None: botocore only
        self._pools: dict[str, HttpPool] = {}  # origin -> our connections to it
        self._warm = _warm_connections()

    async def get(
        self, bucket: str, key: str, version: str | None, byte_range: str | None
    ) -> tuple[bytes | bytearray, str | None]:
        """The bytes of ``bucket/key`` (``byte_range``: an HTTP ``Range`` value) and the object's ETag.

        Raises ``FileNotFoundError`` for a missing key and :class:`Unhandled` for anything botocore must answer.
        """
        route = await self._route(bucket)
        url = route.prefix + quote(key, safe="/~") + (f"?versionId={quote(version, safe='-_.~')}" if version else "")
        headers = {"accept-encoding": "identity"}
        if byte_range is not None:
            headers["range"] = byte_range
        elif self._checksums:
            headers["x-amz-checksum-mode"] = "ENABLED"
        if self._credentials is not None:
            frozen = self._credentials.get_frozen_credentials()
            frozen = await frozen if inspect.isawaitable(frozen) else frozen
            now = datetime.datetime.now(datetime.timezone.utc)
            headers = sigv4_headers(
                url, headers, access_key=frozen.access_key, secret_key=frozen.secret_key, token=frozen.token,
                region=self._region, when=now,
            )
        try:
            if route.pool is not None:
                parts = urlsplit(url)
                target = parts.path + (f"?{parts.query}" if parts.query else "")
                answer = await route.pool.get(target, {"host": parts.netloc, **headers})
                status, answer_headers, body = answer.status, answer.headers, answer.body
            else:
                session = await self._http._get_session(route.proxy)
                async with session.get(
                    self._url_type(url, encoded=True), headers=headers, proxy=route.proxy,
                    proxy_headers=route.proxy_headers,
                ) as response:
                    body = await response.read()
                    status, answer_headers = response.status, response.headers
        except Exception as exc:  # connection trouble of any kind: botocore's retries decide
            raise Unhandled(f"{type(exc).__name__}: {exc}") from exc
        value = self._answer(bucket, f"{bucket}/{key}", url, byte_range, status=status, headers=answer_headers, body=body)
        if byte_range is None and self._checksums:
            await _check_checksum(url, answer_headers, body)
        return value

    def _answer(
        self, bucket: str, path: str, url: str, byte_range: str | None, *, status: int, headers: Mapping[str, str],
        body: bytes | bytearray,
    ) -> tuple[bytes | bytearray, str | None]:
        if status == 200 and byte_range is None:
            _check_length(url, headers, body)
            return body, headers.get("etag")
        if status == 206 and byte_range is not None:
            _check_range(url, byte_range, headers, body)
            return body, headers.get("etag")
        if status == 404 and b"<Code>NoSuchKey</Code>" in body:
            raise FileNotFoundError(path)
        if not (status in (404, 416, 429) or status >= 500):  # the request itself was wrong for this bucket
            self._routes[bucket] = None
        raise Unhandled(f"HTTP {status} for {url}")

    async def _route(self, bucket: str) -> _Route:
        if bucket not in self._routes:
            self._routes[bucket] = await self._find_route(bucket)
        route = self._routes[bucket]
        if route is None:
            raise Unhandled(f"bucket {bucket!r} is read through botocore")
        return route

    async def _find_route(self, bucket: str) -> _Route | None:
        """Where botocore would send a GetObject of this bucket: the URL up to the key, and the proxy (no request)."""
        if not _PLAIN_BUCKET.fullmatch(bucket) or bucket.endswith("--x-s3"):
            return None
        try:
            client: Any = self._client()  # botocore's objects are untyped
            if client is None:
                return None
            url = await client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": _PROBE_KEY})
            base = url.split("?", 1)[0]
            if not base.endswith("/" + _PROBE_KEY):
                return None
            proxies = self._http._proxy_config
            proxy = proxies.proxy_url_for(base)
            if proxy:
                return _Route(base.removesuffix(_PROBE_KEY), proxy, proxies.proxy_headers_for(base), None)
            return _Route(base.removesuffix(_PROBE_KEY), None, None, await self._pool(base))
        except Exception:  # whatever botocore objects to, it answers itself
            return None

    async def _pool(self, url: str) -> HttpPool | None:
        """Our connections to ``url``'s origin, with the session's TLS context, timeouts and pool size.

        ``None`` where the session was set up in ways they would not honour
        (aiohttp connector arguments beyond the keep-alive time; socket
        options aiobotocore ignores too) or with ``ZARR3_BACKEND_S3_CONNECTIONS=aiohttp``.
        """
        if os.environ.get("ZARR3_BACKEND_S3_CONNECTIONS", "own") == "aiohttp":
            return None
        http = self._http
        if set(http._connector_args or ()) - {"keepalive_timeout"}:
            return None
        session = await http._get_session(None)
        context = getattr(session.connector, "_ssl", None)
        parts = urlsplit(url)
        secure = parts.scheme == "https"
        if parts.hostname is None or (secure and not isinstance(context, ssl.SSLContext)):
            return None
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._pools:  # settled without an await in between: one pool per origin
            timeout = session.timeout
            self._pools[origin] = pool = HttpPool(
                parts.hostname, parts.port or (443 if secure else 80), context if secure else None,
                limit=http._max_pool_connections, connect_timeout=timeout.sock_connect, read_timeout=timeout.sock_read,
            )  # fmt: skip
            http._exit_stack.callback(pool.close)  # closed with the client's session
            pool.warm(self._warm)  # alongside the client's first GET: its next wave needs them
        return self._pools[origin]


async def direct_gets(filesystem: AbstractFileSystem, bucket: str) -> DirectGets | None:
    """The direct path of an s3fs ``filesystem`` for ``bucket``'s client; ``None`` where botocore must send.

    ``ZARR3_BACKEND_S3_DIRECT=0`` sends every request through botocore.
    """
    if os.environ.get("ZARR3_BACKEND_S3_DIRECT", "1") == "0":
        return None
    fs: Any = filesystem  # s3fs, untyped
    if getattr(fs, "req_kw", None) or getattr(fs, "s3_additional_kwargs", None):
        return None  # requester pays, SSE-C keys and other per-request parameters are botocore's
    await fs.set_session()
    client = await fs.get_s3(bucket)
    if client not in _BY_CLIENT:
        _BY_CLIENT[client] = _for_client(client)
    return _BY_CLIENT[client]


def _warm_connections() -> int:
    """``ZARR3_BACKEND_S3_WARM_CONNECTIONS``: connections a client opens alongside its first GET (default 8, 0: none)."""
    value = os.environ.get("ZARR3_BACKEND_S3_WARM_CONNECTIONS", "8")
    try:
        return max(0, int(value))
    except ValueError:
        raise ValueError(f"ZARR3_BACKEND_S3_WARM_CONNECTIONS must be a whole number, not {value!r}") from None


def _for_client(client: Any) -> DirectGets | None:
    from botocore import UNSIGNED  # type: ignore[import-untyped]  # botocore ships no type information

    http = getattr(getattr(client, "_endpoint", None), "http_session", None)
    signer = getattr(client, "_request_signer", None)
    region = getattr(signer, "_region_name", None)
    if not (callable(getattr(http, "_get_session", None)) and hasattr(http, "_proxy_config")):
        return None  # not aiobotocore's aiohttp session as we know it
    if signer is None or not isinstance(region, str) or not region:
        return None
    version = client.meta.config.signature_version
    if version is UNSIGNED:
        return DirectGets(client, None, region, http)
    credentials = getattr(signer, "_credentials", None)
    if version not in (None, "s3v4", "v4") or credentials is None or getattr(signer, "_signing_name", None) != "s3":
        return None
    return DirectGets(client, credentials, region, http)


def _check_length(url: str, headers: Mapping[str, str], body: bytes | bytearray) -> None:
    length = headers.get("content-length")
    if length is not None and int(length) != len(body):
        raise StoreError(f"{url}: {len(body)} bytes arrived, Content-Length promised {length}")


def _check_range(url: str, byte_range: str, headers: Mapping[str, str], body: bytes | bytearray) -> None:
    """A 206's ``Content-Range`` covers the requested range and the body fills it."""
    found = _CONTENT_RANGE.match(headers.get("content-range", ""))
    if found is None:
        raise StoreError(f"{url}: a 206 answer to {byte_range!r} without a valid Content-Range")
    first, last, total = int(found[1]), int(found[2]), found[3]
    wanted_first, _, wanted_last = byte_range.removeprefix("bytes=").partition("-")
    if wanted_first:
        ok = first == int(wanted_first) and (not wanted_last or last <= int(wanted_last))
    else:  # a suffix: the last N bytes
        ok = total != "*" and last == int(total) - 1 and last - first + 1 <= int(wanted_last)
    if not ok or len(body) != last - first + 1:
        raise StoreError(
            f"{url}: asked for {byte_range!r}, got Content-Range {headers['content-range']!r} and {len(body)} bytes"
        )


async def _check_checksum(url: str, headers: Mapping[str, str], body: bytes | bytearray) -> None:
    """Check the first whole-object checksum S3 sent that we can compute (composite ones, ``...-N``, cannot be).

    A body of :data:`CHECKSUM_ON_THREAD_BYTES` or more is checked on a thread, while the loop goes on.
    """
    for name, compute in _CHECKSUMS.items():
        sent = headers.get(f"x-amz-checksum-{name}")
        if sent is None or "-" in sent:
            continue
        if len(body) >= CHECKSUM_ON_THREAD_BYTES:
            digest = await asyncio.get_running_loop().run_in_executor(None, compute, body)
        else:
            digest = compute(body)
        actual = base64.b64encode(digest).decode()
        if actual != sent:
            raise StoreError(f"{url}: x-amz-checksum-{name} is {sent}, but the body's is {actual}")
        return
