"""Any zarr-python store (``zarr.abc.store.Store``) as our `Store`: Icechunk, ``ObjectStore``, ``ZipStore``, ...

zarr-python stores are asynchronous. `ZarrPythonStore` runs their
coroutines on the process's background event loop (`runtime.run_on_loop`;
a forked child makes its own). A batch of requests is gathered on that
loop, up to `ZarrPythonStore.io_concurrency` at once, so a read keeps many
requests in flight through the wrapped store's own concurrency.

A store that holds Zarr keys only (Icechunk) may refuse to read a key
whose last name starts with ``__`` (names Zarr v3 reserves): such a key
reads as missing. Capabilities come from the wrapped store's public members only:
``read_only``, ``supports_writes``, ``supports_deletes``, and a transaction
(``store.session.commit``, as an Icechunk store has): then
`ZarrPythonStore.transactional` holds and writers leave the
atomicity to the user's commit. Nothing here names a store class, and
zarr-python is imported only when such a store is used.

The adapter pickles as its wrapped store does: whatever that store refuses
to pickle (a writable Icechunk session) the adapter refuses too.
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ReadOnlyError, StoreError
from ..runtime import io_concurrency, run_on_loop
from ..runtime.batches import gather
from .base import (
    Buffer,
    ByteRange,
    Request,
    Store,
    Value,
    Versioned,
    join_value,
    validate_key,
    validate_prefix,
)
from .icechunk_api import refused_virtual_access

if TYPE_CHECKING:
    from zarr.abc.store import ByteRequest
    from zarr.abc.store import Store as ZarrStore

T = TypeVar("T")


def is_zarr_python_store(obj: object) -> bool:
    """Whether ``obj`` is a zarr-python ``zarr.abc.store.Store`` (without importing zarr if it is not loaded)."""
    import sys

    module = sys.modules.get("zarr.abc.store")
    return module is not None and isinstance(obj, module.Store)


class ZarrPythonStore(Store):
    """A zarr-python store, driven from synchronous code through `adapter_loop`.

    Parameters
    ----------
    store : zarr.abc.store.Store
        The wrapped store (opened here if it is not open yet).
    read_only : bool
        Refuse writes; a read-only wrapped store is always read-only here.
    """

    def __init__(self, store: ZarrStore, read_only: bool = False) -> None:
        self.wrapped = store
        self.read_only = bool(read_only or store.read_only or not store.supports_writes)

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"ZarrPythonStore({self.wrapped!r}{mode})"

    def __reduce__(self) -> tuple[Callable[..., ZarrPythonStore], tuple[object, ...]]:
        return (ZarrPythonStore, (self.wrapped, self.read_only))

    def __dask_tokenize__(self) -> tuple[str, int, bool]:
        return ("zarr3_backend.ZarrPythonStore", id(self.wrapped), self.read_only)

    def same_keys(self, other: Store) -> bool:
        """Whether ``other`` wraps an equal zarr-python store (zarr's ``==``: one Icechunk session, one directory)."""
        return isinstance(other, ZarrPythonStore) and bool(self.wrapped == other.wrapped)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ZarrPythonStore):
            return NotImplemented
        return self.wrapped is other.wrapped and self.read_only == other.read_only

    def __hash__(self) -> int:
        return hash((ZarrPythonStore, id(self.wrapped), self.read_only))

    @property
    def io_concurrency(self) -> int:
        """Requests gathered at once on the loop (``ZARR3_BACKEND_IO_CONCURRENCY``, 64)."""
        return io_concurrency()

    @property
    def transactional(self) -> bool:
        """Whether the wrapped store writes into a transaction the user commits (``store.session.commit``)."""
        session = getattr(self.wrapped, "session", None)
        return callable(getattr(session, "commit", None))

    def run(self, work: Coroutine[object, None, T]) -> T:
        """Run ``work`` on the process's background event loop and wait for its result (never from that loop)."""
        try:
            return run_on_loop(self._opened(work))
        except RuntimeError as exc:
            if "background event loop" not in str(exc):
                raise
            raise StoreError(f"{self!r}: {exc}") from exc

    async def _opened(self, work: Awaitable[T]) -> T:
        await _ensure_open(self.wrapped)
        return await work

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        """Every request gathered on the loop, up to `io_concurrency` at once; generations are unknown."""
        return self.run(self._get_many(requests))

    async def _get_many(self, requests: Sequence[Request]) -> list[Versioned]:
        answers = await gather(
            [self._get(key, byte_range) for key, byte_range in requests], self.io_concurrency
        )
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        return [Versioned(answer) for answer in answers]  # type: ignore[arg-type]

    async def _get(self, key: str, byte_range: ByteRange | None) -> Buffer | None:
        """The value or range, ``None`` if missing; Python slice semantics, which zarr-python stores need not have.

        An empty range asks ``exists``; a range the wrapped store refuses (past
        the end) is cut from the whole value.
        """
        validate_key(key)
        try:
            if byte_range is not None and byte_range.end is not None:
                if byte_range.start < 0 or byte_range.end < 0:  # no zarr-python ByteRequest says this
                    whole = await self._fetch(key, None)
                    return None if whole is None else whole[byte_range.slice()]
                if byte_range.end <= byte_range.start:
                    return b"" if await self.wrapped.exists(key) else None
            try:
                return await self._fetch(key, byte_range)
            except FileNotFoundError:
                return None
            except Exception:
                if byte_range is None:
                    raise
            whole = await self._fetch(key, None)
            return None if whole is None else whole[byte_range.slice()]
        except FileNotFoundError:
            return None
        except Exception as exc:
            if is_reserved(key):  # a store of Zarr keys only (Icechunk) refuses such names: none is there
                return None
            refused = refused_virtual_access(self, key, exc)
            if refused is not None:
                raise refused from exc
            raise

    async def _fetch(self, key: str, byte_range: ByteRange | None) -> Buffer | None:
        from zarr.core.buffer import default_buffer_prototype

        buffer = await self.wrapped.get(key, default_buffer_prototype(), _byte_request(byte_range))
        if buffer is None:
            return None
        return memoryview(buffer.as_buffer_like())  # the bytes the store returned, not a copy

    def set(self, key: str, value: Value) -> None:
        self._check_writable()
        self.run(self._set(validate_key(key), join_value(value)))

    async def _set(self, key: str, data: bytes) -> None:
        from zarr.core.buffer import default_buffer_prototype

        await self.wrapped.set(key, default_buffer_prototype().buffer.from_bytes(data))

    def set_many(self, items: Mapping[str, Value]) -> None:
        self._check_writable()
        writes = [self._set(validate_key(key), join_value(value)) for key, value in items.items()]
        self.run(_gather(writes))

    def delete(self, key: str) -> None:
        self._check_writable()
        self._check_deletes(key)
        self.run(self._delete(validate_key(key)))

    def delete_many(self, keys: Iterable[str]) -> None:
        self._check_writable()
        valid = [validate_key(key) for key in keys]
        if valid:
            self._check_deletes(valid[0])
            self.run(_gather([self._delete(key) for key in valid]))

    def delete_prefix(self, prefix: str) -> None:
        """The wrapped store's ``delete_dir`` (an Icechunk node's chunks go with its ``zarr.json``)."""
        self._check_writable()
        self._check_deletes(validate_prefix(prefix))
        self.run(self.wrapped.delete_dir(prefix))

    async def _delete(self, key: str) -> None:
        try:
            await self.wrapped.delete(key)
        except (KeyError, FileNotFoundError):  # missing, or gone with its node: not an error
            pass

    def _check_deletes(self, key: str) -> None:
        if not self.wrapped.supports_deletes:
            raise ReadOnlyError(f"{self!r} cannot delete keys (deleting {key!r})")

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        return iter(sorted(self.run(_collect(self.wrapped.list_prefix(prefix)))))

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        validate_prefix(prefix)
        return self.run(self._list_dir(prefix))

    async def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """The wrapped store's children of ``prefix``: a prefix if something is listed below it, else a key."""
        names = await _collect(self.wrapped.list_dir(prefix.rstrip("/")))
        children = sorted({name.strip("/") for name in names if name.strip("/")})
        below = await asyncio.gather(*(self._has_children(prefix + name) for name in children))
        keys = [prefix + name for name, inside in zip(children, below) if not inside]
        return keys, [f"{prefix}{name}/" for name, inside in zip(children, below) if inside]

    async def _has_children(self, prefix: str) -> bool:
        """Whether ``prefix`` lists anything; one the store cannot list (VirtualiZarr's array with ``/`` keys) does."""
        try:
            async for _ in self.wrapped.list_dir(prefix):
                return True
        except NotImplementedError:
            return True
        return False


def is_reserved(key: str) -> bool:
    """Whether the last name of ``key`` starts with ``__``: reserved by Zarr v3, so never a Zarr node or chunk.

    >>> is_reserved("a/__reserved.json"), is_reserved("a/zarr.json")
    (True, False)
    """
    return key.rpartition("/")[2].startswith("__")


def _byte_request(byte_range: ByteRange | None) -> ByteRequest | None:
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    if byte_range is None:
        return None
    if byte_range.is_suffix:
        return SuffixByteRequest(-byte_range.start)
    if byte_range.end is None:
        return OffsetByteRequest(byte_range.start)
    return RangeByteRequest(byte_range.start, max(byte_range.start, byte_range.end))


async def _ensure_open(store: ZarrStore) -> None:
    """Open ``store`` if it is not open yet (zarr-python opens stores lazily on first use)."""
    if not store._is_open:
        try:
            await store._open()
        except ValueError:  # opened meanwhile by another request
            pass


async def _gather(work: Sequence[Awaitable[Any]]) -> None:
    await asyncio.gather(*work)


async def _collect(items: AsyncIterator[str]) -> list[str]:
    return [item async for item in items]
