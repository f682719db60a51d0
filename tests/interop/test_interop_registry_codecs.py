"""``numcodecs.bitround`` and ``numcodecs.zfpy`` against zarr-python >= 3.4 (numcodecs' zarr3 wrappers), both
directions: we read what it writes bit for bit, it reads what we write, and the chunks are byte for byte the
same. ``numcodecs.bitround`` runs on our ``bitround`` implementation (the registry's alias), so this is the
cross-check of our float bit rounding against the implementation that writes it.

The oracle runs in its own Python 3.12 venv (``zarr_oracle.py``); without it these tests skip. The registry
names ``bitround``, ``zfp``, ``packbits``, ``reshape``, ``conditional`` and ``n5_default`` have no writer in
zarr-python 3.4: tests/codecs checks them against numcodecs and zfpy, and golden bytes from their spec texts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from interop_cases import assert_same
from zarr_oracle import oracle_or_skip, run_oracle

import zarr3_backend
from zarr3_backend.codecs import NumcodecsBitroundCodec
from zarr3_backend.codecs.chain import CodecChain


def _floats(dtype: str) -> np.ndarray:
    values = np.random.default_rng(64).normal(0, 300, 40).astype(dtype)
    values[::9] = np.nan
    values[4], values[5], values[6] = np.inf, -np.inf, -0.0
    return values


BITROUND = {"name": "numcodecs.bitround", "configuration": {"keepbits": 6}}
ZFPY_ACCURACY = {"name": "numcodecs.zfpy", "configuration": {"mode": 4, "tolerance": 0.01}}
ZFPY_RATE = {"name": "numcodecs.zfpy", "configuration": {"mode": 2, "rate": 16}}
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}

#: name -> (data type, filters, serializer, compressors); zfpy needs zfpy in both interpreters
CASES: dict[str, tuple[str, list[Any], Any, list[Any]]] = {
    "bitround_float32": ("float32", [BITROUND], BYTES, []),
    "bitround_float64_zstd": ("float64", [{**BITROUND, "configuration": {"keepbits": 20}}], BYTES, [ZSTD]),
    "bitround_float16": ("float16", [{**BITROUND, "configuration": {"keepbits": 3}}], BYTES, []),
    "zfpy_accuracy_float64": ("float64", [], ZFPY_ACCURACY, []),
    "zfpy_rate_float32": ("float32", [], ZFPY_RATE, []),
}

ORACLE = """
from zarr.registry import get_codec_class
def build(codec):
    return get_codec_class(codec["name"]).from_dict(codec)
if ARGS.get("path"):
    data = np.load(ARGS["data"])
    a = zarr.create_array(ARGS["path"], shape=data.shape, chunks=(8,), dtype=ARGS["dtype"], fill_value=0,
                          filters=[build(c) for c in ARGS["filters"]] or None,
                          serializer=build(ARGS["serializer"]),
                          compressors=[build(c) for c in ARGS["compressors"]] or None)
    a[:] = data
if ARGS.get("read"):
    np.save(ARGS["out"], zarr.open_array(ARGS["read"], mode="r")[...])
print(json.dumps(None))
"""


def _oracle(name: str) -> Path:
    if "zfpy" in name:
        pytest.importorskip("zfpy")
        return oracle_or_skip((3, 4), ("zfpy",))
    return oracle_or_skip((3, 4))


def _args(tmp_path: Path, name: str) -> dict[str, Any]:
    dtype, filters, serializer, compressors = CASES[name]
    np.save(tmp_path / "data.npy", _floats(dtype))
    return {"data": str(tmp_path / "data.npy"), "dtype": dtype, "filters": filters, "serializer": serializer,
            "compressors": compressors}  # fmt: skip


def _chunks(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != "zarr.json"
    }


@pytest.mark.parametrize("name", CASES)
def test_zarr_python_writes_we_read(name: str, tmp_path: Path) -> None:
    oracle = _oracle(name)
    arguments = _args(tmp_path, name)
    theirs = tmp_path / "theirs.zarr"
    run_oracle(
        oracle, ORACLE, path=str(theirs), read=str(theirs), out=str(tmp_path / "read.npy"), **arguments
    )
    assert_same(zarr3_backend.open_array(str(theirs))[...], np.load(tmp_path / "read.npy"), name)


@pytest.mark.parametrize("name", CASES)
def test_we_write_zarr_python_reads_the_same_bytes(name: str, tmp_path: Path) -> None:
    oracle = _oracle(name)
    arguments = _args(tmp_path, name)
    data = np.load(arguments["data"])
    codecs = [*arguments["filters"], arguments["serializer"], *arguments["compressors"]]
    ours = zarr3_backend.create_array(str(tmp_path / "ours.zarr"), shape=data.shape, chunks=(8,),
                                      dtype=arguments["dtype"], fill_value=0, codecs=codecs)  # fmt: skip
    ours[:] = data
    theirs = tmp_path / "theirs.zarr"
    run_oracle(
        oracle,
        ORACLE,
        path=str(theirs),
        read=str(tmp_path / "ours.zarr"),
        out=str(tmp_path / "read.npy"),
        **arguments,
    )
    assert_same(np.load(tmp_path / "read.npy"), ours[...], name)
    assert _chunks(tmp_path / "ours.zarr") == _chunks(theirs)


def test_numcodecs_bitround_is_our_codec() -> None:
    chain = CodecChain.from_json([BITROUND, BYTES])
    assert isinstance(chain.codecs[0], NumcodecsBitroundCodec)
