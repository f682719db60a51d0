"""Ranged reads from object stores: the range to ask for, and checking that the answer is exactly that range.

A range that counts from the end (a negative ``end``) is resolved against the
value's size first. A server may answer a ``Range`` request with the whole
object, a shifted or shorter range, or a 416 when the range starts past the
end; these helpers turn such answers into the bytes asked for or a
`StoreError`.

>>> resolve_range(ByteRange(-3, -1), 10)
ByteRange(start=7, end=9)
>>> http_range(ByteRange(2, 5)), http_range(ByteRange.suffix(3))
('bytes=2-4', 'bytes=-3')
>>> check_content_range("k", ByteRange(2, 5), b"cde", "bytes 2-4/10")
b'cde'
"""

from __future__ import annotations

import errno
import re

from ..errors import StoreError
from .base import ByteRange

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


def needs_size(byte_range: ByteRange) -> bool:
    """Whether ``byte_range`` can only be asked for once the value's size is known (a negative ``end``)."""
    end = byte_range.end
    return end is not None and (end < 0 or byte_range.start < 0)


def is_empty(byte_range: ByteRange) -> bool:
    """Whether ``byte_range`` reads no bytes of any value (its ``end`` is at or before its ``start``)."""
    return byte_range.end is not None and 0 <= byte_range.end <= byte_range.start


def resolve_range(byte_range: ByteRange, size: int) -> ByteRange:
    """The plain ``[start, stop)`` range that ``byte_range`` reads from a value of ``size`` bytes."""
    start, stop, _ = byte_range.slice().indices(size)
    return ByteRange(start, max(start, stop))


def is_unsatisfiable(exc: BaseException) -> bool:
    """Whether ``exc`` says the range starts past the end: S3 ``InvalidRange`` or HTTP 416."""
    if getattr(exc, "status", None) == 416:
        return True
    return isinstance(exc, OSError) and exc.errno == errno.EINVAL and "range" in str(exc).lower()


def http_range(byte_range: ByteRange) -> str:
    """The HTTP ``Range`` header of a non-empty range that needs no size."""
    if byte_range.is_suffix:
        return f"bytes={byte_range.start}"
    return f"bytes={byte_range.start}-{'' if byte_range.end is None else byte_range.end - 1}"


def expected_length(byte_range: ByteRange, received: int) -> int | None:
    """The body length a read of ``byte_range`` must have, when ``received`` bytes tell; ``None``: it takes the size.

    A range of known length (or a suffix) is complete at that length, and a
    longer body is never right; a shorter one is right only if the value ends
    there, and a range open at the end always needs the size.
    """
    asked = (
        -byte_range.start
        if byte_range.is_suffix
        else None
        if byte_range.end is None
        else byte_range.end - byte_range.start
    )
    if asked is None or received < asked:
        return None
    return asked


def span_length(byte_range: ByteRange, size: int) -> int:
    """How many bytes ``byte_range`` reads from a value of ``size`` bytes."""
    start, stop, _ = byte_range.slice().indices(size)
    return max(0, stop - start)


def check_length(path: str, byte_range: ByteRange, data: bytes, expected: int) -> bytes:
    """``data``, read from ``path``, if it is ``expected`` bytes long; else `StoreError`."""
    if len(data) != expected:
        raise StoreError(
            f"could not read {path!r}: asked for {http_range(byte_range)} ({expected} bytes), "
            f"the server answered {len(data)} bytes"
        )
    return data


def check_content_range(
    path: str, byte_range: ByteRange, data: bytes, content_range: str | int | None
) -> bytes:
    """The bytes ``byte_range`` reads, from an answer whose ``Content-Range`` is ``content_range``.

    A ``Content-Range`` must name exactly those bytes, and ``data`` hold them
    all. An answer without one (an int: its ``Content-Length``) is the whole
    object: the range is sliced out of it when its length is that of the body.
    Anything else raises `StoreError`.
    """
    if isinstance(content_range, int) and content_range == len(data):
        return data[byte_range.slice()]
    match = _CONTENT_RANGE.fullmatch(content_range) if isinstance(content_range, str) else None
    if match is None:
        raise StoreError(
            f"could not read {path!r}: asked for {http_range(byte_range)}, the server answered "
            f"{'an incomplete whole object' if content_range is not None else 'without a Content-Range'}"
        )
    first, last, size = (int(group) for group in match.groups())
    start, stop, _ = byte_range.slice().indices(size)
    if (first, last + 1) != (start, stop) or len(data) != stop - start:
        raise StoreError(
            f"could not read {path!r}: asked for bytes {start}-{stop - 1} of {size}, the server answered "
            f"{content_range!r} with {len(data)} bytes"
        )
    return data
