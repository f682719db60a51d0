"""The ``packbits`` codec: each element as a fixed number of bits, packed without byte alignment.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/packbits

    {"name": "packbits", "configuration": {"padding_encoding": "first_byte", "first_bit": 0, "last_bit": 3}}

Each component of an element (two for complex types) is its ``N``-bit
little-endian value, of which bits ``first_bit..last_bit`` (inclusive, from
the least significant) are kept. Elements follow in C order as one bit
sequence, least significant bit first within each byte, padded with zero
bits to a whole byte; ``padding_encoding`` ``"first_byte"``/``"last_byte"``
stores the number of padding bits in a byte before/after the data. Decoding
shifts the bits back to ``first_bit`` and sign-extends signed integers.

``N`` comes from one helper, `element_bits()`: 1 for ``bool``, else the data
type registry's width (`DataType.bit_width`: 4 for ``int4`` and
``float4_e2m1fn``, 6 for ``float6_*``, 16 for ``bfloat16`` ...). The README and the schema name the options
differently (``first_byte``/``start_byte``, ``first_bit``/``start_bit``); we
read both and write the README's names, as zarrs does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NamedTuple

import numpy as np

from ..core.dtypes import DataType
from ..errors import CodecError, MetadataError
from .base import ArrayBytesCodec, Buffer, ChunkSpec
from .registry import parse_config_choice, parse_config_int, register_codec

Padding = Literal["none", "first_byte", "last_byte"]
_PADDINGS = ("none", "first_byte", "last_byte")
_SCHEMA_NAMES = {
    "start_byte": "first_byte",
    "end_byte": "last_byte",
    "start_bit": "first_bit",
    "end_bit": "last_bit",
}
#: The registry's component widths of the complex types whose parts are sub-byte formats (the widths of the
#: real types come from the data type registry: `DataType.bit_width`).
SUB_BYTE_COMPLEX_BITS = {"complex_float4_e2m1fn": 4, "complex_float6_e2m3fn": 6, "complex_float6_e3m2fn": 6}
_PACKED_CATEGORIES = ("bool", "int", "uint", "float", "complex", "datetime", "timedelta")


class ElementBits(NamedTuple):
    """How `packbits` sees one element: ``components`` values of ``bits`` bits each."""

    bits: int
    components: int
    signed: bool


def element_bits(data_type: DataType) -> ElementBits:
    """The bit width, component count and signedness of ``data_type``'s elements; `CodecError` if it has none.

    >>> from zarr3_backend.core.dtypes import parse_data_type
    >>> element_bits(parse_data_type("bool")), element_bits(parse_data_type("complex64"))
    (ElementBits(bits=1, components=1, signed=False), ElementBits(bits=32, components=2, signed=False))
    """
    category, name = data_type.category, data_type.name
    pair = name.startswith("complex_")  # a registered complex type, held as a (real, imag) record or not
    if category not in _PACKED_CATEGORIES and not pair:
        raise CodecError(f"codec 'packbits' needs a boolean or numeric data type, got {name!r}")
    components = 2 if category == "complex" or pair else 1
    bits = 1 if category == "bool" else SUB_BYTE_COMPLEX_BITS.get(name, data_type.bit_width // components)
    return ElementBits(bits, components, category in ("int", "datetime", "timedelta"))


@dataclass(frozen=True)
class PackBitsCodec(ArrayBytesCodec):
    """Pack bits ``first_bit..last_bit`` of each element component into a bit stream."""

    name: ClassVar[str] = "packbits"
    padding_encoding: Padding = "none"
    first_bit: int | None = None
    last_bit: int | None = None

    def __post_init__(self) -> None:
        parse_config_choice(self.name, "padding_encoding", self.padding_encoding, _PADDINGS)
        for member in ("first_bit", "last_bit"):
            if getattr(self, member) is not None:
                parse_config_int(self.name, member, getattr(self, member), 0)
        if self.first_bit is not None and self.last_bit is not None and self.last_bit < self.first_bit:
            raise MetadataError(
                f"codec 'packbits': configuration.last_bit {self.last_bit} is less than first_bit {self.first_bit}"
            )

    @classmethod
    def from_json(cls, configuration: dict[str, Any]) -> PackBitsCodec:
        renamed: dict[str, Any] = {
            _SCHEMA_NAMES.get(k, k): _SCHEMA_NAMES.get(v, v) if isinstance(v, str) else v
            for k, v in configuration.items()
        }
        extra = sorted(set(renamed) - {"padding_encoding", "first_bit", "last_bit"})
        if extra:
            raise MetadataError(
                f"codec 'packbits': unknown configuration keys {extra}; allowed: padding_encoding, first_bit, last_bit"
            )
        return cls(**renamed)

    def _range(self, spec: ChunkSpec) -> tuple[ElementBits, int, int]:
        layout = element_bits(spec.data_type)
        first = self.first_bit or 0
        last = layout.bits - 1 if self.last_bit is None else self.last_bit
        if last >= layout.bits or last < first:
            raise CodecError(
                f"codec 'packbits': bits {first}..{last} do not fit data type {spec.data_type.name!r}, whose "
                f"components have {layout.bits} bits; choose first_bit <= last_bit < {layout.bits}"
            )
        return layout, first, last

    def validate(self, spec: ChunkSpec) -> None:
        self._range(spec)

    def compute_encoded_size(self, input_size: int, spec: ChunkSpec) -> int:
        layout, first, last = self._range(spec)
        bits = spec.size * layout.components * (last - first + 1)
        return -(-bits // 8) + (self.padding_encoding != "none")

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Buffer:
        layout, first, last = self._range(spec)
        bits = _component_bits(np.ascontiguousarray(chunk), layout)  # (components, N): one byte per bit
        packed = np.packbits(bits[:, first : last + 1].reshape(-1), bitorder="little")
        padding = np.uint8((-bits.shape[0] * (last - first + 1)) % 8)
        if self.padding_encoding == "first_byte":
            packed = np.concatenate([[padding], packed])
        elif self.padding_encoding == "last_byte":
            packed = np.concatenate([packed, [padding]])
        return packed.astype(np.uint8).data

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        layout, first, last = self._range(spec)
        width, count = last - first + 1, spec.size * layout.components
        packed = np.frombuffer(data, np.uint8)
        self._check_size(packed, spec, (-count * width) % 8)
        if self.padding_encoding == "first_byte":
            packed = packed[1:]
        elif self.padding_encoding == "last_byte":
            packed = packed[:-1]
        item_bits = spec.dtype.itemsize * 8 // layout.components
        bits = np.zeros((count, item_bits), np.uint8)
        bits[:, first : last + 1] = np.unpackbits(packed, count=count * width, bitorder="little").reshape(
            count, width
        )
        if layout.signed:  # sign-extend from last_bit up to the whole item
            bits[:, last + 1 :] = bits[:, last : last + 1]
        stored = np.packbits(bits, axis=1, bitorder="little")
        return stored.reshape(-1).view(spec.dtype.newbyteorder("<")).astype(spec.dtype).reshape(spec.shape)

    def _check_size(self, packed: np.ndarray, spec: ChunkSpec, padding: int) -> None:
        expected = self.compute_encoded_size(0, spec)
        if packed.size != expected:
            raise CodecError(
                f"codec 'packbits': expected {expected} bytes for a chunk of shape {spec.shape} and data type "
                f"{spec.data_type.name!r}, got {packed.size}"
            )
        stored = {"first_byte": packed[:1], "last_byte": packed[-1:]}.get(self.padding_encoding)
        if stored is not None and int(stored[0]) != padding:
            raise CodecError(
                f"codec 'packbits': the chunk's padding byte says {int(stored[0])} padding bits, expected {padding}"
            )


def _component_bits(chunk: np.ndarray, layout: ElementBits) -> np.ndarray:
    """The bits of each element component, least significant first: ``(components, item bits)`` uint8."""
    little = chunk.astype(chunk.dtype.newbyteorder("<"), copy=False).reshape(-1)
    item_bytes = little.view(np.uint8).reshape(
        little.size * layout.components, chunk.dtype.itemsize // layout.components
    )
    return np.unpackbits(item_bytes, axis=1, bitorder="little")


register_codec(PackBitsCodec)
