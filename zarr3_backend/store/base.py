"""The Store protocol: a few primitives every backend implements, the rest derived.

Keys are ``/``-separated strings relative to the store root (spec: core,
"Abstract store interface"). A missing key reads as ``None``; the
``FileNotFoundError`` of the backend becomes "missing" here and nowhere else.
The value types (:class:`ByteRange`, :class:`Versioned`, ``Value``) live in
:mod:`zarr3_backend.core.values`, shared with the codecs' read plans.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ..core.keys import validate_key as validate_key
from ..core.keys import validate_prefix as validate_prefix
from ..core.values import Buffer as Buffer
from ..core.values import ByteRange as ByteRange
from ..core.values import Generation as Generation
from ..core.values import Value as Value
from ..core.values import Versioned as Versioned
from ..core.values import join_value as join_value
from ..errors import ReadOnlyError
from .arrivals import Arrivals

Request = tuple[str, ByteRange | None]

#: Name prefix of in-flight temporary files of atomic writes; listings skip such names.
TMP_PREFIX = ".__z3tmp."


def is_temporary(name: str) -> bool:
    """Whether a file name is an in-flight (or orphaned) temporary file of an atomic write."""
    return name.startswith(TMP_PREFIX)


class Store(ABC):
    """Key/value storage for one Zarr hierarchy.

    Implementations provide :meth:`get_many`, :meth:`set`, :meth:`delete`,
    :meth:`list_prefix` and :meth:`list_dir`; everything else is derived.
    Stores must pickle (they travel inside dask graphs).

    What a store can do is declared by :attr:`io_concurrency`,
    :attr:`versioned_reads` and :attr:`event_loop`; readers use these
    members and nothing else to choose how to read.
    """

    read_only: bool = False

    @property
    def versioned_reads(self) -> bool:
        """Whether :meth:`get_many_versioned` reports a generation (not ``None``) with every value it finds."""
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
        """Whether :meth:`create` is atomic: of writers creating one key at once, exactly one succeeds."""
        return False

    @property
    def transactional(self) -> bool:
        """Whether writes land in a transaction the user commits (an Icechunk session).

        Readers of the committed state then see all of a write or none of it,
        so writers keep no records of their own (lease, pending, reservations) there.
        """
        return False

    def create(self, key: str, value: Value) -> bool:
        """Store ``value`` under ``key`` only if no value is there; whether it was stored.

        Atomic where :attr:`atomic_create` says so (a local file linked into
        place, a conditional PUT). This default checks, then sets: another
        writer may create the key in between, and both calls return ``True``.
        """
        self._check_writable()
        if self.exists(key):
            return False
        self.set(key, value)
        return True

    @property
    def event_loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop :meth:`get_many_versioned_async` runs on, or ``None`` (this default) if the store has none."""
        return None

    async def get_many_versioned_async(self, requests: Sequence[Request]) -> list[Versioned]:
        """:meth:`get_many_versioned` as a coroutine on :attr:`event_loop`; only stores that have one provide it."""
        raise NotImplementedError(f"{type(self).__name__} has no event loop to read on")

    @abstractmethod
    def get_many(self, requests: Sequence[Request]) -> list[bytes | None]:
        """Fetch many ``(key, byte_range)`` pairs in one concurrent batch.

        Returns one value per request, in order; ``None`` for a missing key.
        A ``byte_range`` of ``None`` means the whole value. Requests are
        issued as given (callers coalesce ranges beforehand).
        """

    @abstractmethod
    def set(self, key: str, value: Value) -> None:
        """Store ``value`` under ``key`` atomically: readers see old or new, never a mix.

        ``value`` may be a tuple or list of pieces (see :func:`join_value`).
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

    def fetch_each(self, requests: Sequence[Request]) -> Arrivals:
        """The values of ``requests`` as they arrive, as ``(index, value)``; ``None`` for a missing key.

        Stores that keep requests in flight send them as lanes free up, so
        :meth:`Arrivals.prefer` can still move unsent ones forward. This
        default fetches the batch with :meth:`get_many` first.
        """
        return Arrivals(enumerate(self.get_many(requests)))

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes | None:
        """The value (or a range of it) under ``key``, or ``None`` if missing."""
        return self.get_many([(key, byte_range)])[0]

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        """Like :meth:`get_many`, each value with the generation of the object it came from.

        Law: two reads that return the same non-``None`` generation read the
        same version of the value, so a shard index and byte ranges read
        with equal generations belong together. Stores that can learn the
        generation with the data (local files: ``fstat`` of the file read;
        S3: the ETag of the GET) override this at no extra request. This
        default reports ``None`` (unknown) for every value.
        """
        return [Versioned(value) for value in self.get_many(requests)]

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
