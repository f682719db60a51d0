"""The ``zfp`` codec: zfp compression of 1-4 dimensional chunks, without zfp's stream header.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/zfp

    {"name": "zfp", "configuration": {"mode": "fixed_accuracy", "tolerance": 0.05}}

Needs ``zfpy`` (the ``zfp`` extra). Modes: ``reversible``, ``fixed_rate``
(``rate``), ``fixed_precision`` (``precision``), ``fixed_accuracy``
(``tolerance``) and ``expert`` (``minbits``, ``maxbits``, ``maxprec``,
``minexp``). The stored stream is zfp's own without a header, as
``zfpy.compress_numpy(..., write_header=False)`` writes it; to decode, the
header zfpy needs is rebuilt from the chunk's shape, data type and the
configuration. zfpy cannot write expert mode, so ``expert`` chunks are read
but writing them is a `CodecError`. Data types: ``int32``, ``int64``,
``float32``, ``float64``; ``float16`` through ``float32``; ``int8``,
``int16``, ``uint8``, ``uint16`` promoted to ``int32`` with zfp's
``zfp_promote_*`` rules. A 0-d chunk is a 1-d field of one value; more than
four dimensions is a `CodecError`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import Any, ClassVar, Literal

import numpy as np

from ..errors import CodecError, MetadataError
from .base import ArrayBytesCodec, Buffer, ChunkSpec
from .registry import parse_config_choice, parse_config_int, register_codec

Mode = Literal["reversible", "expert", "fixed_accuracy", "fixed_rate", "fixed_precision"]
#: The configuration members of each mode, besides ``mode``.
MODE_MEMBERS: dict[str, tuple[str, ...]] = {
    "reversible": (),
    "expert": ("minbits", "maxbits", "maxprec", "minexp"),
    "fixed_accuracy": ("tolerance",),
    "fixed_rate": ("rate",),
    "fixed_precision": ("precision",),
}
_SHORT_HEADER_BITS = 96  # magic (32) + field (52) + a 12-bit mode
_META_BITS = 84
_NATIVE = frozenset({"int32", "int64", "float32", "float64"})
_PROMOTED = {"int8": 8, "int16": 16, "uint8": 8, "uint16": 16}


@dataclass(frozen=True)
class ZfpCodec(ArrayBytesCodec):
    """zfp-compress each chunk in ``mode`` with that mode's parameters."""

    name: ClassVar[str] = "zfp"
    mode: Mode
    tolerance: float | None = None
    rate: float | None = None
    precision: int | None = None
    minbits: int | None = None
    maxbits: int | None = None
    maxprec: int | None = None
    minexp: int | None = None

    def __post_init__(self) -> None:
        parse_config_choice(self.name, "mode", self.mode, MODE_MEMBERS)
        wanted = MODE_MEMBERS[self.mode]
        given = {
            m
            for m in ("tolerance", "rate", "precision", *MODE_MEMBERS["expert"])
            if getattr(self, m) is not None
        }
        if given != set(wanted):
            raise MetadataError(
                f"codec 'zfp': mode {self.mode!r} takes {list(wanted) or 'no other members'}, got {sorted(given)}"
            )
        for member in ("precision", "minbits", "maxbits", "maxprec"):
            if getattr(self, member) is not None:
                parse_config_int(self.name, member, getattr(self, member), 0)
        if self.minexp is not None:
            parse_config_int(self.name, "minexp", self.minexp)
        for member in ("tolerance", "rate"):
            value = getattr(self, member)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or value < 0
            ):
                raise MetadataError(
                    f"codec 'zfp': configuration.{member}: expected a number >= 0, got {value!r}"
                )

    def _configuration(self) -> dict[str, Any]:
        return {"mode": self.mode, **{m: getattr(self, m) for m in MODE_MEMBERS[self.mode]}}

    def validate(self, spec: ChunkSpec) -> None:
        _zfpy()
        if spec.data_type.name not in _NATIVE | set(_PROMOTED) | {"float16"}:
            raise CodecError(
                f"codec 'zfp' cannot encode data type {spec.data_type.name!r}; it takes int32, int64, float32, "
                "float64, and float16, int8, int16, uint8, uint16 through promotion"
            )
        if len(spec.shape) > 4:
            raise CodecError(
                f"codec 'zfp': chunks of {len(spec.shape)} dimensions (shape {spec.shape}); zfp takes 1-4"
            )

    def _parameters(self) -> dict[str, float]:
        keys = {"fixed_accuracy": "tolerance", "fixed_rate": "rate", "fixed_precision": "precision"}
        return {keys[self.mode]: getattr(self, keys[self.mode])} if self.mode in keys else {}

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        if self.mode == "expert":
            raise CodecError(
                "codec 'zfp': zfpy cannot write expert mode (it is read only here); choose reversible, "
                "fixed_rate, fixed_precision or fixed_accuracy"
            )
        field = _promote(np.ascontiguousarray(chunk).reshape(_field_shape(spec.shape)), spec.data_type.name)
        return bytes(_zfpy().compress_numpy(field, write_header=False, **self._parameters()))

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        field_dtype = _field_dtype(spec.data_type.name)
        header, header_bits = _header(self, _field_shape(spec.shape), field_dtype.str)
        payload = bytes(memoryview(data).cast("B"))
        # zfp reads its stream without bounds checks: zero-pad a short (truncated, hostile) chunk to more
        # than any field of this size can need, so decoding never reads past the buffer
        payload += bytes(max(8, 2 * spec.size * field_dtype.itemsize + 1024 - len(payload)))
        if header_bits == _SHORT_HEADER_BITS:
            stream = header.to_bytes(12, "little") + payload
        else:  # a 148-bit header: shift the stream behind it
            joined = header | int.from_bytes(payload, "little") << header_bits
            stream = joined.to_bytes(len(payload) + 24, "little")
        try:
            field = _zfpy().decompress_numpy(stream)
        except Exception as exc:
            raise CodecError(f"codec 'zfp': the chunk does not decompress ({exc}): corrupt data?") from exc
        if field.size != spec.size:
            raise CodecError(f"codec 'zfp': the chunk decoded to {field.size} values, expected {spec.size}")
        return _demote(field, spec.data_type.name).reshape(spec.shape).astype(spec.dtype, copy=False)


