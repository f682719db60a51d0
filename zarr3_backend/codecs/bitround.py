"""The ``bitround`` codec: round floats to ``keepbits`` mantissa bits, integers to ``keepbits`` significant bits.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/bitround

    {"name": "bitround", "configuration": {"keepbits": 10}}

Floats use numcodecs' algorithm bit for bit (round half to even on the bit
pattern, viewed as a signed integer of the same width); ``numcodecs.bitround``
is the registry's alias for it and is written back under that name. Integers
keep ``keepbits`` bits from their most significant set bit, rounding half to
even and saturating at the type's maximum (the registry's ``uint8`` sample:
``123 -> 128``, ``255 -> 224``); a signed integer is rounded by its magnitude
and keeps its sign. Decoding is the identity, so partial reads (of a shard's
inner chunks, say) pass straight through this codec. ``keepbits`` beyond the
mantissa (or the integer width) is a `CodecError` for the data type at hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import CodecError
from .base import ArrayArrayCodec, ChunkSpec
from .registry import parse_config_int, register_codec

#: Mantissa bits of the float types (numcodecs' ``max_bits``).
MANTISSA_BITS = {2: 10, 4: 23, 8: 52}


@dataclass(frozen=True)
class BitroundCodec(ArrayArrayCodec):
    """Keep ``keepbits`` bits of each value's mantissa (floats) or significant bits (integers)."""

    name: ClassVar[str] = "bitround"
    keepbits: int

    def __post_init__(self) -> None:
        parse_config_int(self.name, "keepbits", self.keepbits, 0)

    def validate(self, spec: ChunkSpec) -> None:
        _kept_bits(self.name, self.keepbits, spec.dtype)

    def resolve_spec(self, spec: ChunkSpec) -> ChunkSpec:
        self.validate(spec)
        return spec

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        available = _kept_bits(self.name, self.keepbits, chunk.dtype)
        if chunk.dtype.kind == "f":
            return round_float_bits(chunk, self.keepbits, available)
        if chunk.dtype.kind == "c":
            parts = np.ascontiguousarray(chunk).view(chunk.real.dtype)
            return round_float_bits(parts, self.keepbits, available).view(chunk.dtype)
        return round_int_bits(chunk, self.keepbits)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return chunk

    def decodes_as_identity(self) -> bool:
        return True


@dataclass(frozen=True)
class NumcodecsBitroundCodec(BitroundCodec):
    """``numcodecs.bitround``: the registry's deprecated alias of `BitroundCodec`, kept under its name."""

    name: ClassVar[str] = "numcodecs.bitround"


def _kept_bits(codec: str, keepbits: int, dtype: np.dtype) -> int:
    """The bits ``keepbits`` may be at most for ``dtype``; `CodecError` if it is more or the type is not numeric."""
    if dtype.kind in "fc":
        available = MANTISSA_BITS.get(dtype.itemsize // (2 if dtype.kind == "c" else 1))
    elif dtype.kind in "iumM":
        available = dtype.itemsize * 8 - (1 if dtype.kind in "imM" else 0)
    else:
        available = None
    if available is None:
        raise CodecError(f"codec {codec!r} needs an integer or floating-point data type, got {dtype}")
    if keepbits > available:
        raise CodecError(
            f"codec {codec!r}: configuration.keepbits {keepbits} is out of range for {dtype}: "
            f"it has {available} bits to keep; choose keepbits in 0..{available}"
        )
    return available


def round_float_bits(values: np.ndarray, keepbits: int, mantissa: int) -> np.ndarray:
    """numcodecs' ``BitRound.encode``: ``values`` rounded to ``keepbits`` mantissa bits, a new array."""
    if keepbits == mantissa:
        return values
    bits = np.array(values, dtype=values.dtype).view(f"i{values.dtype.itemsize}")
    maskbits = mantissa - keepbits
    mask = (np.array(-1, bits.dtype) >> maskbits) << maskbits
    bits += ((bits >> maskbits) & 1) + ((1 << (maskbits - 1)) - 1)
    bits &= mask
    return bits.view(values.dtype)


def round_int_bits(values: np.ndarray, keepbits: int) -> np.ndarray:
    """Integers rounded to ``keepbits`` bits from their most significant set bit (see the module docstring).

    ``keepbits=0`` rounds to a power of two, as it does for floats; ``NaT`` stays ``NaT``.
    """
    signed = values.dtype.kind in "imM"
    ints = values.view(f"i{values.dtype.itemsize}") if signed else values
    top = np.uint64((1 << (values.dtype.itemsize * 8 - (1 if signed else 0))) - 1)  # int8: 127, uint8: 255
    magnitude = np.abs(ints.astype(np.int64)).astype(np.uint64) if signed else ints.astype(np.uint64)
    magnitude = np.minimum(magnitude, top)  # int64's -2**63 has no positive counterpart
    length = _bit_length(magnitude)
    maskbits = np.where(length > keepbits, length - np.uint64(keepbits), np.uint64(0))
    half = np.where(
        maskbits > 0, (np.uint64(1) << (np.maximum(maskbits, 1) - np.uint64(1))) - np.uint64(1), 0
    )
    step = np.where(maskbits > 0, ((magnitude >> maskbits) & np.uint64(1)) + half.astype(np.uint64), 0)
    rounded = np.where(step > top - magnitude, top, magnitude + step)  # saturating, without wrapping
    rounded = (rounded >> maskbits) << maskbits
    if not signed:
        return rounded.astype(values.dtype)
    out = np.where(ints < 0, -rounded.astype(np.int64), rounded.astype(np.int64)).astype(ints.dtype)
    if values.dtype.kind in "mM":
        out = np.where(np.isnat(values), ints, out)
    return out.view(values.dtype)


def _bit_length(values: np.ndarray) -> np.ndarray:
    """The bit length of each unsigned 64-bit value (0 for 0)."""
    length = np.zeros(values.shape, np.uint64)
    remaining = values.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        high = remaining >= (np.uint64(1) << np.uint64(shift))
        length += np.where(high, np.uint64(shift), np.uint64(0))
        remaining = np.where(high, remaining >> np.uint64(shift), remaining)
    return length + (remaining > 0)


register_codec(BitroundCodec)
register_codec(NumcodecsBitroundCodec)
