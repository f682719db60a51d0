"""A store on obstore (Python bindings to the Rust ``object_store`` crate): S3, GCS, Azure and HTTP(S).

obstore signs requests, refreshes credentials, verifies TLS and retries;
this module maps the `Store` interface onto its synchronous API. A
batch of requests goes out on the runtime's request pool, up to
`ObstoreStore.io_concurrency` at once (obstore's blocking calls release the
GIL; its asyncio API on one event loop measured slower, with more CPU per request: see
docs/performance.md). Every answer to a ranged read
is checked: a body whose span or length differs from the range asked for
raises `StoreError`, never reaching a decoder.

fsspec-style ``storage_options`` are translated by `obstore_options`;
an option without an equivalent makes ``make_store`` fall back to fsspec.
Clients are cached per store description, so that stores unpickled by dask
tasks share connections; `clear_store_cache()` drops them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import ArgumentError, StoreError
from ..runtime import PerProcess, each_request, io_concurrency
from ..runtime.process import process_lock
from .base import (
    ByteRange,
    Request,
    Store,
    Value,
    Versioned,
    is_temporary,
    validate_key,
    validate_prefix,
)
from .credentials import store_failure
from .obstore_options import (
    endpoint_name,
    generation,
    get_options,
    obstore_settings,
    protocol_kind,
    put_payload,
    span,
)
from .ranged_reads import resolve_range

if TYPE_CHECKING:
    from obstore import ObjectMeta
    from obstore.store import ObjectStore

#: URL schemes an `ObstoreStore` serves.
PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "http", "https"})
#: Values up to this size are one PUT; larger ones go up as a multipart upload of parts this size
#: (obstore's ``put``), as s3fs does. Either way the object appears whole, never in part.
PUT_PART_BYTES = 100 << 20
_clients: PerProcess[dict[str, ObjectStore]] = PerProcess(dict)
#: The process that made the first obstore client: obstore's runtime does not survive ``fork``, and a
#: request in a child forked after that waits forever.
_first_client_pid: list[int] = []


def clear_store_cache() -> None:
    """Drop every cached obstore client: the next request of any store connects afresh (a cold client)."""
    _clients.reset()


class ObstoreStore(Store):
    """Keys under the URL ``url`` (``s3://bucket/prefix``, ``gs://``, ``az://``, ``https://host/path``) on obstore.

    Plain HTTP has no listing: over http(s) `list_prefix()` and
    `list_dir()` find nothing, and generations are ETags where the
    server sends them. Pickles as its description.

    Parameters
    ----------
    url : str
        The store root.
    storage_options : dict, optional
        fsspec-style options, translated by `obstore_settings()`.
    read_only : bool
        Refuse writes with `ReadOnlyError`.
    io_concurrency : int, optional
        Requests in flight at once (default: ``ZARR3_BACKEND_IO_CONCURRENCY``, 64).

    Examples
    --------
    >>> ObstoreStore("s3://bucket/data.zarr", {"anon": True})
    ObstoreStore('s3://bucket/data.zarr')
    """

    def __init__(
        self, url: str, storage_options: Mapping[str, Any] | None = None, *, read_only: bool = False,
        io_concurrency: int | None = None,
    ) -> None:  # fmt: skip
        self.url = url.rstrip("/")
        self.protocol = urlsplit(self.url).scheme
        if self.protocol not in PROTOCOLS:
            raise ArgumentError(f"ObstoreStore serves {sorted(PROTOCOLS)} URLs, not {url!r}")
        self.storage_options = dict(storage_options or {})
        self.settings = obstore_settings(self.protocol, self.storage_options)
        self.read_only = read_only
        self._io_concurrency = io_concurrency
        self._http = protocol_kind(self.protocol) == "http"
        self._endpoint = endpoint_name(self.url, self.settings)  # whose ETags are watched (see .etags)
        settings = self.settings
        self._key = repr(
            (
                self.url,
                sorted(settings.config.items()),
                sorted(settings.client_options.items()),
                settings.retry_config,
                settings.profile,
            )
        )

    @property
    def location(self) -> str:
        """The root URL (``s3://bucket/prefix``): the same keys as an fsspec store there."""
        return self.url

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"ObstoreStore({self.url!r}{mode})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObstoreStore):
            return NotImplemented
        return (self._key, self.read_only) == (other._key, other.read_only)

    def __hash__(self) -> int:
        return hash((ObstoreStore, self._key, self.read_only))

    @property
    def io_concurrency(self) -> int:
        return self._io_concurrency or io_concurrency()

    @property
    def versioned_reads(self) -> bool:
        """Object stores return the ETag (or version) with every GET; plain HTTP servers need not."""
        return not self._http

    @property
    def client(self) -> ObjectStore:
        """The obstore client of this store's description, shared by equal stores until `clear_store_cache()`."""
        clients = _clients.get()
        client = clients.get(self._key)
        if client is None:
            if _first_client_pid and _first_client_pid[0] != os.getpid():
                raise StoreError(
                    f"{self.url}: this process was forked from one that used obstore, whose runtime does not survive "
                    "fork; start processes with 'spawn' or 'forkserver', or pass storage_options={'backend': 'fsspec'}"
                )
            with process_lock():
                client = clients.get(self._key)
                if client is None:
                    client = clients[self._key] = self._connect()
                    _first_client_pid[:] = _first_client_pid or [os.getpid()]
        return client

    def _connect(self) -> ObjectStore:
        from obstore.store import from_url

        settings = self.settings
        client_options: Any = settings.client_options or None
        if self._http:
            return from_url(self.url, client_options=client_options)
        provider = None
        if settings.profile is not None:
            import boto3
            from obstore.auth.boto3 import Boto3CredentialProvider

            provider = Boto3CredentialProvider(boto3.Session(profile_name=settings.profile))
        config: Any = settings.config or None
        retry: Any = settings.retry_config
        return from_url(
            self.url,
            config=config,
            client_options=client_options,
            retry_config=retry,
            credential_provider=provider,
        )

    def _failed(self, doing: str, key: str, exc: BaseException) -> StoreError:
        return store_failure(
            self.url, self.storage_options, f"could not {doing} key {key!r} of {self.url}", exc
        )

    # -- reads ------------------------------------------------------------------

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        for key, _ in requests:
            validate_key(key)
        return each_request(self._read, requests, self.io_concurrency)

    def _read(self, request: Request) -> Versioned:
        """One GET, its body checked against the range asked for."""
        import obstore

        key, byte_range = request
        if (
            byte_range is not None
            and byte_range.end is not None
            and (byte_range.end < 0 or byte_range.start < 0)
        ):
            meta = self._head(key)  # a range that needs the size
            if meta is None:
                return Versioned(None)
            byte_range = resolve_range(byte_range, meta["size"])
        if byte_range is not None and byte_range.end is not None and byte_range.end <= byte_range.start:
            meta = self._head(key)
            return Versioned(None) if meta is None else Versioned(b"", generation(meta, self._endpoint, key))
        try:
            result = obstore.get(self.client, key, options=get_options(byte_range))
            data = result.bytes()
        except FileNotFoundError:
            return Versioned(None)
        except Exception as exc:
            return self._past_the_end(key, byte_range, exc)
        meta = result.meta
        expected = span(byte_range, meta["size"])
        if tuple(result.range) != expected or len(data) != expected[1] - expected[0]:
            raise StoreError(
                f"key {key!r} of {self.url}: asked for bytes [{expected[0]}, {expected[1]}) of {meta['size']}, "
                f"the server answered bytes {list(result.range)} with a body of {len(data)} bytes"
            )
        return Versioned(
            memoryview(data), generation(meta, self._endpoint, key)
        )  # obstore's buffer itself: the body is never copied

    def _past_the_end(self, key: str, byte_range: ByteRange | None, exc: Exception) -> Versioned:
        """A ranged GET that failed: ``b""`` if the range starts at or past the end (an HTTP 416), else the error."""
        if byte_range is not None:
            meta = self._head(key)
            if meta is None:
                return Versioned(None)
            if byte_range.start >= meta["size"] or (byte_range.is_suffix and meta["size"] == 0):
                return Versioned(b"", generation(meta, self._endpoint, key))
        raise self._failed("read", key, exc) from exc

    def _head(self, key: str) -> ObjectMeta | None:
        import obstore

        try:
            return obstore.head(self.client, key)
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._failed("read", key, exc) from exc

    def sizes(self, keys: Sequence[str]) -> list[int | None]:
        """The stored size of each key (``None``: missing), one HEAD each, `io_concurrency` at once."""
        for key in keys:
            validate_key(key)
        return [
            None if meta is None else meta["size"]
            for meta in each_request(self._head, keys, self.io_concurrency)
        ]

    # -- writes -----------------------------------------------------------------

    def set(self, key: str, value: Value) -> None:
        self.set_many({key: value})

    def set_many(self, items: Mapping[str, Value]) -> None:
        self._check_writable()
        for key in items:
            validate_key(key)
        each_request(self._put, list(items.items()), self.io_concurrency)

    @property
    def atomic_create(self) -> bool:
        """Object stores refuse a conditional PUT (``If-None-Match: *``) where an object exists; plain HTTP need not."""
        return not self._http

    def create(self, key: str, value: Value) -> bool:
        """One conditional PUT (obstore's ``mode="create"``), never a multipart upload."""
        import obstore
        from obstore.exceptions import AlreadyExistsError

        self._check_writable()
        validate_key(key)
        try:
            obstore.put(self.client, key, put_payload(value)[0], mode="create")
        except AlreadyExistsError:
            return False
        except Exception as exc:
            raise self._failed("create", key, exc) from exc
        return True

    def _put(self, item: tuple[str, Value]) -> None:
        import obstore

        key, value = item
        payload, nbytes = put_payload(value)
        try:  # obstore would upload any list of pieces in parts: say when one PUT does
            obstore.put(
                self.client, key, payload, use_multipart=nbytes > PUT_PART_BYTES, chunk_size=PUT_PART_BYTES
            )
        except Exception as exc:
            raise self._failed("write", key, exc) from exc

    def delete(self, key: str) -> None:
        self.delete_many([key])

    def delete_many(self, keys: Iterable[str]) -> None:
        import obstore

        self._check_writable()
        paths = [validate_key(key) for key in keys]
        if not paths:
            return
        try:
            obstore.delete(self.client, paths)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise self._failed(
                "delete", paths[0] if len(paths) == 1 else f"{paths[0]} (of {len(paths)})", exc
            ) from exc

    def delete_prefix(self, prefix: str) -> None:
        """Erase every key under ``prefix``, leftover temporary files of atomic writes included."""
        self._check_writable()
        self.delete_many(self._find(prefix))

    # -- listing ----------------------------------------------------------------

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Every key under ``prefix``; temporary files of atomic writes are never keys."""
        yield from (key for key in self._find(prefix) if not is_temporary(key.rsplit("/", 1)[-1]))

    def _find(self, prefix: str) -> list[str]:
        import obstore

        validate_prefix(prefix)
        if self._http:
            return []
        try:
            found = [
                meta["path"]
                for chunk in obstore.list(self.client, prefix or None, chunk_size=1000)
                for meta in chunk
            ]
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise self._failed("list", prefix, exc) from exc
        return sorted(path for path in found if path.startswith(prefix))

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        import obstore

        validate_prefix(prefix)
        if self._http:
            return [], []
        try:
            listing = obstore.list_with_delimiter(self.client, prefix or None)
        except FileNotFoundError:
            return [], []
        except Exception as exc:
            raise self._failed("list", prefix, exc) from exc
        keys = [
            meta["path"] for meta in listing["objects"] if not is_temporary(meta["path"].rsplit("/", 1)[-1])
        ]
        prefixes = [path.rstrip("/") + "/" for path in listing["common_prefixes"]]
        return sorted(k for k in keys if k.startswith(prefix)), sorted(
            p for p in prefixes if p.startswith(prefix)
        )