def _zfpy() -> ModuleType:
    try:
        return importlib.import_module("zfpy")
    except ImportError as exc:
        raise CodecError("codec 'zfp' needs the zfpy package: pip install 'zarr3_backend[zfp]'") from exc


def _field_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape or (1,)


def _field_dtype(name: str) -> np.dtype:
    if name in _PROMOTED:
        return np.dtype(np.int32)
    return np.dtype(np.float32 if name == "float16" else name)


def _promote(values: np.ndarray, name: str) -> np.ndarray:
    """zfp's ``zfp_promote_*``: small ints into the top bits of an int32; float16 as float32."""
    if name in _PROMOTED:
        bits = _PROMOTED[name]
        ints = values.astype(np.int32) - (1 << (bits - 1) if name.startswith("u") else 0)
        return ints << (31 - bits)
    return values.astype(np.float32) if name == "float16" else values


def _demote(values: np.ndarray, name: str) -> np.ndarray:
    """zfp's ``zfp_demote_*`` (clamped), undoing `_promote`."""
    if name not in _PROMOTED:
        return values
    bits, unsigned = _PROMOTED[name], name.startswith("u")
    shifted = (values >> (31 - bits)) + (1 << (bits - 1) if unsigned else 0)
    low, high = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return np.asarray(np.clip(shifted, low, high))


@lru_cache(maxsize=64)
def _header(codec: ZfpCodec, shape: tuple[int, ...], dtype: str) -> tuple[int, int]:
    """The zfp stream header for fields of ``shape`` and ``dtype`` in ``codec``'s mode, and its length in bits."""
    zfpy = _zfpy()
    template = codec if codec.mode != "expert" else ZfpCodec("reversible")
    with_header = zfpy.compress_numpy(np.zeros(shape, dtype), write_header=True, **template._parameters())
    header = int.from_bytes(with_header[:12], "little")
    if codec.mode != "expert":
        return header, _SHORT_HEADER_BITS
    return header & ((1 << _META_BITS) - 1) | _expert_mode(codec) << _META_BITS, _META_BITS + 64


def _expert_mode(codec: ZfpCodec) -> int:
    """The 64-bit mode word of zfp's ``zfp_stream_mode`` for expert parameters."""
    mode = 0
    fields = (
        (min(max(0, int(codec.minexp or 0) + 16495), 0x7FFF), 15),
        (max(1, min(int(codec.maxprec or 0), 0x80)) - 1, 7),
        (max(1, min(int(codec.maxbits or 0), 0x8000)) - 1, 15),
        (max(1, min(int(codec.minbits or 0), 0x8000)) - 1, 15),
    )
    for value, bits in fields:
        mode = (mode << bits) + value
    return (mode << 12) + 0xFFF


register_codec(ZfpCodec)
