"""The ``default`` and ``v2`` chunk key encodings: grid index <-> store key.

Specs: https://zarr-specs.readthedocs.io/en/latest/v3/chunk-key-encodings/default/
and https://zarr-specs.readthedocs.io/en/latest/v3/chunk-key-encodings/v2/

.. code-block:: json

    {"name": "default", "configuration": {"separator": "/"}}

``default`` keys look like ``c/1/0`` (``c`` for a 0-d array); ``v2`` keys
like ``1.0`` (``0`` for a 0-d array). Keys are relative to the array's path.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..errors import InvalidKeyError, MetadataError, UnknownExtensionError
from .extension import parse_extension

Separator = Literal["/", "."]


def parse_separator(obj: object) -> Separator:
    """Return ``obj`` if it is a valid separator, else raise `MetadataError`.

    >>> parse_separator(".")
    '.'
    """
    if obj == "/":
        return "/"
    if obj == ".":
        return "."
    raise MetadataError(f"chunk_key_encoding.configuration.separator: expected '/' or '.', got {obj!r}")


def _is_decimal(part: str) -> bool:
    """Canonical ASCII decimal (no sign, no leading zeros), as the encoders write it."""
    return part.isascii() and part.isdigit() and (part == "0" or not part.startswith("0"))


@dataclass(frozen=True)
class ChunkKeyEncoding(ABC):
    """Maps chunk grid indices to store keys and back.

    Law: ``decode_chunk_key(encode_chunk_key(c), len(c)) == c``.
    """

    separator: Separator
    name: ClassVar[str]

    def __post_init__(self) -> None:
        parse_separator(self.separator)

    def to_json(self) -> dict[str, Any]:
        """The encoding as written in ``zarr.json`` (always with its configuration)."""
        return {"name": self.name, "configuration": {"separator": self.separator}}

    @abstractmethod
    def encode_chunk_key(self, coords: Sequence[int]) -> str:
        """The store key (relative to the array) of the chunk at grid index ``coords``."""

    def decode_chunk_key(self, key: str, ndim: int | None = None) -> tuple[int, ...]:
        """The grid index stored under ``key``; `InvalidKeyError` if it is no chunk key.

        Pass ``ndim`` to also check the number of dimensions (needed to tell
        the 0-d ``v2`` key ``"0"`` from a 1-d one).
        """
        parts = self._index_parts(key, ndim)
        if parts is None or not all(_is_decimal(p) for p in parts) or (ndim not in (None, len(parts))):
            raise InvalidKeyError(
                f"{key!r} is not a {self.name!r} chunk key with separator {self.separator!r}"
                + (f" for a {ndim}-d array" if ndim is not None else "")
            )
        return tuple(int(p) for p in parts)

    @abstractmethod
    def _index_parts(self, key: str, ndim: int | None) -> list[str] | None:
        """The index strings of ``key`` (not yet validated); ``None`` if the layout is wrong."""


@dataclass(frozen=True)
class DefaultChunkKeyEncoding(ChunkKeyEncoding):
    """``c`` followed by ``separator + index`` per dimension.

    >>> DefaultChunkKeyEncoding().encode_chunk_key((1, 23, 45))
    'c/1/23/45'
    >>> DefaultChunkKeyEncoding(".").decode_chunk_key("c.1.0")
    (1, 0)
    """

    separator: Separator = "/"
    name: ClassVar[str] = "default"

    def encode_chunk_key(self, coords: Sequence[int]) -> str:
        if not coords:
            return "c"
        return "c" + self.separator + self.separator.join(map(str, map(int, coords)))

    def _index_parts(self, key: str, ndim: int | None) -> list[str] | None:
        if key == "c":
            return []
        if not key.startswith("c" + self.separator):
            return None
        return key[2:].split(self.separator)


@dataclass(frozen=True)
class V2ChunkKeyEncoding(ChunkKeyEncoding):
    """Indices joined by ``separator``; ``"0"`` for a 0-d array.

    >>> V2ChunkKeyEncoding().encode_chunk_key((1, 23, 45))
    '1.23.45'
    >>> V2ChunkKeyEncoding().encode_chunk_key(())
    '0'
    """

    separator: Separator = "."
    name: ClassVar[str] = "v2"

    def encode_chunk_key(self, coords: Sequence[int]) -> str:
        return self.separator.join(str(int(k)) for k in coords) if len(coords) else "0"

    def _index_parts(self, key: str, ndim: int | None) -> list[str] | None:
        if ndim == 0:
            return [] if key == "0" else None
        return key.split(self.separator)


_ENCODINGS: dict[str, type[DefaultChunkKeyEncoding] | type[V2ChunkKeyEncoding]] = {
    cls.name: cls for cls in (DefaultChunkKeyEncoding, V2ChunkKeyEncoding)
}


def parse_chunk_key_encoding(obj: object) -> ChunkKeyEncoding:
    """Build an encoding from JSON, a short-hand name, or pass an encoding through.

    >>> parse_chunk_key_encoding("v2")
    V2ChunkKeyEncoding(separator='.')
    >>> parse_chunk_key_encoding({"name": "default", "configuration": {"separator": "."}})
    DefaultChunkKeyEncoding(separator='.')
    """
    if isinstance(obj, ChunkKeyEncoding):
        return obj
    extension = parse_extension(obj, "chunk_key_encoding", may_be_optional=False)
    name, configuration = extension.name, extension.configuration
    if name not in _ENCODINGS:
        raise UnknownExtensionError(
            f"chunk_key_encoding: unknown chunk key encoding {name!r}; supported: {sorted(_ENCODINGS)}"
        )
    extra = set(configuration) - {"separator"}
    if extra:
        raise MetadataError(f"chunk_key_encoding.configuration: unexpected members {sorted(extra)}")
    cls = _ENCODINGS[name]
    if "separator" not in configuration:
        return cls()
    return cls(parse_separator(configuration["separator"]))
