"""Plain value types that codecs and stores exchange: buffers, byte ranges, versioned values.

They sit below both: a codec's sans-I/O read plan asks for `ByteRange`
pieces of a stored value and receives `Versioned` values, and a
partial write returns a `Value`, without either side knowing the other.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

Buffer = bytes | bytearray | memoryview
#: A value to store: one buffer, or consecutive pieces (a tuple or list of buffers)
#: that backends write without joining where they can.
Value = Buffer | Sequence[Buffer]
#: Identifies one version of a stored value (tensorstore calls it a storage generation):
#: equal generations mean the same bytes. Opaque; compare only with ``==``.
Generation = Hashable


def join_value(value: Value) -> bytes:
    """The bytes of a value given as one buffer or as consecutive pieces.

    >>> join_value((b"ab", memoryview(b"cd")))
    b'abcd'
    """
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return b"".join(value)


def one_buffer(value: Value) -> Buffer:
    """``value`` as one buffer: itself, or its pieces joined."""
    return value if isinstance(value, bytes | bytearray | memoryview) else join_value(value)


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


@dataclass(frozen=True)
class UniqueGeneration:
    """A generation that no other write of its key ever has (an object version id): equal ones prove the bytes unchanged.

    Other generations may be reused by a rewrite (an ETag per key, a size with a
    one-second time), so equal ones only make "unchanged" likely; a reader that
    keeps what it learnt of a value (a shard index) checks it against the value
    again unless its generation is one of these (see `proves_unchanged()`).

    >>> proves_unchanged(UniqueGeneration("v1")), proves_unchanged(("etag", 5))
    (True, False)
    """

    token: Hashable


def proves_unchanged(generation: Generation | None) -> bool:
    """Whether two reads of a key with the equal generation ``generation`` surely read the same bytes."""
    return isinstance(generation, UniqueGeneration)


@dataclass(frozen=True)
class Versioned:
    """A value (or a range of it) together with the generation of the object it was read from.

    ``generation`` is ``None`` when the value is missing or the store cannot
    tell which version it read. A store that reports generations reads the
    bytes and the generation from the same version, atomically.

    >>> Versioned(b"ab", ("inode", 7)).generation
    ('inode', 7)
    """

    value: Buffer | None
    generation: Generation | None = None


def as_bytes(value: Buffer | None) -> bytes | None:
    """A `Versioned` value as ``bytes`` (other buffers copied; bytes as they are)."""
    return None if value is None else bytes(value)
