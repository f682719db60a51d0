"""convert keeps what the archive chose: each array's compressor and filters in v3 form, crc32c after.

Before, every array was re-encoded as zstd without shuffle: blosc-lz4 with
byte shuffle float data grew 25-40%. ``codecs=`` still overrides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr

import zarr3_backend

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def smooth(shape: tuple[int, ...] = (48, 40, 50)) -> np.ndarray:
    """Float fields like a reanalysis: smooth in space and time (shuffle pays off on them)."""
    t, y, x = np.meshgrid(*(np.linspace(0, 3, n) for n in shape), indexing="ij")
    noise = np.random.default_rng(0).normal(0, 0.05, shape)
    return (280 + 10 * np.sin(t + y) * np.cos(x) + noise).astype("float32")


def v2_source(path: Path, values: np.ndarray, compressor: Any, filters: Any = None) -> Path:
    array = zarr.create_array(
        path / "src.zarr",
        name="t2m",
        shape=values.shape,
        dtype=values.dtype,
        chunks=(8, 40, 50),
        zarr_format=2,
        compressors=compressor,
        filters=filters,
    )
    array[...] = values
    return path / "src.zarr"


def inner_codecs(path: Path, name: str = "t2m") -> list[dict[str, Any]]:
    document = zarr3_backend.open_array(path, name).metadata.to_json()
    (sharding,) = document["codecs"]
    return list(sharding["configuration"]["codecs"])


def stored_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and "zarr.json" not in p.name)


def test_blosc_keeps_its_cname_level_and_shuffle_and_the_size(tmp_path: Path) -> None:
    values = smooth()
    src = v2_source(tmp_path, values, numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    dst = tmp_path / "dst.zarr"
    zarr3_backend.convert(src, dst)
    codecs = inner_codecs(dst)
    assert [c["name"] for c in codecs] == ["bytes", "blosc", "crc32c"]
    blosc = codecs[1]["configuration"]
    assert (blosc["cname"], blosc["clevel"], blosc["shuffle"]) == ("lz4", 5, "shuffle")
    np.testing.assert_array_equal(zarr3_backend.open_array(dst, "t2m")[...], values)
    assert stored_bytes(dst) <= 1.10 * stored_bytes(src)


@pytest.mark.parametrize(
    ("compressor", "expected"),
    [
        (numcodecs.Zstd(level=7), {"name": "zstd", "configuration": {"level": 7, "checksum": False}}),
        (numcodecs.GZip(level=3), {"name": "gzip", "configuration": {"level": 3}}),
        (numcodecs.Zlib(level=2), {"name": "numcodecs.zlib", "configuration": {"level": 2}}),
    ],
    ids=["zstd", "gzip", "zlib"],
)
def test_other_compressors_are_kept(tmp_path: Path, compressor: Any, expected: dict[str, Any]) -> None:
    values = smooth((16, 40, 50))
    src = v2_source(tmp_path, values, compressor)
    zarr3_backend.convert(src, tmp_path / "dst.zarr")
    codecs = inner_codecs(tmp_path / "dst.zarr")
    assert [c["name"] for c in codecs] == ["bytes", expected["name"], "crc32c"]
    assert codecs[1]["configuration"] == expected["configuration"]
    np.testing.assert_array_equal(zarr3_backend.open_array(tmp_path / "dst.zarr", "t2m")[...], values)


def test_array_filters_are_kept_before_the_serializer(tmp_path: Path) -> None:
    values = np.arange(16 * 40 * 50, dtype="int32").reshape(16, 40, 50)
    src = v2_source(tmp_path, values, numcodecs.Zstd(level=1), filters=[numcodecs.Delta(dtype="<i4")])
    zarr3_backend.convert(src, tmp_path / "dst.zarr")
    names = [c["name"] for c in inner_codecs(tmp_path / "dst.zarr")]
    assert names == ["numcodecs.delta", "bytes", "zstd", "crc32c"]
    np.testing.assert_array_equal(zarr3_backend.open_array(tmp_path / "dst.zarr", "t2m")[...], values)


def test_a_v3_source_keeps_its_inner_chain(tmp_path: Path) -> None:
    blosc = {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle"}}
    src = zarr3_backend.create_array(
        tmp_path / "src.zarr",
        "t2m",
        shape=(16, 40, 50),
        dtype="float32",
        chunks=(4, 40, 50),
        compressors=[blosc],
    )
    src[...] = smooth((16, 40, 50))
    zarr3_backend.convert(tmp_path / "src.zarr", tmp_path / "dst.zarr")
    codecs = inner_codecs(tmp_path / "dst.zarr")
    assert [c["name"] for c in codecs] == ["bytes", "blosc", "crc32c"]
    assert codecs[1]["configuration"]["shuffle"] == "bitshuffle"
    assert codecs[1]["configuration"]["cname"] == "zstd"


def test_codecs_still_override(tmp_path: Path) -> None:
    src = v2_source(tmp_path, smooth((16, 40, 50)), numcodecs.Blosc(cname="lz4"))
    zarr3_backend.convert(src, tmp_path / "dst.zarr", codecs=["bytes", "gzip"])
    assert [c["name"] for c in inner_codecs(tmp_path / "dst.zarr")] == ["bytes", "gzip"]
