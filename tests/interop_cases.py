"""Shared parametrisation for the interoperability suites and golden stores.

A :class:`Case` describes one array completely (shape, data type, chunking,
codec chain, chunk key encoding, fill value and the writes applied to it) in
the spec's own JSON vocabulary, so every writer -- zarr-python, tensorstore
and zarr3_backend -- can build the same array and every reader can be
checked against the same expected values.

The case list is a covering set, not a cartesian product: every data type
meets several codec chains, every codec chain meets every chunk key
encoding, and sharding varies index location, index codecs, inner chains,
edge shards and empty inner chunks.  zarr-python and tensorstore are only
imported inside the writer/reader helpers, so ``tests/interop/test_golden.py`` can
use this module without them.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

Selection = Any
JSON = Any

# ---------------------------------------------------------------- codecs (JSON)

BYTES_LE: JSON = {"name": "bytes", "configuration": {"endian": "little"}}
BYTES_BE: JSON = {"name": "bytes", "configuration": {"endian": "big"}}
BYTES_BARE: JSON = {"name": "bytes"}
VLEN_UTF8: JSON = {"name": "vlen-utf8"}
GZIP: JSON = {"name": "gzip", "configuration": {"level": 5}}
ZSTD: JSON = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
ZSTD_CHECKSUM: JSON = {"name": "zstd", "configuration": {"level": 1, "checksum": True}}
CRC32C: JSON = {"name": "crc32c"}


def blosc(cname: str, shuffle: str, typesize: int = 1) -> JSON:
    """Return a blosc codec JSON object."""
    config = {"cname": cname, "clevel": 5, "shuffle": shuffle, "typesize": typesize, "blocksize": 0}
    return {"name": "blosc", "configuration": config}


def transpose(*order: int) -> JSON:
    """Return a transpose codec JSON object."""
    return {"name": "transpose", "configuration": {"order": list(order)}}


def key_encoding(name: str, separator: str) -> JSON:
    """Return a chunk key encoding JSON object."""
    return {"name": name, "configuration": {"separator": separator}}


KEY_ENCODINGS: tuple[JSON, ...] = (
    key_encoding("default", "/"),
    key_encoding("default", "."),
    key_encoding("v2", "."),
    key_encoding("v2", "/"),
)

# ---------------------------------------------------------------- data types

NUMERIC_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
EXTRA_DTYPES = ("string", "datetime64[ns]", "timedelta64[s]")


def numpy_dtype(dtype: str) -> np.dtype:
    """In-memory numpy dtype used for expected values (object for strings)."""
    if dtype == "string":
        return np.dtype(object)
    if dtype.startswith("r") and dtype[1:].isdigit():
        return np.dtype(f"V{int(dtype[1:]) // 8}")
    return np.dtype(dtype)


def item_size(dtype: str) -> int:
    """Bytes per element (1 for variable-length strings)."""
    return 1 if dtype == "string" else numpy_dtype(dtype).itemsize


# ---------------------------------------------------------------- the case type

DIRECTIONS = ("zarr_python->ours", "ours->zarr_python", "tensorstore->ours", "ours->tensorstore")


@dataclasses.dataclass(frozen=True)
class Case:
    """One array every writer can build and every reader can check.

    ``filters``/``compressors`` are the array->array and bytes->bytes codecs;
    the array->bytes codec is derived from ``dtype`` and ``endian`` ("none"
    means a bare ``{"name": "bytes"}``).  With ``shards`` set, those codecs
    form the inner chain of a ``sharding_indexed`` codec placed after
    ``outer_filters``.  ``fill_value`` is spec JSON (``None``: the default).
    ``writes`` are applied in order, each with its own random data.
    ``skip``/``xfail`` map a direction (see :data:`DIRECTIONS`) to a reason:
    skip when the reference implementation cannot do the case at all, xfail
    (strict) when it does it against the spec.
    """

    id: str
    dtype: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    filters: tuple[JSON, ...] = ()
    compressors: tuple[JSON, ...] = ()
    endian: str = "little"
    shards: tuple[int, ...] | None = None
    outer_filters: tuple[JSON, ...] = ()
    index_codecs: tuple[JSON, ...] = (BYTES_LE, CRC32C)
    index_location: str = "end"
    nested_chunks: tuple[int, ...] | None = None
    chunk_key_encoding: JSON = dataclasses.field(default_factory=lambda: KEY_ENCODINGS[0])
    fill_value: JSON = None
    writes: tuple[Selection, ...] | None = None
    dimension_names: tuple[str | None, ...] | None = None
    attributes: Mapping[str, JSON] | None = None
    skip: Mapping[str, str] = dataclasses.field(default_factory=dict)
    xfail: Mapping[str, str] = dataclasses.field(default_factory=dict)

    # -- codec chain -----------------------------------------------------
    @property
    def serializer(self) -> JSON:
        if self.dtype == "string":
            return VLEN_UTF8
        if self.endian == "none":
            return BYTES_BARE
        return BYTES_BE if self.endian == "big" else BYTES_LE

    @property
    def inner_codecs(self) -> list[JSON]:
        return [*self.filters, self.serializer, *self.compressors]

    @property
    def sharding_codec(self) -> JSON:
        inner = self.inner_codecs
        if self.nested_chunks is not None:
            inner = [_sharding(self.nested_chunks, inner, [BYTES_LE], "end")]
        return _sharding(self.chunks, inner, list(self.index_codecs), self.index_location)

    @property
    def codecs(self) -> list[JSON]:
        """The full outer codec chain as it appears in ``zarr.json``."""
        if self.shards is None:
            return self.inner_codecs
        return [*self.outer_filters, self.sharding_codec]

    @property
    def grid_chunks(self) -> tuple[int, ...]:
        """Chunk shape of the array's regular chunk grid."""
        return self.shards if self.shards is not None else self.chunks

    def metadata_json(self) -> dict[str, JSON]:
        """Array metadata (without ``zarr_format``/``node_type``) for tensorstore."""
        meta: dict[str, JSON] = {
            "shape": list(self.shape),
            "data_type": data_type_json(self.dtype),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(self.grid_chunks)}},
            "chunk_key_encoding": self.chunk_key_encoding,
            "codecs": self.codecs,
        }
        if self.fill_value is not None:
            meta["fill_value"] = self.fill_value
        if self.dimension_names is not None:
            meta["dimension_names"] = list(self.dimension_names)
        if self.attributes is not None:
            meta["attributes"] = dict(self.attributes)
        return meta

    # -- values ----------------------------------------------------------
    @property
    def fill(self) -> Any:
        """The fill value as a numpy scalar (``str`` for strings)."""
        return fill_from_json(self.fill_value, self.dtype)

    @property
    def write_selections(self) -> tuple[Selection, ...]:
        return self.writes if self.writes is not None else default_writes(self.shape)

    def write_values(self) -> list[tuple[Selection, np.ndarray]]:
        """``(selection, values)`` pairs every writer applies, in order."""
        seed = zlib.crc32(self.id.encode())
        return [
            (sel, random_data(self.dtype, self.shape, seed + k)[sel])
            for k, sel in enumerate(self.write_selections)
        ]

    def update(self) -> tuple[Selection, np.ndarray]:
        """A strided write applied on top of an existing array (read-modify-write)."""
        sel = tuple(slice(n // 3, None, 3) for n in self.shape)
        return sel, random_data(self.dtype, self.shape, zlib.crc32(self.id.encode()) + 99)[sel]

    def expected_after_update(self) -> np.ndarray:
        """:meth:`expected` with :meth:`update` applied."""
        out = self.expected()
        sel, values = self.update()
        out[sel] = values
        return out

    def expected(self) -> np.ndarray:
        """The array after all writes, unwritten elements holding the fill value."""
        out = np.empty(self.shape, dtype=numpy_dtype(self.dtype))
        out[...] = self.fill
        for sel, values in self.write_values():
            out[sel] = values
        return out


def _sharding(
    chunk_shape: Sequence[int], codecs: list[JSON], index_codecs: list[JSON], location: str
) -> JSON:
    config = {
        "chunk_shape": list(chunk_shape),
        "codecs": codecs,
        "index_codecs": index_codecs,
        "index_location": location,
    }
    return {"name": "sharding_indexed", "configuration": config}


def data_type_json(dtype: str) -> JSON:
    """Spec JSON of a data type given as a numpy-style name."""
    if dtype.startswith(("datetime64", "timedelta64")):
        unit = dtype[dtype.index("[") + 1 : -1]
        return {"name": f"numpy.{dtype.split('[')[0]}", "configuration": {"unit": unit, "scale_factor": 1}}
    return dtype


def fill_from_json(value: JSON, dtype: str) -> Any:
    """Decode a spec fill value (``None``: the default) into a numpy scalar."""
    if dtype == "string":
        return "" if value is None else value
    npdt = numpy_dtype(dtype)
    if value is None:
        value = {"m": np.iinfo(np.int64).min, "M": np.iinfo(np.int64).min, "c": [0, 0]}.get(npdt.kind, 0)
    if npdt.kind == "c":
        parts = [_float_from_json(v, np.dtype(f"f{npdt.itemsize // 2}")) for v in value]
        out = np.zeros((), npdt)
        out.real, out.imag = parts
        return out[()]
    if npdt.kind == "f":
        return _float_from_json(value, npdt)
    if npdt.kind in "mM":
        return np.array(value, dtype=np.int64).view(npdt)[()]
    return npdt.type(value)


def _float_from_json(value: JSON, npdt: np.dtype) -> np.generic:
    specials = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
    if isinstance(value, str) and value.startswith("0x"):
        return np.array(int(value, 16), dtype=f"u{npdt.itemsize}").view(npdt)[()]
    return npdt.type(specials.get(value, value))


# ---------------------------------------------------------------- data

WORDS = ("", "a", "zarr", "héllo wörld", "日本語", "emoji 🎉", "tab\tnew\nline", "nul\x00inside", "x" * 70)
NAN_PAYLOADS = {2: 0x7E01, 4: 0x7FC00123, 8: 0x7FF8000000000123}
NEG_NAN = {2: 0xFE00, 4: 0xFFC00000, 8: 0xFFF8000000000000}


def random_data(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Deterministic data with the awkward values of ``dtype`` mixed in."""
    rng = np.random.default_rng(seed)
    npdt = numpy_dtype(dtype)
    if dtype == "string":
        return np.array(rng.choice(np.array(WORDS, dtype=object), size=shape), dtype=object).reshape(shape)
    if npdt.kind == "b":
        return rng.random(shape) < 0.5
    if npdt.kind in "iu":
        info = np.iinfo(npdt)
        return rng.integers(info.min, info.max, size=shape, dtype=npdt, endpoint=True)
    if npdt.kind in "mM":
        ints = rng.integers(-(2**62), 2**62, size=shape, dtype=np.int64)
        ints.reshape(-1)[::7] = np.iinfo(np.int64).min  # NaT
        return ints.view(npdt)
    if npdt.kind == "c":
        part = np.dtype(f"f{npdt.itemsize // 2}")
        out = np.zeros(shape, npdt)
        out.real, out.imag = _floats(rng, part, shape), _floats(rng, part, shape)
        return out
    return _floats(rng, npdt, shape)


def _floats(rng: np.random.Generator, npdt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    out = (rng.standard_normal(shape) * 1000).astype(npdt)
    flat = out.reshape(-1)
    bits = flat.view(f"u{npdt.itemsize}")
    specials = [np.nan, np.inf, -np.inf, -0.0, np.finfo(npdt).tiny / 4]
    for k, pos in enumerate(range(1, flat.size, 3)):
        if k % 7 == 5:
            bits[pos] = NAN_PAYLOADS[npdt.itemsize]
        elif k % 7 == 6:
            bits[pos] = NEG_NAN[npdt.itemsize]
        else:
            flat[pos] = specials[k % 7]
    return out


def default_writes(shape: tuple[int, ...]) -> tuple[Selection, ...]:
    """A leading box plus a strided write, leaving trailing chunks unwritten."""
    if not shape:
        return ((),)
    box = tuple(slice(0, max(1, (2 * n) // 3)) for n in shape)
    strided = (slice(shape[0] // 2, None, 2),) + tuple(slice(0, 1) for _ in shape[1:])
    return (box, strided)


def read_selections(shape: tuple[int, ...]) -> list[tuple[str, Selection]]:
    """Partial selections a reader is checked with: ``(kind, selection)``."""
    if not shape:
        return [("basic", ()), ("basic", Ellipsis)]
    sels: list[tuple[str, Selection]] = [
        ("basic", tuple(slice(1, None, 2) for _ in shape)),
        ("basic", (Ellipsis, slice(None, None, 3))),
    ]
    if all(shape):
        sels.append(("basic", (-1,) + tuple(slice(None, -1) for _ in shape[1:])))
        sels.append(("oindex", tuple(np.array([-1, 0, n // 2, n // 2]) for n in shape)))
        mask = np.arange(shape[0]) % 3 == 0
        sels.append(("oindex", (mask,) + tuple(slice(None) for _ in shape[1:])))
    return sels


# ---------------------------------------------------------------- comparison


def _native(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if not a.dtype.isnative:
        a = a.byteswap().view(a.dtype.newbyteorder("="))
    return np.ascontiguousarray(a)


def assert_same(actual: Any, expected: np.ndarray, what: str = "") -> None:
    """Bit-exact equality: NaN payloads, signed zeros and NaT included."""
    actual, expected = _native(actual), _native(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype == object:
        assert actual.dtype.kind in "OTU", f"{what}: dtype {actual.dtype} for strings"
        got = np.asarray(actual, dtype=object)
        assert all(isinstance(v, str) for v in got.reshape(-1)), f"{what}: non-str element"
        np.testing.assert_array_equal(got, expected, err_msg=what)
        return
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if expected.dtype.kind == "V":
        np.testing.assert_array_equal(actual.view("u1"), expected.view("u1"), err_msg=what)
    elif expected.dtype.kind in "fcmM":
        size = expected.dtype.itemsize // (2 if expected.dtype.kind == "c" else 1)
        uint = f"u{size}"
        np.testing.assert_array_equal(
            actual.reshape(-1).view(uint), expected.reshape(-1).view(uint), err_msg=what
        )
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


# ---------------------------------------------------------------- the cases


def _zarr_python_before(version: tuple[int, int]) -> bool:
    """Whether the installed zarr-python is older than ``version`` (3.1 on Python 3.11, 3.4 on 3.12+)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        major, minor = (int(part) for part in installed("zarr").split(".")[:2])
    except PackageNotFoundError:
        return False
    return (major, minor) < version


ZP_VLEN_TRANSPOSE = (
    {
        "zarr_python->ours": "zarr-python 3.1 vlen-utf8 encodes a transposed chunk in untransposed element "
        "order (its own round trip fails; fixed by 3.4); spec: transpose applies before the array->bytes codec",
    }
    if _zarr_python_before((3, 4))
    else {}
)
ZP_OUTER_TRANSPOSE_SKIP = {
    "zarr_python->ours": "zarr-python 3.1.6 checks sharding's inner chunk_shape against the untransposed "
    "shard shape, so it cannot create transpose -> sharding_indexed with a non-square shard",
}
ZP_0D_SHARDED = dict.fromkeys(
    ("zarr_python->ours", "ours->zarr_python"),
    "zarr-python 3.1.6 cannot read its own 0-d sharded arrays (IndexError), and writes wrong bytes",
)
ZP_OUTER_TRANSPOSE_XFAIL = {
    "ours->zarr_python": "zarr-python 3.1.6 rejects valid transpose -> sharding_indexed metadata: it checks "
    "the inner chunk_shape against the untransposed shard shape",
}


def _unsharded_sweep() -> list[Case]:
    """Every data type x three codec chains; chains and key encodings rotate."""
    chains: list[tuple[str, tuple[JSON, ...], tuple[JSON, ...], str]] = [
        ("bytes-le", (), (), "little"),
        ("bytes-be", (), (), "big"),
        ("gzip", (), (GZIP,), "little"),
        ("zstd", (), (ZSTD,), "little"),
        ("blosc-lz4-shuffle", (), ("blosc:lz4:shuffle",), "little"),
        ("blosc-zstd-bitshuffle", (), ("blosc:zstd:bitshuffle",), "big"),
        ("blosc-lz4-noshuffle", (), ("blosc:lz4:noshuffle",), "little"),
        ("crc32c", (), (CRC32C,), "little"),
        ("transpose", ("T",), (), "little"),
        ("transpose-be-gzip-crc32c", ("T",), (GZIP, CRC32C), "big"),
        ("zstd-checksum-crc32c", (), (ZSTD_CHECKSUM, CRC32C), "little"),
    ]
    layouts = [((7, 5), (3, 2)), ((20,), (6,)), ((4, 5, 6), (2, 3, 4)), ((6, 6), (3, 3)), ((5, 9), (8, 4))]
    cases = []
    for i, dtype in enumerate(NUMERIC_DTYPES + EXTRA_DTYPES):
        for j in range(3):
            name, filters, compressors, endian = chains[(3 * i + j) % len(chains)]
            shape, chunks = layouts[(i + 2 * j) % len(layouts)]
            kenc = KEY_ENCODINGS[(i + j) % len(KEY_ENCODINGS)]
            if item_size(dtype) == 1 and endian == "little" and j == 0:
                endian = "none"
            if dtype == "string":
                endian = "little"
            tr = tuple(range(len(shape)))[::-1] if filters else ()
            xfail = ZP_VLEN_TRANSPOSE if dtype == "string" and tr else {}
            cases.append(
                Case(
                    id=f"{dtype}-{name}-{_kenc_id(kenc)}-{_shape_id(shape)}",
                    dtype=dtype,
                    shape=shape,
                    chunks=chunks,
                    filters=(transpose(*tr),) if tr else (),
                    compressors=tuple(_resolve_blosc(c, dtype) for c in compressors),
                    endian=endian,
                    chunk_key_encoding=kenc,
                    xfail=xfail,
                )
            )
    return cases


def _resolve_blosc(codec: JSON, dtype: str) -> JSON:
    if isinstance(codec, str):
        _, cname, shuffle = codec.split(":")
        return blosc(cname, shuffle, item_size(dtype))
    return codec


def _kenc_id(kenc: JSON) -> str:
    return f"{kenc['name']}{kenc['configuration']['separator']}".replace("/", "slash").replace(".", "dot")


def _shape_id(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "0d"


def _sharded() -> list[Case]:
    s = slice
    crc_be = (BYTES_BE, CRC32C)
    return [
        Case(
            "shard-f4-blosc-crc32c-end",
            "float32",
            (13, 10),
            (4, 3),
            shards=(8, 6),
            compressors=(blosc("lz4", "shuffle", 4),),
            writes=((s(0, 6), s(0, 5)), (s(9, 13), s(7, 10))),
        ),
        Case(
            "shard-i2-start-gzip",
            "int16",
            (13, 10),
            (4, 3),
            shards=(8, 6),
            index_location="start",
            compressors=(GZIP,),
            chunk_key_encoding=KEY_ENCODINGS[1],
            writes=((s(2, 11, 3), s(None)),),
        ),
        Case(
            "shard-u1-index-bytes-only",
            "uint8",
            (30,),
            (4,),
            shards=(12,),
            index_codecs=(BYTES_LE,),
            endian="none",
            writes=((s(0, 5),), (s(25, 30),)),
        ),
        Case(
            "shard-f8-index-be-crc-start",
            "float64",
            (9, 8, 5),
            (2, 2, 5),
            shards=(4, 4, 5),
            index_codecs=crc_be,
            index_location="start",
            compressors=(ZSTD,),
            chunk_key_encoding=KEY_ENCODINGS[2],
            writes=((s(0, 3), s(1, 7), s(None)),),
        ),
        Case(
            "shard-c8-inner-transpose-be",
            "complex64",
            (10, 7),
            (4, 2),
            shards=(8, 4),
            filters=(transpose(1, 0),),
            endian="big",
            chunk_key_encoding=KEY_ENCODINGS[3],
            fill_value=["NaN", 1.5],
        ),
        Case(
            "shard-i8-outer-transpose",
            "int64",
            (6, 10),
            (2, 3),
            shards=(6, 4),
            outer_filters=(transpose(1, 0),),
            compressors=(CRC32C,),
            fill_value=-7,
            skip=ZP_OUTER_TRANSPOSE_SKIP,
            xfail=ZP_OUTER_TRANSPOSE_XFAIL,
        ),
        Case(
            "shard-bool-blosc-bitshuffle-edge",
            "bool",
            (11, 11),
            (3, 3),
            shards=(6, 6),
            compressors=(blosc("zstd", "bitshuffle", 1),),
            fill_value=True,
            index_location="start",
        ),
        Case(
            "shard-u4-single-shard-partial",
            "uint32",
            (5, 5),
            (2, 2),
            shards=(6, 6),
            compressors=(GZIP, CRC32C),
            writes=((s(0, 2), s(0, 2)),),
        ),
        Case("shard-i4-all-empty", "int32", (8, 8), (2, 2), shards=(4, 4), fill_value=42, writes=()),
        Case(
            "shard-f2-inner-crc32c",
            "float16",
            (16,),
            (4,),
            shards=(8,),
            compressors=(CRC32C,),
            index_location="start",
            fill_value="-Infinity",
        ),
        Case(
            "shard-u8-zstd-checksum",
            "uint64",
            (7, 7),
            (3, 3),
            shards=(6, 6),
            compressors=(ZSTD_CHECKSUM,),
            chunk_key_encoding=KEY_ENCODINGS[1],
            fill_value=2**64 - 1,
        ),
        Case(
            "shard-c16-blosc-noshuffle-be",
            "complex128",
            (6, 6),
            (3, 3),
            shards=(6, 6),
            endian="big",
            compressors=(blosc("lz4", "noshuffle", 16),),
            index_codecs=crc_be,
        ),
        Case(
            "shard-string-gzip",
            "string",
            (9, 4),
            (2, 2),
            shards=(4, 4),
            compressors=(GZIP,),
            fill_value="-",
            writes=((s(0, 5), s(0, 3)),),
        ),
        Case(
            "shard-datetime-zstd",
            "datetime64[ns]",
            (12,),
            (3,),
            shards=(6,),
            compressors=(ZSTD,),
            index_location="start",
            writes=((s(1, 4),), (s(9, 11),)),
        ),
        Case(
            "shard-nested-f4",
            "float32",
            (12, 12),
            (4, 4),
            shards=(8, 8),
            nested_chunks=(2, 2),
            compressors=(GZIP,),
            writes=((s(0, 5), s(3, 12)),),
        ),
        Case(
            "shard-u2-inner-transpose-201",
            "uint16",
            (9, 8, 7),
            (2, 4, 3),
            shards=(4, 8, 6),
            filters=(transpose(2, 0, 1),),
            compressors=(blosc("blosclz", "shuffle", 2),),
        ),
        Case("shard-i4-one-inner-chunk", "int32", (7, 5), (4, 4), shards=(4, 4), index_location="start"),
        Case("shard-f4-0d", "float32", (), (), shards=(), skip=ZP_0D_SHARDED),
        Case(
            "shard-i1-3d-v2slash-edge",
            "int8",
            (5, 6, 7),
            (2, 2, 2),
            shards=(4, 4, 4),
            endian="none",
            chunk_key_encoding=KEY_ENCODINGS[3],
            compressors=(blosc("lz4", "bitshuffle", 1),),
        ),
    ]


def _special() -> list[Case]:
    s = slice
    nan_payload = {
        "zarr_python->ours": 'zarr-python writes a payload-NaN fill value as "NaN" '
        '(spec: "0x7fc00001"), so unwritten elements lose the payload'
    }
    zp_nan_elided = {
        "zarr_python->ours": "zarr-python does not store a chunk whose NaNs differ in sign or "
        "payload from a NaN fill value, so they read back as the fill NaN"
    }
    zp_zero_elided = {
        "zarr_python->ours": "zarr-python does not store a complex chunk that compares == to "
        "the fill value, so -0-0j reads back as 0+0j"
    }
    return [
        Case(
            "unit-chunks-f8-nan-fill-payloads",
            "float64",
            (21,),
            (1,),
            fill_value="NaN",
            writes=(s(None),),
            xfail=zp_nan_elided,
        ),
        Case(
            "unit-chunks-c16-signed-zeros", "complex128", (21,), (1,), writes=(s(None),), xfail=zp_zero_elided
        ),
        Case("0d-f8-bytes", "float64", (), ()),
        Case("0d-i4-gzip-unwritten", "int32", (), (), compressors=(GZIP,), fill_value=-3, writes=()),
        Case("0d-c16-be-crc32c", "complex128", (), (), endian="big", compressors=(CRC32C,)),
        Case("0d-string", "string", (), (), compressors=(ZSTD,)),
        Case(
            "fill-f4-nan-payload",
            "float32",
            (6,),
            (4,),
            fill_value="0x7fc00001",
            writes=((s(0, 2),),),
            xfail=nan_payload,
        ),
        Case("fill-f8-nan", "float64", (6,), (4,), fill_value="NaN", writes=((s(0, 2),),)),
        Case("fill-f2-infinity", "float16", (3, 3), (2, 2), fill_value="Infinity"),
        Case("fill-f8-hex-negzero", "float64", (5,), (2,), fill_value="0x8000000000000000"),
        Case("fill-i8-min", "int64", (5,), (2,), fill_value=-(2**63)),
        Case("fill-string", "string", (5, 3), (2, 2), fill_value="fill é"),
        Case("fill-datetime", "datetime64[ns]", (5,), (2,), fill_value=1_000_000_007),
        Case("empty-dimension", "float32", (0, 5), (2, 2), writes=()),
        Case(
            "two-transposes", "int32", (4, 5, 6), (2, 3, 4), filters=(transpose(2, 0, 1), transpose(1, 0, 2))
        ),
        Case("crc32c-then-gzip", "int16", (7, 5), (3, 2), compressors=(CRC32C, GZIP)),
        Case("gzip-then-zstd", "float32", (7, 5), (3, 2), compressors=(GZIP, ZSTD)),
        Case(
            "blosc-lz4hc-bitshuffle", "int32", (7, 5), (3, 2), compressors=(blosc("lz4hc", "bitshuffle", 4),)
        ),
        Case(
            "blosc-zlib", "uint8", (7, 5), (3, 2), endian="none", compressors=(blosc("zlib", "shuffle", 1),)
        ),
        Case("chunk-larger-than-array", "uint16", (3, 2), (10, 10), compressors=(ZSTD,)),
        Case("unit-chunks", "int32", (3, 4), (1, 1), chunk_key_encoding=KEY_ENCODINGS[2]),
        Case(
            "dims-and-attrs",
            "float32",
            (4, 6),
            (2, 3),
            dimension_names=("y", None),
            attributes={"title": "t", "nested": {"a": [1, 2.5, None, True]}, "unicode": "é"},
        ),
    ]


ALL_CASES: tuple[Case, ...] = tuple(_unsharded_sweep() + _sharded() + _special())

# ---------------------------------------------------------------- oracles' limits

_TS_DTYPES = set(NUMERIC_DTYPES)


def skip_reason(case: Case, direction: str) -> str | None:
    """Why a reference implementation cannot take part in ``direction``."""
    if "tensorstore" in direction and case.dtype not in _TS_DTYPES:
        return f"tensorstore's zarr3 driver has no {case.dtype} data type"
    return case.skip.get(direction)


def params(direction: str, cases: Sequence[Case] = ALL_CASES) -> list[Any]:
    """``pytest.param`` per case with skip/xfail marks for ``direction``."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction: expected one of {DIRECTIONS}, got {direction!r}")
    out = []
    for case in cases:
        marks = []
        reason = skip_reason(case, direction)
        if reason:
            marks.append(pytest.mark.skip(reason=reason))
        elif direction in case.xfail:
            marks.append(pytest.mark.xfail(reason=case.xfail[direction], strict=True))
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


def canonical_codecs(codecs: Sequence[JSON], dtype: str) -> list[JSON]:
    """Codec JSON with spelling-only differences removed (empty or moot configurations)."""
    out = []
    for codec in json.loads(json.dumps(list(codecs), default=str)):
        config = codec.get("configuration")
        if config == {} or (codec["name"] == "bytes" and dtype != "struct" and item_size(dtype) == 1):
            codec.pop("configuration", None)
        if codec["name"] == "blosc" and config["shuffle"] == "noshuffle":
            config.pop("typesize", None)  # meaningless without shuffling
        if codec["name"] == "sharding_indexed":
            config["codecs"] = canonical_codecs(config["codecs"], dtype)
            config["index_codecs"] = canonical_codecs(config["index_codecs"], "uint64")
        out.append(codec)
    return out


def canonical_key_encoding(obj: JSON) -> JSON:
    """Chunk key encoding JSON with the default separator spelled out."""
    name = obj["name"] if isinstance(obj, dict) else obj
    config = obj.get("configuration", {}) if isinstance(obj, dict) else {}
    return key_encoding(name, config.get("separator", "/" if name == "default" else "."))


# ---------------------------------------------------------------- writers and readers


def write_zarr_python(case: Case, path: Any) -> Any:
    """Create ``case`` with zarr-python's own API and apply its writes."""
    import zarr

    kwargs: dict[str, Any] = {
        "shape": case.shape,
        "dtype": str if case.dtype == "string" else case.dtype,
        "chunks": case.grid_chunks,
        "chunk_key_encoding": dict(case.chunk_key_encoding),
        "fill_value": case.fill,
        "dimension_names": case.dimension_names,
        "attributes": dict(case.attributes) if case.attributes is not None else None,
        "zarr_format": 3,
    }
    if case.shards is None:
        kwargs.update(
            filters=list(case.filters), serializer=case.serializer, compressors=list(case.compressors)
        )
    else:
        kwargs.update(filters=list(case.outer_filters), serializer=case.sharding_codec, compressors=None)
    array = zarr.create_array(str(path), **kwargs)
    for sel, values in case.write_values():
        array[sel] = values
    return array


def tensorstore_spec(path: Any) -> dict[str, Any]:
    """A tensorstore spec for a zarr3 array in a local directory."""
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}


def write_tensorstore(case: Case, path: Any) -> Any:
    """Create ``case`` with tensorstore and apply its writes."""
    import tensorstore as ts

    spec = {**tensorstore_spec(path), "metadata": case.metadata_json()}
    array = ts.open(spec, create=True).result()
    for sel, values in case.write_values():
        array[sel].write(values).result()
    return array


def ours_kwargs(case: Case) -> dict[str, Any]:
    """Keyword arguments of ``zarr3_backend.create_array`` building ``case``."""
    kwargs: dict[str, Any] = {
        "shape": case.shape,
        "dtype": case.dtype,
        "fill_value": case.fill,
        "chunk_key_encoding": dict(case.chunk_key_encoding),
        "dimension_names": case.dimension_names,
        "attributes": dict(case.attributes) if case.attributes is not None else None,
    }
    if case.shards is None:
        kwargs.update(
            chunks=case.chunks,
            filters=list(case.filters),
            serializer=case.serializer,
            compressors=list(case.compressors),
        )
    elif case.outer_filters or case.nested_chunks:
        kwargs.update(chunks=case.grid_chunks, codecs=case.codecs)
    else:
        kwargs.update(
            chunks=case.chunks,
            shards=case.shards,
            filters=list(case.filters),
            serializer=case.serializer,
            compressors=list(case.compressors),
            index_codecs=list(case.index_codecs),
            index_location=case.index_location,
        )
    return kwargs


def write_ours(case: Case, path: Any) -> Any:
    """Create ``case`` with zarr3_backend and apply its writes."""
    import zarr3_backend

    array = zarr3_backend.create_array(str(path), **ours_kwargs(case))
    for sel, values in case.write_values():
        array[sel] = values
    return array


def check_properties(array: Any, case: Case) -> None:
    """zarr3_backend's view of an array another implementation wrote for ``case``."""
    assert array.shape == case.shape
    npdt = numpy_dtype(case.dtype)
    assert_same(
        np.asarray(array.fill_value, dtype=npdt), np.asarray(case.fill, dtype=npdt), f"{case.id}: fill_value"
    )
    if not (case.outer_filters or case.nested_chunks):
        assert (tuple(array.chunks), array.shards) == (case.chunks, case.shards)
    assert dict(array.attrs) == dict(case.attributes or {})
    if case.dimension_names is not None:
        assert tuple(array.dimension_names) == case.dimension_names


def check_reads(array: Any, expected: np.ndarray, what: str) -> None:
    """Full read plus every :func:`read_selections` selection, bit-exactly."""
    assert_same(array[...], expected, f"{what} [...]")
    for kind, sel in read_selections(expected.shape):
        got = array.oindex[sel] if kind == "oindex" else array[sel]
        want = expected[np.ix_(*_ix(sel, expected.shape))] if kind == "oindex" else expected[sel]
        want = np.asarray(want, dtype=expected.dtype)
        assert_same(got, want, f"{what} {kind}[{_sel_repr(sel)}]")


def _ix(sel: Selection, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [np.arange(n)[s] if isinstance(s, slice) else np.asarray(s) for s, n in zip(sel, shape)]


def _sel_repr(sel: Selection) -> str:
    def one(s: Any) -> str:
        if isinstance(s, slice):
            return f"{'' if s.start is None else s.start}:{'' if s.stop is None else s.stop}" + (
                f":{s.step}" if s.step is not None else ""
            )
        if isinstance(s, np.ndarray):
            return f"array({s.tolist()})"
        return "..." if s is Ellipsis else repr(s)

    return ", ".join(one(s) for s in sel) if isinstance(sel, tuple) else one(sel)
