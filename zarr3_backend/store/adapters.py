"""Stores users already hold, as our stores: zarr-python store objects and fsspec mappers.

=================================  =============================================
given                              becomes
=================================  =============================================
``zarr.storage.LocalStore``        `LocalStore` at its root
``zarr.storage.FsspecStore``       `FsspecStore` on its file system and path
``zarr.storage.MemoryStore``       `ZarrMemoryStore` reading and writing it in place
``fsspec.FSMap`` (``get_mapper``)  `FsspecStore` on its file system and root
=================================  =============================================

Any other zarr-python store (``zarr.abc.store.Store``: an Icechunk session's
store, ``ObjectStore``, ``ZipStore``, ...) becomes a `ZarrPythonStore` wrapping it.

A local file system behind an fsspec store or mapper gives a `LocalStore`
(atomic writes, parent directories created).

zarr-python keeps its file systems in asynchronous mode; they are reopened
in ordinary (synchronous) mode with the same options, which is how
`FsspecStore` drives them. Nothing here imports zarr: its classes are
looked up only for objects that come from it.

>>> import fsspec
>>> adapt(fsspec.get_mapper("memory://doc/adapters"))
FsspecStore('memory:///doc/adapters')
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, NoReturn, cast

import fsspec
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem
from fsspec.mapping import FSMap

from ..errors import StoreError
from .base import ByteRange, Request, Store, Value, Versioned, join_value, validate_key, validate_prefix
from .fsspec_store import FsspecStore
from .local import LocalStore
from .zarr_python import ZarrPythonStore, is_zarr_python_store

if TYPE_CHECKING:
    from zarr.abc.store import Store as ZarrStore
    from zarr.storage import MemoryStore

ACCEPTED = (
    "a path or URL string, an os.PathLike, a zarr3_backend Store, a zarr-python store "
    "(zarr.abc.store.Store: LocalStore, MemoryStore, an Icechunk session.store, ...), "
    "or an fsspec mapper (fsspec.get_mapper(...))"
)


def adapt(obj: object, read_only: bool = False) -> Store | None:
    """Our store for a zarr-python store or fsspec mapper; ``None`` if ``obj`` is neither.

    zarr-python stores without a native equivalent are wrapped in a `ZarrPythonStore`.
    """
    if isinstance(obj, FSMap):
        return _on_file_system(obj.fs, obj.root, read_only)
    if not is_zarr_python_store(obj):
        return None
    import zarr.storage

    read_only = read_only or bool(getattr(obj, "read_only", False))
    if isinstance(obj, zarr.storage.LocalStore):
        return LocalStore(obj.root, read_only=read_only)
    if isinstance(obj, zarr.storage.FsspecStore):
        return _on_file_system(obj.fs, obj.path, read_only)
    if isinstance(obj, zarr.storage.MemoryStore) and type(obj) is zarr.storage.MemoryStore:
        return ZarrMemoryStore(obj, read_only=read_only)
    return ZarrPythonStore(cast("ZarrStore", obj), read_only=read_only)


def _on_file_system(fs: AbstractFileSystem, root: str, read_only: bool) -> Store:
    fs = synchronous(fs)
    if isinstance(fs, LocalFileSystem):
        return LocalStore(fs._strip_protocol(root), read_only=read_only)
    return FsspecStore(fs, root, read_only=read_only)


def synchronous(fs: AbstractFileSystem) -> AbstractFileSystem:
    """``fs`` in synchronous mode: unwrap zarr-python's async wrapper, reopen ``asynchronous=True`` ones."""
    fs = getattr(fs, "sync_fs", fs)  # fsspec's AsyncFileSystemWrapper around a synchronous file system
    if not getattr(fs, "asynchronous", False):
        return fs
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    options = {k: v for k, v in fs.storage_options.items() if k != "loop"}
    options["asynchronous"] = False
    return fsspec.filesystem(protocol, **options)


class ZarrMemoryStore(Store):
    """A zarr-python ``MemoryStore``, shared in place through its public API.

    Values are read and written with its synchronous ``get_sync``/``set_sync``/
    ``delete_sync`` (zarr's ``SupportsSyncStore``); keys are listed with its
    ``list_prefix``, an async generator that never waits, run to completion
    here without an event loop (so this works inside Jupyter's running loop too).

    Lives in this process only: it refuses to pickle (a copy in a dask
    worker would write into a dict nobody reads). Use a ``memory://`` URL
    for an in-memory store that works across processes of one machine.
    """

    def __init__(self, zarr_store: MemoryStore, read_only: bool = False) -> None:
        self.zarr_store = zarr_store
        self.read_only = read_only

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"ZarrMemoryStore({self.zarr_store!r}{mode})"

    @property
    def location(self) -> str:
        """The wrapped ``MemoryStore`` object (every wrapper of it shares it)."""
        return f"zarr-python:{id(self.zarr_store)}"

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "a zarr-python MemoryStore cannot be sent to another process; "
            "use a 'memory://...' URL or a directory with distributed or multiprocess schedulers"
        )

    def __dask_tokenize__(self) -> tuple[str, int]:
        return ("zarr3_backend.ZarrMemoryStore", id(self.zarr_store))

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        """Values read one by one; generations are unknown (``None``)."""
        return [Versioned(self._get(key, byte_range)) for key, byte_range in requests]

    def _get(self, key: str, byte_range: ByteRange | None) -> bytes | None:
        value = self.zarr_store.get_sync(validate_key(key))
        if value is None:
            return None
        data = value.to_bytes()
        return data if byte_range is None else data[byte_range.slice()]

    def set(self, key: str, value: Value) -> None:
        self._check_writable()
        from zarr.buffer import default_buffer_prototype

        self.zarr_store.set_sync(
            validate_key(key), default_buffer_prototype().buffer.from_bytes(join_value(value))
        )

    def delete(self, key: str) -> None:
        self._check_writable()
        self.zarr_store.delete_sync(validate_key(key))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        return iter(sorted(_without_waiting(self.zarr_store.list_prefix(prefix))))

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        validate_prefix(prefix)
        keys: set[str] = set()
        prefixes: set[str] = set()
        for key in self.list_prefix(prefix):
            head, sep, _ = key[len(prefix) :].partition("/")
            (prefixes if sep else keys).add(prefix + head + sep)
        return sorted(keys), sorted(prefixes)


def _without_waiting(items: AsyncIterator[str]) -> list[str]:
    """Everything ``items`` yields, for an async iterator that never suspends (no event loop needed)."""

    async def collect() -> list[str]:
        return [item async for item in items]

    coroutine = collect()
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: list[str] = done.value
        return result
    coroutine.close()
    raise StoreError(
        "listing a zarr-python MemoryStore had to wait for I/O; this zarr version is not supported"
    )
