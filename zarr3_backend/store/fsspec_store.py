"""A store over any fsspec file system (memory, s3, http(s), zip, gcs, ...).

Keys are paths below ``root`` in the file system's own terms (for s3:
``"bucket/prefix"``). On asynchronous file systems (s3fs, http) a
`get_many_versioned` call is one concurrent batch on fsspec's event
loop (at most `io_concurrency` requests at once); a whole-value read is one plain GET. Ranges keep Python slice
semantics everywhere: suffixes go out as ``bytes=-n``, ranges past the end
read as ``b""`` (an HTTP 416 is not an error here), and ranges that need the
size (a negative ``end``) cost one extra HEAD.

A ranged read returns exactly its range or raises `StoreError`: on
S3 the answer's ``Content-Range`` must name the bytes asked for (from a 200
with the whole object, the range is sliced out), and everywhere a body longer than the
range, or shorter without the value ending there, is refused. (fsspec's
http file system does not show the headers: an answer shifted by a few
bytes but of the right length cannot be seen there; obstore's http store
checks it.)

`get_many_versioned` returns each value with its
generation: on S3 the ETag of the very GET that read the bytes (no extra
request); on synchronous file systems (memory, zip) the file's ``info``
taken before and after the read; other asynchronous file systems (http,
gcs, ...) report ``None`` (unknown).

>>> import fsspec
>>> store = FsspecStore(fsspec.filesystem("memory"), "/doc-example")
>>> store.set("zarr.json", b"{}")
>>> store.get("zarr.json", ByteRange.suffix(1))
b'}'
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from fsspec import AbstractFileSystem
from fsspec.asyn import sync

from ..errors import StoreError
from ..runtime import io_concurrency
from ..runtime.batches import capture, gather
from .base import (
    ByteRange,
    Generation,
    Request,
    Store,
    Value,
    Versioned,
    is_temporary,
    join_value,
    validate_key,
    validate_prefix,
)
from .credentials import store_failure
from .fsspec_s3 import is_s3, plain_bucket, s3_generation, s3_with_retries, single_get_kwargs
from .ranged_reads import (
    check_content_range,
    check_length,
    expected_length,
    http_range,
    is_empty,
    is_unsatisfiable,
    needs_size,
    resolve_range,
    span_length,
)

T = TypeVar("T")

_MISSING_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "404", "NotFound"})
#: ``info`` fields that change when a value is rewritten, whatever the file system calls them.
_VERSION_FIELDS = (
    "ETag", "etag", "generation", "VersionId", "version_id", "mtime", "modified", "created",
    "LastModified", "last_modified", "ino", "CRC", "date_time",
)  # fmt: skip


def _is_missing(exc: BaseException) -> bool:
    # KeyError: fsspec's zip filesystem before 2026 lets zipfile's "no item named ..." through
    if isinstance(exc, (FileNotFoundError, NotADirectoryError, IsADirectoryError, KeyError)):
        return True
    response = getattr(exc, "response", None)  # a raw botocore ClientError
    return isinstance(response, dict) and response.get("Error", {}).get("Code") in _MISSING_CODES


class FsspecStore(Store):
    """Keys under ``root`` on the fsspec file system ``fs``.

    Parameters
    ----------
    fs : fsspec.AbstractFileSystem
        Any fsspec file system; asynchronous ones get concurrent batches.
    root : str
        Root path in ``fs``'s terms (protocol optional), e.g. ``"bucket/data.zarr"``.
    read_only : bool
        Refuse writes with `ReadOnlyError`.
    io_concurrency : int, optional
        Requests kept in flight at once on an asynchronous file system
        (default: ``ZARR3_BACKEND_IO_CONCURRENCY``, 64). Synchronous ones
        (memory, zip) are read one request at a time.

    Examples
    --------
    >>> import fsspec
    >>> FsspecStore(fsspec.filesystem("memory"), "/x").url
    'memory:///x'
    """

    def __init__(
        self, fs: AbstractFileSystem, root: str, read_only: bool = False, io_concurrency: int | None = None
    ) -> None:
        self.fs = fs
        self.root = fs._strip_protocol(root).rstrip("/")
        self.read_only = read_only
        self._io_concurrency = io_concurrency
        self._full_kwargs = single_get_kwargs(fs)
        self._s3 = is_s3(fs)
        self._bucket = (
            plain_bucket(fs, self.root) if self._s3 else None
        )  # the bucket of every key, where plain

    @property
    def process_local(self) -> bool:
        """Whether the file system is fsspec's in-memory one (``memory://``), private to this process."""
        protocol = self.fs.protocol
        return "memory" in ((protocol,) if isinstance(protocol, str) else tuple(protocol))

    @property
    def io_concurrency(self) -> int:
        """Requests in flight at once: the setting on asynchronous file systems, 1 on synchronous ones."""
        if not self.fs.async_impl:
            return 1
        return self._io_concurrency or io_concurrency()

    @property
    def versioned_reads(self) -> bool:
        """Generations are known on S3 (ETags) and on synchronous file systems (``info``), not on http or gcs."""
        return self._s3 or not self.fs.async_impl

    @property
    def url(self) -> str:
        """The root as a URL with protocol; archives add ``::<archive url>`` (``zip://a::file:///x.zip``)."""
        url: str = self.fs.unstrip_protocol(self.root)
        archive = self.fs.storage_options.get("fo")
        if isinstance(archive, str):
            target = self.fs.storage_options.get("target_protocol") or "file"
            url += f"::{archive}" if "://" in archive else f"::{target}://{archive}"
        return url

    @property
    def location(self) -> str:
        """The root's `url` (``s3://bucket/prefix``, ``memory:///x``): the same keys as an obstore store there.

        Local files: the ``file://`` URL with symbolic links resolved, as a `LocalStore`'s.
        """
        url = self.url
        return "file://" + os.path.realpath(self.root) if url.startswith("file://") else url

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"FsspecStore({self.url!r}{mode})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FsspecStore):
            return NotImplemented
        return (self.fs, self.root, self.read_only) == (other.fs, other.root, other.read_only)

    def __hash__(self) -> int:
        return hash((FsspecStore, self.fs, self.root, self.read_only))

    def _path(self, key: str) -> str:
        validate_key(key)
        return f"{self.root}/{key}" if self.root else key

    def _relative(self, path: str) -> str | None:
        """Key of an ``fs`` path, or ``None`` if it is not below the root."""
        path = path.lstrip("/")
        root = self.root.lstrip("/")
        if root:
            if not path.startswith(root + "/"):
                return None
            path = path[len(root) + 1 :]
        return path or None

    def _listing_failed(self, prefix: str, exc: BaseException) -> StoreError:
        return StoreError(f"could not list prefix {prefix!r} of {self.url}: {type(exc).__name__}: {exc}")

    def _run(self, coros: Iterable[Awaitable[T]]) -> list[T | BaseException]:
        results: list[T | BaseException] = sync(self.fs.loop, gather, list(coros), self.io_concurrency)
        return results

    # -- reads ------------------------------------------------------------------

    def _outcome(self, key: str, result: bytes | bytearray | BaseException) -> bytes | None:
        if not isinstance(result, BaseException):
            return bytes(result)
        if _is_missing(result):
            return None
        if is_unsatisfiable(result):
            return b""
        raise store_failure(
            self.url, self.fs.storage_options, f"could not read key {key!r} from {self.url}", result
        ) from result

    async def _fetch_async(self, path: str, byte_range: ByteRange | None) -> bytes | bytearray:
        fs: Any = self.fs
        if self._s3:
            return (await self._fetch_s3(path, byte_range))[0]
        if byte_range is None:
            data: bytes = await fs._cat_file(path, **self._full_kwargs)
            return data
        if needs_size(byte_range):
            byte_range = resolve_range(byte_range, await self._size_async(path))
        if is_empty(byte_range):  # probe existence; past-the-end reads as b""
            await fs._cat_file(path, start=0, end=1)
            return b""
        data = await fs._cat_file(path, start=byte_range.start, end=byte_range.end)
        expected = expected_length(byte_range, len(data))
        if expected is None:
            expected = span_length(byte_range, await self._size_async(path))
        return check_length(path, byte_range, data, expected)

    def _split(self, path: str) -> tuple[str, str, str | None]:
        """s3fs's ``split_path``: bucket, key and version; a plain path in the store's bucket without its work."""
        bucket = self._bucket
        if bucket is not None and path.startswith(f"{bucket}/") and "?" not in path:
            return bucket, path[len(bucket) + 1 :], None
        fs: Any = self.fs
        split: tuple[str, str, str | None] = fs.split_path(path)
        return split

    async def _size_async(self, path: str) -> int:
        info = await self.fs._info(path)
        if info.get("type") == "directory":
            raise FileNotFoundError(path)
        return int(info["size"])

    def _fetch_sync(self, path: str, byte_range: ByteRange | None) -> bytes:
        if byte_range is not None and needs_size(byte_range):
            byte_range = resolve_range(byte_range, self._size_sync(path))
        if byte_range is not None and is_empty(byte_range):
            self.fs.cat_file(path, start=0, end=1)
            return b""
        if byte_range is None:
            data: bytes = self.fs.cat_file(path)
            return data
        data = self.fs.cat_file(path, start=byte_range.start, end=byte_range.end)
        expected = expected_length(byte_range, len(data))
        if expected is None:
            expected = span_length(byte_range, self._size_sync(path))
        return check_length(path, byte_range, data, expected)

    def _size_sync(self, path: str) -> int:
        info = self.fs.info(path)
        if info.get("type") == "directory":
            raise FileNotFoundError(path)
        return int(info["size"])

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        if self.fs.async_impl:
            results: list[Versioned] = sync(self.fs.loop, self._get_many_versioned_async, requests)
            return results
        paths = [self._path(key) for key, _ in requests]
        answers = [
            capture(self._fetch_sync_versioned, p, r) for (_, r), p in zip(requests, paths, strict=True)
        ]
        return [self._versioned(key, answer) for (key, _), answer in zip(requests, answers, strict=True)]

    async def _get_many_versioned_async(self, requests: Sequence[Request]) -> list[Versioned]:
        """`get_many_versioned` as a coroutine on fsspec's loop (asynchronous file systems only)."""
        paths = [self._path(key) for key, _ in requests]
        if self._s3:
            fetches = [self._fetch_s3(p, r) for (_, r), p in zip(requests, paths, strict=True)]
            answers = await gather(fetches, self.io_concurrency)
            return [self._versioned(key, answer) for (key, _), answer in zip(requests, answers, strict=True)]
        plain = [self._fetch_async(p, r) for (_, r), p in zip(requests, paths, strict=True)]
        values = await gather(plain, self.io_concurrency)
        return [
            Versioned(self._outcome(key, value)) for (key, _), value in zip(requests, values, strict=True)
        ]

    def _versioned(
        self, key: str, answer: tuple[bytes | bytearray, Generation | None] | BaseException
    ) -> Versioned:
        if isinstance(answer, BaseException):
            return Versioned(self._outcome(key, answer))
        value = answer[0]  # a bytearray is the buffer our own connection received it into: kept, not copied
        return Versioned(value if isinstance(value, bytearray) else bytes(value), answer[1])

    async def _fetch_s3(
        self, path: str, byte_range: ByteRange | None
    ) -> tuple[bytes | bytearray, Generation | None]:
        """One GetObject: the bytes and the generation (ETag, size, time) of the object version they came from."""
        fs: Any = self.fs
        if byte_range is not None and needs_size(byte_range):
            byte_range = resolve_range(byte_range, await self._size_async(path))
        bucket, key, version = self._split(path)
        target = {"Bucket": bucket, "Key": key, **({"VersionId": version} if version else {})}
        empty = byte_range is not None and is_empty(byte_range)
        ranged = {} if byte_range is None else {"Range": "bytes=0-0" if empty else http_range(byte_range)}

        async def get_and_read() -> tuple[bytes, dict[str, Any]]:
            response = await fs._call_s3("get_object", **target, **ranged)
            try:
                return await response["Body"].read(), response
            finally:
                response["Body"].close()

        try:
            data, response = await s3_with_retries(fs, get_and_read)
        except OSError as exc:
            if not is_unsatisfiable(exc):
                raise
            head = await fs._call_s3("head_object", **target)  # past the end: the ETag says which version
            return b"", s3_generation(fs, bucket, path, head)
        content_range = response.get("ContentRange", response.get("ContentLength"))
        if byte_range is not None and not empty:
            data = check_content_range(path, byte_range, data, content_range)
        return (b"" if empty else data), s3_generation(fs, bucket, path, response)

    def _fetch_sync_versioned(
        self, path: str, byte_range: ByteRange | None
    ) -> tuple[bytes, Generation | None]:
        """The bytes and a generation from ``info`` before and after; a change in between never matches."""
        before = _info_generation(self.fs.info(path))
        data = self._fetch_sync(path, byte_range)
        after = _info_generation(self.fs.info(path))
        return data, before if before == after else object()

    # -- writes -----------------------------------------------------------------

    def set(self, key: str, value: Value) -> None:
        self.set_many({key: value})

    def set_many(self, items: Mapping[str, Value]) -> None:
        self._check_writable()
        pairs = [(key, self._path(key), join_value(value)) for key, value in items.items()]
        if self.fs.async_impl:
            results = self._run(self.fs._pipe_file(path, data) for _, path, data in pairs)
        else:
            results = [capture(self.fs.pipe_file, path, data) for _, path, data in pairs]
        for (key, _, _), result in zip(pairs, results, strict=True):
            if isinstance(result, BaseException):
                raise store_failure(
                    self.url, self.fs.storage_options, f"could not write key {key!r} to {self.url}", result
                ) from result

    def delete(self, key: str) -> None:
        self.delete_many([key])

    def delete_many(self, keys: Iterable[str]) -> None:
        self._check_writable()
        pairs = [(key, self._path(key)) for key in keys]
        if self.fs.async_impl:
            results = self._run(self.fs._rm_file(path) for _, path in pairs)
        else:
            results = [capture(self.fs.rm_file, path) for _, path in pairs]
        for (key, _), result in zip(pairs, results, strict=True):
            if isinstance(result, BaseException) and not _is_missing(result):
                raise store_failure(
                    self.url, self.fs.storage_options, f"could not delete key {key!r} from {self.url}", result
                ) from result

    def delete_prefix(self, prefix: str) -> None:
        """Erase every key under ``prefix``, leftover temporary files (e.g. copied from a local store) included."""
        self._check_writable()  # before listing: read-only stores may not list at all
        self.delete_many(self._find(prefix))

    # -- listing ----------------------------------------------------------------

    def _prefix_path(self, prefix: str) -> str:
        validate_prefix(prefix)
        return self._path(prefix[:-1]) if prefix else self.root

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Every key under ``prefix``; temporary files of atomic writes are never keys."""
        yield from (key for key in self._find(prefix) if _is_key(key))

    def _find(self, prefix: str) -> list[str]:
        """Every object under ``prefix`` as a key, temporary files included."""
        path = self._prefix_path(prefix)
        try:
            found = self.fs.find(path, withdirs=False)
        except Exception as exc:
            if _is_missing(exc):
                return []
            raise self._listing_failed(prefix, exc) from exc
        keys = (self._relative(path) for path in found)
        return sorted(key for key in keys if key and key.startswith(prefix) and not key.endswith("/"))

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        path = self._prefix_path(prefix)
        try:
            entries = self.fs.ls(path, detail=True, refresh=True)
        except Exception as exc:
            if _is_missing(exc):
                return [], []
            raise self._listing_failed(prefix, exc) from exc
        keys: list[str] = []
        prefixes: list[str] = []
        for entry in entries:
            key = self._relative(entry["name"].rstrip("/"))
            if key is None or not key.startswith(prefix) or "/" in key[len(prefix) :] or not _is_key(key):
                continue
            if entry["type"] == "directory":
                prefixes.append(key + "/")
            else:
                keys.append(key)
        return sorted(keys), sorted(prefixes)


def _info_generation(info: Mapping[str, Any]) -> Generation | None:
    """A generation from an ``info`` dict: size plus the fields that change on a rewrite; ``None`` if none."""
    if info.get("type") == "directory":
        raise FileNotFoundError(info.get("name"))
    found = tuple((name, str(info[name])) for name in _VERSION_FIELDS if info.get(name) is not None)
    return (info.get("size"), found) if found else None


def _is_key(key: str) -> bool:
    return not key.endswith("/") and not is_temporary(key.rsplit("/", 1)[-1])
