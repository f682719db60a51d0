"""The Store protocol: a few primitives every backend implements, the rest derived.

Keys are ``/``-separated strings relative to the store root (spec: core,
"Abstract store interface"). A missing key reads as ``None``; the
``FileNotFoundError`` of the backend becomes "missing" here and nowhere else.
The value types (`ByteRange`, `Versioned`, ``Value``) live in
[`zarr3_backend.core.buffers`][zarr3_backend.core.buffers], shared with the codecs' read plans.

Reading many keys has one method, [`Store.get_many_versioned`][zarr3_backend.store.base.Store.get_many_versioned]:
a concurrent batch, every value with its generation (``None`` where unknown). It replaced (#44)
``get_many`` (use [`plain_values`][zarr3_backend.store.base.plain_values] of it),
``fetch_each``/``prefer`` (use [`stream_reads`][zarr3_backend.store.streamed_reads.stream_reads] and
``send_first``), and ``event_loop``/``get_many_versioned_async`` (gone: a store runs its event loop
inside its methods, if it has one).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ..core.buffers import Buffer as Buffer
from ..core.buffers import ByteRange as ByteRange
from ..core.buffers import Generation as Generation
from ..core.buffers import Value as Value
from ..core.buffers import Versioned as Versioned
from ..core.buffers import as_bytes
from ..core.buffers import join_value as join_value
from ..core.key_checks import validate_key as validate_key
from ..core.key_checks import validate_prefix as validate_prefix
from ..errors import ReadOnlyError

Request = tuple[str, ByteRange | None]

#: Name prefix of in-flight temporary files of atomic writes; listings skip such names.
TMP_PREFIX = ".__z3tmp."


def is_temporary(name: str) -> bool:
    """Whether a file name is an in-flight (or orphaned) temporary file of an atomic write."""
    return name.startswith(TMP_PREFIX)


def plain_values(reads: Sequence[Versioned]) -> list[bytes | None]:
    """The values of ``reads`` as bytes (``None``: missing), for callers that need no generation.

    >>> plain_values([Versioned(memoryview(b"ab"), 1), Versioned(None)])
    [b'ab', None]
    """
    return [as_bytes(read.value) for read in reads]


class Store(ABC):
    """Key/value storage for one Zarr hierarchy.

    Implementations provide `get_many_versioned`, `set`, `delete`,
    `list_prefix` and `list_dir`; everything else is derived.
    Stores must pickle (they travel inside dask graphs).

    What a store can do is declared by `io_concurrency`, `versioned_reads`
    and `atomic_create`; readers use these members and nothing else to
    choose how to read.
    """

    read_only: bool = False

    @property
    def versioned_reads(self) -> bool:
        """Whether `get_many_versioned` reports a generation (not ``None``) with every value it finds."""
        return False

    @property
    def io_concurrency(self) -> int:
        """Requests this store keeps in flight at once.

        1 (this default: local files, memory) means each request is answered
        about as fast as it is asked, and a read runs its fetches on the CPU
        threads. More means object storage, where every round of requests
        costs a round trip: a read sends every request it can at once, up to
        this many.
        """
        return 1

    @property
    def atomic_create(self) -> bool:
        """Whether `create()` is atomic: of writers creating one key at once, exactly one succeeds."""
        return False

    @property
    def process_local(self) -> bool:
        """Whether the data lives in this process's memory (``memory://``): other processes never see it."""
        return False

    @property
    def transactional(self) -> bool:
        """Whether writes land in a transaction the user commits (an Icechunk session).

        Readers of the committed state then see all of a write or none of it,
        so writers keep no records of their own (lease, pending, reservations) there.
        """
        return False

    @property
    def location(self) -> str | None:
        """Where this store's keys live: equal for every store over the same keys, however its path was spelled.

        A URL (``file:///abs/path``, ``s3://bucket/prefix``), to which a
        node's path is joined with ``/``; ``None`` (this default) when unknown.
        `to_zarr3` compares locations to find a write that reads its own target.
        """
        return None

    def same_keys(self, other: Store) -> bool:
        """Whether ``other`` reads and writes this store's keys: for stores without a `location`.

        This default: only the very same object.
        """
        return self is other

    def create(self, key: str, value: Value) -> bool:
        """Store ``value`` under ``key`` only if no value is there; whether it was stored.

        Atomic where `atomic_create` says so (a local file linked into
        place, a conditional PUT). This default checks, then sets: another
        writer may create the key in between, and both calls return ``True``.
        """
        self._check_writable()
        if self.exists(key):
            return False
        self.set(key, value)
        return True

    @abstractmethod
    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        """Fetch many ``(key, byte_range)`` pairs in one concurrent batch, each value with its generation.

        Returns one `Versioned` per request, in order; its value is ``None``
        for a missing key. A ``byte_range`` of ``None`` means the whole value.
        Requests are issued as given (callers coalesce ranges beforehand).

        Law: two reads that return the same non-``None`` generation read the
        same version of the value, so a shard index and byte ranges read with
        equal generations belong together. Stores learn the generation with
        the data (local files: ``fstat`` of the file read; S3: the ETag of the
        GET) or report ``None`` (unknown).
        """

    @abstractmethod
    def set(self, key: str, value: Value) -> None:
        """Store ``value`` under ``key`` atomically: readers see old or new, never a mix.

        ``value`` may be a tuple or list of pieces (see `join_value()`).
        """

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""

    @abstractmethod
    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Every key starting with ``prefix`` ('' for all keys)."""

    @abstractmethod
    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """Direct children of ``prefix``: ``(keys, prefixes)``; prefixes end with '/'."""

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes | None:
        """The value (or a range of it) under ``key`` as bytes, or ``None`` if missing."""
        return as_bytes(self.get_many_versioned([(key, byte_range)])[0].value)

    def set_many(self, items: Mapping[str, Value]) -> None:
        """Store several values; each one atomically."""
        for key, value in items.items():
            self.set(key, value)

    def delete_many(self, keys: Iterable[str]) -> None:
        """Remove several keys; missing ones are ignored."""
        for key in keys:
            self.delete(key)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every key starting with ``prefix``."""
        self.delete_many(list(self.list_prefix(validate_prefix(prefix))))

    def list(self) -> Iterator[str]:
        """Every key in the store."""
        return self.list_prefix("")

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value."""
        return self.get(key, ByteRange(0, 0)) is not None

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{self!r} is read-only")
