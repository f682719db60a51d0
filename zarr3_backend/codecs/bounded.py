"""Decompressing with a maximum output size, for codecs built on Python's streaming decompressors.

A chunk's metadata says how large it may decode (the chain's chunk spec);
`decompress_stream_bounded()` stops as soon as the output would pass that
size, so a small hostile chunk (a "decompression bomb") never inflates to
gigabytes. Works with ``zlib.decompressobj``, ``bz2.BZ2Decompressor`` and
``lzma.LZMADecompressor``, which share the ``decompress(data, max_length)``,
``eof`` and ``unused_data`` interface.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..errors import CodecError
from .base import Buffer, decoded_too_large


class StreamDecompressor(Protocol):
    """A standard-library streaming decompressor (``zlib.decompressobj()``, ``bz2.BZ2Decompressor``, ...)."""

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: Buffer, max_length: int, /) -> bytes: ...


def decompress_stream_bounded(
    make_decompressor: Callable[[], StreamDecompressor],
    data: Buffer,
    max_size: int,
    codec: str,
    errors: tuple[type[Exception], ...],
) -> bytes:
    """Decompress ``data`` (one or more concatenated streams) into at most ``max_size`` bytes.

    Raises `CodecError` for output larger than ``max_size``, for
    truncated data and for the decompressor's ``errors``. Trailing NUL
    padding after the last stream is ignored.

    >>> import bz2
    >>> decompress_stream_bounded(bz2.BZ2Decompressor, bz2.compress(b"ab") * 2, 4, "bz2", (OSError,))
    b'abab'
    """
    pieces: list[bytes] = []
    produced = 0
    pending: Buffer = data
    try:
        while True:
            decompressor = make_decompressor()
            piece = decompressor.decompress(pending, max_size + 1 - produced)  # never 0: that means unbounded
            produced += len(piece)
            pieces.append(piece)
            if produced > max_size:
                raise decoded_too_large(codec, f"more than {max_size}", max_size)
            if not decompressor.eof:
                raise CodecError(f"codec {codec!r}: truncated data ({memoryview(data).nbytes} bytes)")
            unused: bytes = decompressor.unused_data
            pending = unused
            if not unused.strip(b"\0"):
                return pieces[0] if len(pieces) == 1 else b"".join(pieces)
    except errors as exc:
        raise CodecError(f"codec {codec!r}: corrupt data ({memoryview(data).nbytes} bytes): {exc}") from exc
