"""The ``blosc`` codec: the c-blosc meta-compressor (shuffle + block compression).

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/blosc/

    {"name": "blosc", "configuration": {"typesize": 4, "cname": "zstd", "clevel": 5,
                                        "shuffle": "shuffle", "blocksize": 0}}

``typesize`` and ``shuffle`` may be left unset (``None``); `BloscCodec.evolve()`
then records the element size of the chunk's data type and ``"bitshuffle"``
for one-byte types or ``"shuffle"`` otherwise, as zarr-python does. Members
are written in zarr-python's order.

Threads (verified against numcodecs 0.16): ``numcodecs.blosc.compress`` and
``decompress`` release the GIL. With ``numcodecs.blosc.use_threads`` at its
default ``None`` (this module never changes it), a call from the main thread
of the main process uses blosc's global context and its internal thread
pool (``blosc.set_nthreads``; compress holds a lock around it), while a call
from any other thread, or from a forked or child process, uses a private
context with one blosc thread, so an executor's worker threads run in
parallel. Importing zarr-python sets ``use_threads = False``, which sends
every call down the private single-thread path.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, cast

import numcodecs.blosc

from ..errors import CodecError
from .base import Buffer, BytesBytesCodec, ChunkSpec, decoded_too_large
from .registry import parse_config_choice, parse_config_int, register_codec

CName = Literal["lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib"]
Shuffle = Literal["noshuffle", "shuffle", "bitshuffle"]
CNAMES: tuple[CName, ...] = ("lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib")
SHUFFLES: dict[Shuffle, int] = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
HEADER_SIZE = 16


@dataclass(frozen=True)
class BloscCodec(BytesBytesCodec):
    """Blosc with compressor ``cname`` at ``clevel`` (0-9) after ``shuffle`` over ``typesize`` bytes."""

    name: ClassVar[str] = "blosc"
    typesize: int | None = None
    cname: CName = "zstd"
    clevel: int = 5
    shuffle: Shuffle | None = None
    blocksize: int = 0

    def __post_init__(self) -> None:
        if self.typesize is not None:
            parse_config_int(self.name, "typesize", self.typesize, 1)
        parse_config_choice(self.name, "cname", self.cname, CNAMES)
        parse_config_int(self.name, "clevel", self.clevel, 0, 9)
        if self.shuffle is not None:
            parse_config_choice(self.name, "shuffle", self.shuffle, SHUFFLES)
        parse_config_int(self.name, "blocksize", self.blocksize, 0)

    def _configuration(self) -> dict[str, Any]:
        return {key: value for key, value in vars(self).items() if value is not None}

    def _filled(self, spec: ChunkSpec) -> tuple[int, Shuffle]:
        """``typesize`` and ``shuffle`` as recorded, else from ``spec`` (element size, 1 for variable-length types)."""
        item_size = spec.data_type.item_size or 1
        typesize = item_size if self.typesize is None else self.typesize
        shuffle: Shuffle = self.shuffle or ("bitshuffle" if item_size == 1 else "shuffle")
        return typesize, shuffle

    def evolve(self, spec: ChunkSpec) -> BloscCodec:
        """Fill ``typesize`` and ``shuffle``."""
        typesize, shuffle = self._filled(spec)
        if (typesize, shuffle) == (self.typesize, self.shuffle):
            return self
        return replace(self, typesize=typesize, shuffle=shuffle)

    def validate(self, spec: ChunkSpec) -> None:
        if self.shuffle is None or (self.typesize is None and self.shuffle != "noshuffle"):
            raise CodecError(
                "codec 'blosc': shuffle and typesize must be recorded in the metadata "
                f"(got shuffle={self.shuffle!r}, typesize={self.typesize!r}); evolve the codec for the array first"
            )

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        typesize, shuffle = self._filled(spec)
        try:
            compressed = numcodecs.blosc.compress(
                data,
                self.cname.encode("ascii"),
                self.clevel,
                SHUFFLES[shuffle],
                self.blocksize,
                typesize=typesize,
            )
            return cast(Buffer, compressed)
        except (RuntimeError, ValueError) as exc:
            raise CodecError(
                f"codec 'blosc': cannot compress {memoryview(data).nbytes} bytes: {exc}"
            ) from exc

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        out = bytearray(_decoded_size(data))
        self._decompress(data, out)
        return out

    def decode_bounded(self, data: Buffer, spec: ChunkSpec, max_size: int | None) -> Buffer:
        """`decode()`, after checking the size the header claims against ``max_size``."""
        return decompress_bounded(data, max_size, self.name)

    def max_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        return input_size + int(numcodecs.blosc.MAX_OVERHEAD)

    def decode_into(self, data: Buffer, spec: ChunkSpec, out: memoryview) -> bool:
        """Decompress straight into ``out``; always supported."""
        size = _decoded_size(data)
        if size != out.nbytes:
            raise CodecError(
                f"codec 'blosc': the header records {size} decoded bytes, but {out.nbytes} were expected"
            )
        self._decompress(data, out)
        return True

    @staticmethod
    def _decompress(data: Buffer, out: Buffer) -> None:
        _decompress(data, out)


def decompress_bounded(data: Buffer, max_size: int | None, codec: str = "blosc") -> Buffer:
    """Decompress blosc ``data`` whose header must claim at most ``max_size`` decoded bytes."""
    size = _decoded_size(data)
    if max_size is not None and size > max_size:
        raise decoded_too_large(codec, size, max_size)
    out = bytearray(size)
    _decompress(data, out)
    return out


def _decompress(data: Buffer, out: Buffer) -> None:
    try:
        numcodecs.blosc.decompress(data, out)
    except (RuntimeError, ValueError) as exc:
        raise CodecError(f"codec 'blosc': corrupt data ({memoryview(data).nbytes} bytes): {exc}") from exc


def _decoded_size(data: Buffer) -> int:
    """Decoded size from the 16-byte blosc header, after checking the compressed size it records."""
    header = bytes(memoryview(data).cast("B")[:HEADER_SIZE])
    nbytes = memoryview(data).nbytes
    if len(header) < HEADER_SIZE:
        raise CodecError(
            f"codec 'blosc': {nbytes} bytes is too short for the {HEADER_SIZE}-byte blosc header"
        )
    compressed = int.from_bytes(header[12:16], "little")
    if compressed != nbytes:
        raise CodecError(
            f"codec 'blosc': the header records {compressed} compressed bytes, "
            f"but {nbytes} were given (truncated or corrupt)"
        )
    decoded = int.from_bytes(header[4:8], "little")
    if decoded > numcodecs.blosc.MAX_BUFFERSIZE:
        raise CodecError(
            f"codec 'blosc': the header records {decoded} decoded bytes, more than blosc allows (corrupt)"
        )
    return decoded


register_codec(BloscCodec)
