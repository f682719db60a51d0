"""The registry codecs inside whole arrays, and the zarr-extensions repository's own samples.

``golden/zarr_extensions/`` holds files copied unchanged from zarr-developers/zarr-extensions (commit
4da7b37): the ``bitround`` sample stores (``codecs/bitround/sample_data``, written with zarrs), the
``n5_default`` example array and the ``zfp`` example configurations.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.codecs import codec_from_json
from zarr3_backend.errors import Zarr3Error

SAMPLES = Path(__file__).parent / "golden" / "zarr_extensions"
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
SAMPLE_VALUES = {
    "bitround_float32": (
        [0.0, 0.1, 1.2, 12.3, 123.4, 1234.5, np.nan, np.inf, -np.inf],
        [0.0, 0.1015625, 1.25, 12.0, 120.0, 1280.0, np.nan, np.inf, -np.inf],
    ),
    "bitround_uint8": (
        [0, 1, 10, 11, 100, 123, 200, 208, 209, 255],
        [0, 1, 10, 12, 96, 128, 192, 192, 224, 224],
    ),
}


@pytest.mark.parametrize("name", SAMPLE_VALUES)
def test_the_bitround_samples_read_and_write_back_byte_for_byte(name: str, tmp_path: Path) -> None:
    original, rounded = SAMPLE_VALUES[name]
    sample = zarr3_backend.open_array(str(SAMPLES / f"{name}.zarr"))
    np.testing.assert_array_equal(sample[...], np.array(rounded, sample.dtype))
    ours = zarr3_backend.create_array(
        str(tmp_path / "ours.zarr"), shape=sample.shape, chunks=sample.shape, dtype=sample.dtype,
        codecs=[{"name": "bitround", "configuration": {"keepbits": 3}}, BYTES],
    )  # fmt: skip
    ours[...] = np.array(original, sample.dtype)
    assert (tmp_path / "ours.zarr" / "c" / "0").read_bytes() == (
        SAMPLES / f"{name}.zarr" / "c" / "0"
    ).read_bytes()


def test_the_n5_example_array_opens_and_takes_n5_blocks(tmp_path: Path) -> None:
    store = tmp_path / "n5.zarr"
    store.mkdir()
    (store / "zarr.json").write_bytes((SAMPLES / "n5_zstd_array" / "zarr.json").read_bytes())
    array = zarr3_backend.open_array(str(store), mode="r+")
    assert array.shape == (256, 128) and not array[...].any()
    data = np.arange(256 * 128, dtype="float32").reshape(256, 128)
    array[...] = data
    block = (store / "0" / "0").read_bytes()  # the v2 key encoding with "/"
    assert struct.unpack(">HH2I", block[:12]) == (0, 2, 128, 256)  # N5 order: fastest dimension first
    np.testing.assert_array_equal(zarr3_backend.open_array(str(store))[...], data)


@pytest.mark.parametrize("path", sorted((SAMPLES / "zfp_examples").glob("*.json")), ids=lambda p: p.stem)
def test_the_zfp_example_configurations(path: Path, tmp_path: Path) -> None:
    pytest.importorskip("zfpy")
    document = json.loads(path.read_text())
    codec = codec_from_json(document)
    assert codec is not None and codec.to_json() == document
    data = np.random.default_rng(7).normal(size=(12, 10))
    array = zarr3_backend.create_array(
        str(tmp_path / "z.zarr"), shape=data.shape, chunks=(8, 8), dtype="float64", codecs=[document]
    )
    if document["configuration"]["mode"] == "expert":
        with pytest.raises(Zarr3Error, match="cannot write expert mode"):
            array[...] = data
        return
    array[...] = data
    back = zarr3_backend.open_array(str(tmp_path / "z.zarr"))[...]
    if document["configuration"]["mode"] == "reversible":
        np.testing.assert_array_equal(back, data)
    elif document["configuration"]["mode"] == "fixed_accuracy":
        assert np.abs(back - data).max() <= 0.05


CHAINS = {
    "packbits_bool": ("bool", [{"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}]),
    "packbits_low_bits": ("uint16", [{"name": "packbits", "configuration": {"last_bit": 11}}, {"name": "gzip"}]),
    "reshape_then_bytes": ("int32", [{"name": "reshape", "configuration": {"shape": [-1]}}, BYTES]),
    "reshape_in_shards": ("float32", [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": [
        {"name": "reshape", "configuration": {"shape": [[0, 1]]}}, BYTES], "index_codecs": [BYTES]}}]),
    "bitround_in_shards": ("float64", [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": [
        {"name": "bitround", "configuration": {"keepbits": 52}}, BYTES, {"name": "crc32c"}], "index_codecs": [BYTES]}}]),
    "conditional_zstd": ("uint8", [{"name": "bytes"}, {"name": "conditional", "configuration": {"codecs": [
        {"name": "zstd", "configuration": {"level": 3, "checksum": False}}, {"name": "crc32c"}]}}]),
    "n5_default": ("int16", [{"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "gzip", "configuration": {"level": 1}}]}}]),
}  # fmt: skip


def _data(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(8)
    if dtype == "bool":
        return rng.random((8, 9)) > 0.5
    if dtype == "uint16":
        return rng.integers(0, 4096, (8, 9)).astype(dtype)  # 12 bits: packbits keeps bits 0..11
    if dtype == "uint8":
        data = np.frombuffer(os.urandom(72), "uint8").reshape(8, 9).copy()
        data[:4] = 0  # zstd pays off on half the chunks, not on the other
        return data
    return (rng.normal(size=(8, 9)) * 100).astype(dtype)


@pytest.mark.parametrize("name", CHAINS)
def test_arrays_round_trip_with_partial_writes(name: str, tmp_path: Path) -> None:
    dtype, codecs = CHAINS[name]
    data = _data(dtype)
    shards = "sharding" in json.dumps(codecs)
    path = str(tmp_path / "a.zarr")
    array = zarr3_backend.create_array(
        path, shape=data.shape, chunks=(4, 6) if shards else (4, 3), dtype=dtype, codecs=codecs
    )
    array[...] = data
    array[1:3, 2:7] = data[5:7, 1:6]
    expected = data.copy()
    expected[1:3, 2:7] = data[5:7, 1:6]
    reopened = zarr3_backend.open_array(path)
    np.testing.assert_array_equal(reopened[...], expected)
    np.testing.assert_array_equal(reopened[3:8, 4], expected[3:8, 4])


def test_conditional_chunks_record_which_codecs_ran(tmp_path: Path) -> None:
    """Zero chunks are zstd-compressed (bit 0), random ones stored raw; crc32c (which always grows a chunk)
    is skipped by our writer's rule, and every chunk reads back."""
    dtype, codecs = CHAINS["conditional_zstd"]
    data = np.zeros((8, 64), "uint8")
    data[4:] = np.frombuffer(os.urandom(256), "uint8").reshape(4, 64)
    array = zarr3_backend.create_array(
        str(tmp_path / "c.zarr"), shape=data.shape, chunks=(4, 64), dtype=dtype, codecs=codecs
    )
    array[...] = data
    data[0, 0] = 1  # a zero chunk would not be stored at all
    array[...] = data
    headers = [(tmp_path / "c.zarr" / "c" / str(i) / "0").read_bytes()[0] for i in (0, 1)]
    assert headers == [1, 0]
    np.testing.assert_array_equal(zarr3_backend.open_array(str(tmp_path / "c.zarr"))[...], data)
