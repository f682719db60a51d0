"""The ML number formats (bfloat16, float8_*, float4, int4, int2 ...) with tensorstore, both ways, bit-exactly.

Every bit pattern of each 8-bit and sub-byte type (NaNs included), and
random 16-bit patterns of ``bfloat16``, are written by one side and read by
the other; the chunk bytes each side writes are compared too, and the fill
value (read from a chunk never written) is checked through each side's JSON.
tensorstore 0.1.86 has no ``uint2``, ``uint4``, ``float6_*``, ``float8_e4m3``
or ``complex_*``: those are checked against the registry documents in
tests/core/test_ml_dtypes.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.core.dtypes import data_type_from_numpy, parse_data_type

ts = pytest.importorskip("tensorstore")
pytest.importorskip("ml_dtypes")

#: Each type tensorstore writes, and a fill value in the registry's JSON form.
TYPES = {
    "bfloat16": "NaN",
    "float8_e3m4": "-Infinity",
    "float8_e4m3fn": "NaN",
    "float8_e4m3fnuz": "NaN",
    "float8_e4m3b11fnuz": -0.5,
    "float8_e5m2": "0x7f",  # a NaN other than the "NaN" bits
    "float8_e5m2fnuz": "NaN",
    "float8_e8m0fnu": "NaN",
    "float4_e2m1fn": -6.0,
    "int4": -8,
    "int2": -2,
}


def _patterns(name: str) -> np.ndarray:
    data_type = parse_data_type(name)
    if data_type.bit_width == 16:
        bits = np.random.default_rng(0).integers(0, 2**16, 300, dtype=np.uint16)
        bits[:4] = [0x7FC0, 0xFFC1, 0x7F80, 0x8000]  # NaN, a NaN payload, infinity, -0
        return bits.view(data_type.numpy)
    return np.arange(2**data_type.bit_width, dtype=np.uint8).view(data_type.numpy)


def _metadata(name: str, size: int, endian: str) -> dict[str, object]:
    return {
        "shape": [size + 7],  # the last chunk is never written: it reads as the fill value
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [7]}},
        "chunk_key_encoding": {"name": "default"},
        "data_type": name,
        "fill_value": TYPES[name],
        "codecs": [{"name": "bytes", "configuration": {"endian": endian}}],
    }


def _spec(path: Path, metadata: dict[str, object] | None = None) -> dict[str, object]:
    spec: dict[str, object] = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    if metadata is not None:
        spec["metadata"] = metadata
    return spec


def _bits(values: np.ndarray) -> np.ndarray:
    """Floats as their bits; integers as their values (ml_dtypes may keep an int4's high bits set or not)."""
    if data_type_from_numpy(values.dtype).category in ("int", "uint"):
        return values.astype(np.int8)
    return np.ascontiguousarray(values).view(f"u{values.dtype.itemsize}")


def _chunks(path: Path, bits: int) -> dict[str, bytes]:
    """Each chunk's bytes; of a sub-byte type only the low ``bits`` of each (the registry: the rest is arbitrary)."""
    mask = (1 << min(bits, 8)) - 1
    return {
        p.relative_to(path).as_posix(): bytes(b & mask for b in p.read_bytes())
        if bits < 8
        else p.read_bytes()
        for p in path.rglob("*")
        if p.name != "zarr.json" and p.is_file()
    }


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("name", TYPES)
def test_tensorstore_writes_we_read(name: str, endian: str, tmp_path: Path) -> None:
    values = _patterns(name)
    store = ts.open(_spec(tmp_path / "a", _metadata(name, values.size, endian)), create=True).result()
    store[: values.size].write(values).result()
    expected = store.read().result()
    ours = zarr3_backend.open_array(str(tmp_path / "a"))
    got = ours[...]
    assert got.dtype == values.dtype
    assert np.array_equal(_bits(got), _bits(expected)), name
    assert np.array_equal(_bits(got[: values.size]), _bits(values))


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("name", TYPES)
def test_we_write_tensorstore_reads(name: str, endian: str, tmp_path: Path) -> None:
    values = _patterns(name)
    meta = _metadata(name, values.size, endian)
    ours = zarr3_backend.create_array(
        str(tmp_path / "a"), shape=tuple(meta["shape"]), chunks=(7,), dtype=name,
        fill_value=TYPES[name], codecs=meta["codecs"],
    )  # fmt: skip
    ours[: values.size] = values
    store = ts.open(_spec(tmp_path / "a"), open=True).result()
    assert np.array_equal(_bits(store.read().result()), _bits(ours[...])), name
    written = json.loads((tmp_path / "a" / "zarr.json").read_text())
    assert written["data_type"] == name and written["fill_value"] == TYPES[name]
    theirs = ts.open(_spec(tmp_path / "b", _metadata(name, values.size, endian)), create=True).result()
    theirs[: values.size].write(values).result()
    bits = ours.metadata.data_type.bit_width  # tensorstore writes an int4 fill of -8 as 0xf8, values as 0x08
    assert _chunks(tmp_path / "a", bits) == _chunks(tmp_path / "b", bits), (
        f"{name}: chunk bytes differ from tensorstore's"
    )


@pytest.mark.parametrize("name", TYPES)
def test_fill_value_json_both_ways(name: str, tmp_path: Path) -> None:
    ts.open(_spec(tmp_path / "a", _metadata(name, 0, "little")), create=True).result()
    written = json.loads((tmp_path / "a" / "zarr.json").read_text())["fill_value"]
    data_type = parse_data_type(name)
    assert data_type.fill_value_to_json(data_type.parse_fill_value(written)) == written
    ours = zarr3_backend.open_array(str(tmp_path / "a"))
    theirs = ts.open(_spec(tmp_path / "a"), open=True).result()
    assert _bits(np.asarray(ours.fill_value, ours.dtype)) == _bits(np.asarray(theirs.fill_value))


SHARDED = [
    {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [7],
            "codecs": [
                {"name": "bytes", "configuration": {"endian": "big"}},
                {"name": "zstd", "configuration": {"level": 3}},
            ],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end",
        },
    }
]


@pytest.mark.parametrize("writer", ["tensorstore", "ours"])
@pytest.mark.parametrize("name", ["bfloat16", "int4", "float4_e2m1fn", "float8_e4m3fnuz"])
def test_sharded_and_compressed_both_ways(name: str, writer: str, tmp_path: Path) -> None:
    values = _patterns(name)
    meta = {**_metadata(name, values.size, "big"), "codecs": SHARDED}
    meta["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": [21]}}
    if writer == "tensorstore":
        ts.open(_spec(tmp_path / "a", meta), create=True).result()[: values.size].write(values).result()
    else:
        ours = zarr3_backend.create_array(
            str(tmp_path / "a"), shape=tuple(meta["shape"]), chunks=(7,), shards=(21,), dtype=name,
            fill_value=TYPES[name], serializer=SHARDED[0]["configuration"]["codecs"][0],
            compressors=SHARDED[0]["configuration"]["codecs"][1:],
        )  # fmt: skip
        ours[: values.size] = values
    theirs = ts.open(_spec(tmp_path / "a"), open=True).result().read().result()
    got = zarr3_backend.open_array(str(tmp_path / "a"))[...]
    assert np.array_equal(_bits(got), _bits(theirs)) and np.array_equal(
        _bits(got[: values.size]), _bits(values)
    )
    assert np.array_equal(
        _bits(got[values.size :]), _bits(np.full(7, parse_data_type(name).parse_fill_value(TYPES[name])))
    )
