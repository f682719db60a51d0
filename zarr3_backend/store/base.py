"""The Store protocol: a few primitives every backend implements, the rest derived.

Keys are ``/``-separated strings relative to the store root (spec: core,
"Abstract store interface"). A missing key reads as ``None``; the
``FileNotFoundError`` of the backend becomes "missing" here and nowhere else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ..errors import InvalidKeyError, ReadOnlyError

Buffer = bytes | bytearray | memoryview
#: A value to store: one buffer, or consecutive pieces (a tuple or list of buffers)
#: that backends write without joining where they can.
Value = Buffer | Sequence[Buffer]


def join_value(value: Value) -> bytes:
    """The bytes of a value given as one buffer or as consecutive pieces.

    >>> join_value((b"ab", memoryview(b"cd")))
    b'abcd'
    """
    return b"".join(value) if isinstance(value, list | tuple) else bytes(value)


@dataclass(frozen=True)
class ByteRange:
    """A byte range of a value, with Python slice semantics.

    ``ByteRange(start, end)`` is ``value[start:end]``; ``end=None`` reads to
    the end; a negative ``start`` with ``end=None`` is a suffix (the last
    ``-start`` bytes).

    >>> ByteRange(0, 4), ByteRange.suffix(16)
    (ByteRange(start=0, end=4), ByteRange(start=-16, end=None))
    """

    start: int
    end: int | None = None

    @classmethod
    def suffix(cls, length: int) -> ByteRange:
        """The last ``length`` bytes."""
        return cls(-length, None)

    @property
    def is_suffix(self) -> bool:
        return self.start < 0

    def slice(self) -> slice:
        return slice(self.start, self.end)


Request = tuple[str, ByteRange | None]
#: Identifies one version of a stored value (tensorstore calls it a storage generation):
#: equal generations mean the same bytes. Opaque; compare only with ``==``.
Generation = Hashable


@dataclass(frozen=True)
class Versioned:
    """A value (or a range of it) together with the generation of the object it was read from.

    ``generation`` is ``None`` when the value is missing or the store cannot
    tell which version it read. A store that reports generations reads the
    bytes and the generation from the same version, atomically.

    >>> Versioned(b"ab", ("inode", 7)).generation
    ('inode', 7)
    """

    value: bytes | None
    generation: Generation | None = None


def validate_key(key: str) -> str:
    """Return ``key`` if it is a safe store key, else raise :class:`InvalidKeyError`.

    Refused: empty keys, a leading ``/``, backslashes, and ``.``/``..``
    segments (they could escape the store root).
    """
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(f"store key must be a non-empty string, got {key!r}")
    if key.startswith("/") or "\\" in key or key.endswith("/"):
        raise InvalidKeyError(f"store key {key!r} must be relative, use '/' separators and not end with '/'")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise InvalidKeyError(f"store key {key!r} has an empty, '.' or '..' segment")
    return key


def validate_prefix(prefix: str) -> str:
    """Return ``prefix`` ('' or ending in '/') if safe, else raise :class:`InvalidKeyError`."""
    if prefix == "":
        return prefix
    if not prefix.endswith("/"):
        raise InvalidKeyError(f"store prefix {prefix!r} must be empty or end with '/'")
    validate_key(prefix[:-1])
    return prefix


class Store(ABC):
    """Key/value storage for one Zarr hierarchy.

    Implementations provide :meth:`get_many`, :meth:`set`, :meth:`delete`,
    :meth:`list_prefix` and :meth:`list_dir`; everything else is derived.
    Stores must pickle (they travel inside dask graphs).
    """

    read_only: bool = False

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
