"""Stores: the `Store` protocol, local, obstore and fsspec backends, and `make_store()`."""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, TypeAlias

import fsspec.core

from ..errors import ArgumentTypeError
from ..runtime.stacklevel import caller_stacklevel
from .adapters import ACCEPTED, ZarrMemoryStore, adapt
from .base import (
    TMP_PREFIX,
    Buffer,
    ByteRange,
    Generation,
    Request,
    Store,
    Value,
    Versioned,
    join_value,
    plain_values,
    validate_key,
    validate_prefix,
)
from .fsspec_s3 import with_connection_pool
from .fsspec_store import FsspecStore
from .local import LocalStore
from .obstore_options import UnsupportedOptionError
from .obstore_store import PROTOCOLS as OBSTORE_PROTOCOLS
from .obstore_store import ObstoreStore, clear_store_cache
from .s3_names import canonical_s3_options, check_s3_options
from .streamed_reads import stream_reads
from .zarr_python import ZarrPythonStore

#: What every ``store`` argument of the API accepts (see `make_store()`): a `Store`, a
#: local path or URL, any zarr-python store (``zarr.abc.store.Store``: an Icechunk session's store too), or an fsspec
#: mapper (``fsspec.get_mapper(url)``). fsspec ships no type information (mypy would see ``FSMap`` as
#: ``Any``, which accepts everything), so the mapper is named by the protocol it implements.
if TYPE_CHECKING:
    import zarr.abc.store

    StoreLike: TypeAlias = Store | str | os.PathLike[str] | MutableMapping[str, bytes] | zarr.abc.store.Store
else:  # zarr-python is optional: its store classes are named for type checkers only
    StoreLike: TypeAlias = Store | str | os.PathLike[str] | MutableMapping[str, bytes]

__all__ = [
    "TMP_PREFIX",
    "Buffer",
    "ByteRange",
    "FsspecStore",
    "Generation",
    "LocalStore",
    "ObstoreStore",
    "Request",
    "Store",
    "StoreLike",
    "Value",
    "Versioned",
    "ZarrMemoryStore",
    "ZarrPythonStore",
    "clear_store_cache",
    "join_value",
    "make_store",
    "plain_values",
    "stream_reads",
    "validate_key",
    "validate_prefix",
]

_READ_ONLY_PROTOCOLS = frozenset({"http", "https", "zip"})
S3_PROTOCOLS = frozenset({"s3", "s3a"})


def make_store(
    obj: object,
    *,
    storage_options: dict[str, Any] | None = None,
    read_only: bool = False,
) -> Store:
    """The store behind a path, URL or existing store (a `StoreLike`; anything else raises).

    A `Store` passes through unchanged. Plain paths and ``file://``
    URLs give a `LocalStore`. ``s3://``, ``gs://``, ``az://``,
    ``abfs://`` and ``http(s)://`` URLs give an `ObstoreStore` when
    obstore is installed, its ``storage_options`` translated from their
    fsspec names; ``storage_options={"backend": "fsspec"}`` (or an option
    obstore has no equivalent for, with a warning naming it) gives an
    `FsspecStore` instead. Any other URL (``memory://``,
    ``zip::file:///a.zip``, ...) gives an `FsspecStore` built by
    ``fsspec.core.url_to_fs(url, **storage_options)``. http(s) and zip
    stores are always read-only. zarr-python stores (``LocalStore``, ``FsspecStore``,
    ``MemoryStore``) and fsspec mappers (``fsspec.get_mapper(url)``) become
    the matching store here (see `zarr3_backend.store.adapters`); any other
    zarr-python store (an Icechunk ``session.store``, ...) is wrapped in a `ZarrPythonStore`.

    >>> make_store("memory://doc/make_store")
    FsspecStore('memory:///doc/make_store')
    """
    if isinstance(obj, Store):
        if storage_options:
            raise ArgumentTypeError(f"storage_options only apply to URLs, not to the store {obj!r}")
        return obj
    if not isinstance(obj, (str, os.PathLike)):
        adapted = adapt(obj, read_only=read_only)
        if adapted is None:
            raise ArgumentTypeError(
                f"store must be {ACCEPTED}; got {type(obj).__module__}.{type(obj).__name__}"
            )
        if storage_options:
            raise ArgumentTypeError(f"storage_options only apply to URLs, not to the store object {obj!r}")
        return adapted
    url = os.fspath(obj)
    is_url = "://" in url or "::" in url
    if isinstance(obj, os.PathLike) or not is_url or url.startswith("file://"):
        if storage_options:
            raise ArgumentTypeError(f"storage_options do not apply to the local path {url!r}")
        return LocalStore(url, read_only=read_only)
    protocol = fsspec.core.split_protocol(url)[0] or ""
    options = dict(storage_options or {})
    backend = options.pop("backend", None)
    if protocol in S3_PROTOCOLS:
        options = canonical_s3_options(options)
        check_s3_options(options)
    if backend not in (None, "obstore", "fsspec"):
        raise ArgumentTypeError(f"storage_options 'backend' must be 'obstore' or 'fsspec', not {backend!r}")
    if (
        backend != "fsspec"
        and protocol in OBSTORE_PROTOCOLS
        and "::" not in url
        and importlib.util.find_spec("obstore")
    ):
        try:
            return ObstoreStore(url, options, read_only=read_only or protocol in _READ_ONLY_PROTOCOLS)
        except UnsupportedOptionError as exc:
            if backend == "obstore":
                raise
            warnings.warn(
                f"{exc}: reading {url} through fsspec",
                stacklevel=caller_stacklevel("zarr3_backend", "xarray"),
            )
    fs, root = fsspec.core.url_to_fs(url, **with_connection_pool(protocol, options))
    protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
    return FsspecStore(fs, root, read_only=read_only or bool(protocols & _READ_ONLY_PROTOCOLS))
