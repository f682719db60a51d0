"""One exception hierarchy for zarr3_backend.

Every error raised on purpose is a `Zarr3Error`; each subclass also
subclasses the builtin a caller would naturally catch (``ValueError``,
``FileNotFoundError``, ``IndexError`` ...), so generic handlers keep working.
Messages say what is wrong, where (key, array path or metadata field), what
was expected and what was found.
"""

from __future__ import annotations


class Zarr3Error(Exception):
    """Base class of every error raised by zarr3_backend."""


class MetadataError(Zarr3Error, ValueError):
    """A ``zarr.json`` document (or a value for one) is malformed or invalid."""


class UnknownExtensionError(MetadataError):
    """A metadata field or extension this implementation does not understand.

    Raised for unknown data types, chunk grids, chunk key encodings, codecs
    and storage transformers unless they say ``"must_understand": false``.
    """


class UnsafeCodecError(MetadataError):
    """The metadata names a codec that can execute code when it decodes (e.g. ``numcodecs.pickle``).

    Such codecs are refused unless the user opts in; see
    `zarr3_backend.codecs.registry.allow_unsafe_codecs()`.
    """


class NodeNameError(Zarr3Error, ValueError):
    """A node name breaks the spec's rules (empty, ``/``, only periods, ``__``) or could escape the store."""


class CodecError(Zarr3Error, ValueError):
    """A chunk could not be encoded or decoded (corrupt or unsupported bytes)."""


class ChecksumError(CodecError):
    """A stored CRC32C checksum does not match the data it guards."""


class CorruptShardError(CodecError):
    """A shard is truncated or its index points outside the shard."""


class NodeNotFoundError(Zarr3Error, FileNotFoundError):
    """No array or group exists at the requested path."""

    #: Zarr stores found further below the missing path, where the raiser looked for them.
    stores_below: list[str]


class ArrayNotFoundError(NodeNotFoundError):
    """No array exists at the requested path."""


class GroupNotFoundError(NodeNotFoundError):
    """No group exists at the requested path."""


class NodeExistsError(Zarr3Error, FileExistsError):
    """A node already exists where a new one was to be created."""


class InvalidKeyError(Zarr3Error, ValueError):
    """A store key is malformed or would escape the store root."""


class ReadOnlyError(Zarr3Error, PermissionError):
    """A write was attempted on a store or array opened read-only."""


class StoreError(Zarr3Error, OSError):
    """The underlying storage failed for a reason other than a missing key."""


class ConcurrentModificationError(StoreError):
    """A value kept changing while it was read, on every attempt to read it consistently.

    Raised for a shard rewritten between reading its index and its inner
    chunks more times in a row than the read retries; reading again usually succeeds.
    """


class BoundsError(Zarr3Error, IndexError):
    """A selection lies outside the array or is otherwise not a valid index."""


class MemoryLimitError(Zarr3Error, MemoryError):
    """A read or write needs more memory than this machine has: a selection, chunk or shard index too large.

    Raised before allocating when the size is known in advance (see
    `zarr3_backend.runtime.memory_limit`), and in place of the ``MemoryError`` of
    an allocation that failed; the message names the array and what is too large.
    """


class WriteError(Zarr3Error, ValueError):
    """A ``to_zarr3`` write was refused before anything was written (encoding, region, names, append)."""


class ConcurrentWriteError(WriteError):
    """Another writer changed the arrays a ``mode="a"`` write planned from (e.g. two appends at once); not published."""


class UnfinishedWriteError(Zarr3Error, OSError):
    """A group holds a ``to_zarr3`` first write that did not finish: some of its data may be missing.

    Raised on opening it, and by writes that would build on it; the message
    names the group, its mark and the fix (re-run the write, or ``mode="w"``).
    """


class WriteTypeError(Zarr3Error, TypeError):
    """A ``to_zarr3`` argument has the wrong type (e.g. a non-string variable name, a non-mapping encoding)."""


class ArgumentError(Zarr3Error, ValueError):
    """An argument has a value zarr3_backend cannot use (an unknown mode, data that does not fit a selection)."""


class ArgumentTypeError(Zarr3Error, TypeError):
    """An argument has a type zarr3_backend cannot use (a store object, a non-JSON attribute value)."""


class WriteNotImplementedError(Zarr3Error, NotImplementedError):
    """A ``to_zarr3`` combination xarray's engine does not implement either (e.g. ``append_dim`` for a DataTree)."""


class WriteKeyError(Zarr3Error, KeyError):
    """A ``to_zarr3`` argument names something the dataset lacks (e.g. ``encoding`` for a variable it does not have)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RegionKeyError(WriteKeyError):
    """``region="auto"``: coordinate values to write are missing from the stored coordinate."""


class SettingError(Zarr3Error, ValueError):
    """An environment setting (``ZARR3_BACKEND_*``) has a value zarr3_backend cannot use (``nan``, ``abc``, ``-1``)."""


class ScratchBufferError(Zarr3Error, RuntimeError):
    """A thread asked for its scratch buffer while that buffer was still lent (a bug in zarr3_backend).

    See `zarr3_backend.runtime.scratch.borrow()`: a second borrow would alias the first one's data.
    """


def with_location(exc: Zarr3Error, where: str) -> Zarr3Error:
    """``exc`` with ``where`` (a key or array path) at the start of its message."""
    message = str(exc)
    if message.startswith(where):
        return exc
    return type(exc)(f"{where}: {message}")
