"""Generations of objects read from object stores, and the endpoints whose ETags are not trusted.

A generation built from an answer (`object_generation()`) holds the
object's ETag and version together with its size and last-modified time
where the server sent them, so a rewrite that changes any of them is seen.

Some servers send one ETag for different content (a constant, or a hash of
the name). Each endpoint's ETags are watched: the same ETag seen with two
sizes, or on two keys (unless it is a content digest naming objects of one
size, as S3's MD5 ETags of identical objects are), proves it; from then on
that endpoint's answers carry no ETag generation (a generation of ``None``
is "unknown": nothing is cached on it), and this is logged once at debug
level on the ``zarr3_backend.store`` logger. A version id (S3 versioning)
is trusted either way: it is the one token that proves an object unchanged
(a `UniqueGeneration`); anything kept under an ETag generation is checked
against the object again when it is used (see ``codecs/sharding.py``).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Hashable

from ..core.buffers import UniqueGeneration

logger = logging.getLogger("zarr3_backend.store")

#: ETags remembered per endpoint to compare later answers with (forgotten, oldest first, beyond this).
REMEMBERED_ETAGS = 1 << 16
_DIGEST = re.compile(r'^(W/)?"?[0-9a-fA-F]{32}(-\d+)?"?$')  # S3's MD5 (or multipart MD5-of-MD5s) ETags


class EtagWatch:
    """The ETags an endpoint answered with, by key and size, and whether it still earns trust."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.trusted = True
        self._seen: dict[str, tuple[str, int | None]] = {}
        self._lock = threading.Lock()

    def check(self, key: str, etag: str, size: int | None) -> bool:
        """Record that ``key`` (``size`` bytes) came with ``etag``; ``False`` once the endpoint is distrusted."""
        with self._lock:
            if not self.trusted:
                return False
            before = self._seen.get(etag)
            if before is None:
                if len(self._seen) >= REMEMBERED_ETAGS:
                    del self._seen[next(iter(self._seen))]
                self._seen[etag] = (key, size)
                return True
            other_key, other_size = before
            if other_size != size and None not in (size, other_size):
                reason = f"sizes {other_size} and {size}"
            elif other_key != key and (other_size != size or not _DIGEST.match(etag)):
                reason = f"keys {other_key!r} and {key!r}"
            else:
                return True
            self.trusted = False
            self._seen.clear()
        logger.debug(
            "%s answered with ETag %s for %s: its ETags do not identify content; "
            "generations there no longer use ETags (shard indexes are read afresh each time)",
            self.endpoint,
            etag,
            reason,
        )
        return False


_watches: dict[str, EtagWatch] = {}
_watches_lock = threading.Lock()


def watch(endpoint: str) -> EtagWatch:
    """The process-wide `EtagWatch` of ``endpoint`` (a scheme, host and bucket, or a URL root)."""
    with _watches_lock:
        found = _watches.get(endpoint)
        if found is None:
            found = _watches[endpoint] = EtagWatch(endpoint)
        return found


def object_generation(
    endpoint: str,
    key: str,
    *,
    etag: str | None,
    version: str | None = None,
    size: int | None = None,
    modified: object = None,
) -> Hashable | None:
    """The generation of an object read from ``endpoint``, or ``None`` when the answer cannot identify it.

    ``size`` is the object's whole size (not the range read) and ``modified``
    its last-modified time, each ``None`` where the server did not send it.

    >>> object_generation("s3://doc-a", "k", etag='"abc"', size=3) == object_generation("s3://doc-a", "k", etag='"abc"', size=3)
    True
    >>> object_generation("s3://doc-a", "j", etag='"abc"', size=4) is None  # one ETag, two sizes
    True
    """
    if etag is not None and not watch(endpoint).check(key, etag, size):
        etag = None
    token = ("object", etag, version, size, None if modified is None else str(modified))
    if version is not None and version != "null":  # "null": the one version of an unversioned write, reused
        return UniqueGeneration(token)
    return None if etag is None else token
