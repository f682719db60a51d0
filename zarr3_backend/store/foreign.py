"""Stores users already hold, as our stores: zarr-python store objects and fsspec mappers.

=================================  =============================================
given                              becomes
=================================  =============================================
``zarr.storage.LocalStore``        :class:`LocalStore` at its root
``zarr.storage.FsspecStore``       :class:`FsspecStore` on its file system and path
``zarr.storage.MemoryStore``       :class:`MappingStore` reading and writing its dict
``fsspec.FSMap`` (``get_mapper``)  :class:`FsspecStore` on its file system and root
=================================  =============================================

A local file system behind an fsspec store or mapper gives a :class:`LocalStore`
(atomic writes, parent directories created).

zarr-python keeps its file systems in asynchronous mode; they are reopened
in ordinary (synchronous) mode with the same options, which is how
:class:`FsspecStore` drives them. Nothing here imports zarr: its classes are
looked up only for objects that come from it.

>>> import fsspec
>>> from_foreign(fsspec.get_mapper("memory://doc/foreign"))
FsspecStore('memory:///doc/foreign')
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any, NoReturn

import fsspec
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem
from fsspec.mapping import FSMap

from ..errors import ArgumentTypeError
from .base import ByteRange, Request, Store, Value, join_value, validate_key, validate_prefix
from .fsspec_store import FsspecStore
from .local import LocalStore

ACCEPTED = (
    "a path or URL string, an os.PathLike, a zarr3_backend Store, a zarr-python LocalStore, "
    "FsspecStore or MemoryStore, or an fsspec mapper (fsspec.get_mapper(...))"
)


def from_foreign(obj: Any, read_only: bool = False) -> Store | None:
    """Our store for a zarr-python store or fsspec mapper; ``None`` if ``obj`` is neither.

    Raises ``TypeError`` for a zarr-python store kind that cannot be converted.
    """
    if isinstance(obj, FSMap):
        return _on_file_system(obj.fs, obj.root, read_only)
    if type(obj).__module__.split(".")[0] != "zarr":
        return None
    import zarr.storage

    read_only = read_only or bool(getattr(obj, "read_only", False))
    if isinstance(obj, zarr.storage.LocalStore):
        return LocalStore(obj.root, read_only=read_only)
    if isinstance(obj, zarr.storage.FsspecStore):
        return _on_file_system(obj.fs, obj.path, read_only)
    if isinstance(obj, zarr.storage.MemoryStore) and type(obj) is zarr.storage.MemoryStore:
        mapping = getattr(obj, "_store_dict", None)
        if isinstance(mapping, MutableMapping):
            return MappingStore(mapping, read_only=read_only)
    raise ArgumentTypeError(
        f"zarr-python store {obj!r} ({type(obj).__name__}) cannot be used by zarr3_backend; "
        f"pass {ACCEPTED}"
    )


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


class MappingStore(Store):
    """Keys in a zarr-python ``MemoryStore``'s dict, whose values are zarr ``Buffer`` objects.

    Lives in this process only: it refuses to pickle (a copy in a dask
    worker would write into a dict nobody reads). Use a ``memory://`` URL
    for an in-memory store that works across processes of one machine.
    """

    def __init__(self, mapping: MutableMapping[str, Any], read_only: bool = False) -> None:
        self.mapping = mapping
        self.read_only = read_only

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"MappingStore(<zarr MemoryStore dict, {len(self.mapping)} keys>{mode})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "a zarr-python MemoryStore cannot be sent to another process; "
            "use a 'memory://...' URL or a directory with distributed or multiprocess schedulers"
        )

    def __dask_tokenize__(self) -> tuple[str, int]:
        return ("zarr3_backend.MappingStore", id(self.mapping))

    def get_many(self, requests: Sequence[Request]) -> list[bytes | None]:
        return [self._get(key, byte_range) for key, byte_range in requests]

    def _get(self, key: str, byte_range: ByteRange | None) -> bytes | None:
        value = self.mapping.get(validate_key(key))
        if value is None:
            return None
        data = value.to_bytes() if hasattr(value, "to_bytes") else bytes(value)
        return data if byte_range is None else data[byte_range.slice()]

    def set(self, key: str, value: Value) -> None:
        self._check_writable()
        from zarr.core.buffer import default_buffer_prototype

        self.mapping[validate_key(key)] = default_buffer_prototype().buffer.from_bytes(join_value(value))

    def delete(self, key: str) -> None:
        self._check_writable()
        self.mapping.pop(validate_key(key), None)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        return iter(sorted(key for key in list(self.mapping) if key.startswith(prefix)))

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        validate_prefix(prefix)
        keys: set[str] = set()
        prefixes: set[str] = set()
        for key in self.list_prefix(prefix):
            head, sep, _ = key[len(prefix) :].partition("/")
            (prefixes if sep else keys).add(prefix + head + sep)
        return sorted(keys), sorted(prefixes)
