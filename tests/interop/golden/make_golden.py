"""Write the small golden stores committed under ``tests/interop/golden/``.

Run from the repository root (needs zarr-python and tensorstore)::

    python tests/interop/golden/make_golden.py

Layout: ``tests/interop/golden/<writer>/<case>/`` is a store whose root is the node
under test (an array or a group), next to it ``expected.npz`` holds the
data of every array in it keyed by node path (``"root"`` for the root
array) and, for hierarchies, ``expected.json`` the nodes and attributes.
Writers: ``zarr_python`` (zarr-python 3.1), ``tensorstore`` (zarr3
driver) and ``handwritten`` (bytes laid out by this script from the spec
text, for features neither writer does to the spec: ``r<N>`` data types
and ``must_understand: false`` extensions).

The script deletes and rewrites those directories; the stored bytes change
only when the writers change, except zarr-python's gzip chunks, whose gzip
header carries a timestamp.  ``tests/interop/test_golden.py`` reads the stores
with zarr3_backend alone.
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, where interop_cases.py is

from interop_cases import (  # noqa: E402
    BYTES_BE,
    CRC32C,
    GZIP,
    KEY_ENCODINGS,
    ZSTD,
    Case,
    blosc,
    transpose,
    write_tensorstore,
    write_zarr_python,
)

s = slice

ZARR_PYTHON_CASES = (
    Case(
        "sharded_blosc_crc32c_index",
        "float32",
        (13, 10),
        (4, 3),
        shards=(8, 6),
        compressors=(blosc("lz4", "shuffle", 4),),
        writes=((s(0, 6), s(0, 5)), (s(9, 13), s(7, 10))),
    ),
    Case(
        "sharded_index_start_gzip",
        "int16",
        (9, 7),
        (2, 3),
        shards=(4, 6),
        index_location="start",
        compressors=(GZIP,),
        writes=((s(1, 9, 3), s(None)),),
    ),
    Case("gzip_edge_chunks", "float64", (7, 5), (3, 2), compressors=(GZIP,), fill_value="NaN"),
    Case("transpose", "uint16", (4, 6), (3, 4), filters=(transpose(1, 0),)),
    Case("big_endian_zstd", "int64", (9,), (4,), endian="big", compressors=(ZSTD,), fill_value=-1),
    Case("v2_keys_dot", "uint32", (5, 5), (2, 2), chunk_key_encoding=KEY_ENCODINGS[2]),
    Case("v2_keys_slash", "int8", (5, 5), (2, 2), endian="none", chunk_key_encoding=KEY_ENCODINGS[3]),
    Case(
        "default_keys_dot",
        "float16",
        (5, 5),
        (2, 2),
        chunk_key_encoding=KEY_ENCODINGS[1],
        fill_value="-Infinity",
    ),
    Case("string_vlen_utf8", "string", (6, 4), (4, 3), compressors=(ZSTD,), fill_value="fill"),
    Case("datetime64_ns", "datetime64[ns]", (10,), (4,)),
    Case("timedelta64_s", "timedelta64[s]", (10,), (4,), fill_value=60),
    Case("complex128_nan_fill", "complex128", (5, 3), (2, 2), fill_value=["NaN", 1.5]),
    Case("bool", "bool", (6, 7), (4, 4), fill_value=True),
    Case("zero_d", "float64", (), ()),
    Case("empty_chunks_only", "int32", (6, 6), (3, 3), fill_value=42, writes=()),
    Case("sharded_string", "string", (6, 4), (2, 2), shards=(4, 4), writes=((s(0, 3), s(0, 3)),)),
)

TENSORSTORE_CASES = (
    Case(
        "sharded_blosc_crc32c_index_start",
        "uint16",
        (10, 7),
        (2, 2),
        shards=(4, 4),
        index_location="start",
        compressors=(blosc("zstd", "bitshuffle", 2),),
        writes=((s(1, 5), s(2, 6)),),
    ),
    Case(
        "transpose_then_sharding",
        "int64",
        (6, 10),
        (2, 3),
        shards=(6, 4),
        outer_filters=(transpose(1, 0),),
        compressors=(CRC32C,),
        fill_value=-7,
    ),
    Case(
        "sharded_index_big_endian",
        "float64",
        (9, 8),
        (2, 2),
        shards=(4, 4),
        index_codecs=(BYTES_BE, CRC32C),
        compressors=(ZSTD,),
    ),
    Case(
        "nested_sharding",
        "float32",
        (12, 12),
        (4, 4),
        shards=(8, 8),
        nested_chunks=(2, 2),
        compressors=(GZIP,),
        writes=((s(0, 5), s(3, 12)),),
    ),
    Case("gzip_crc32c_big_endian", "int32", (7, 5), (3, 2), endian="big", compressors=(GZIP, CRC32C)),
    Case("v2_keys_dot", "uint8", (5, 5), (2, 2), chunk_key_encoding=KEY_ENCODINGS[2]),
    Case("float32_nan_payload_fill", "float32", (6,), (4,), fill_value="0x7fc00001", writes=((s(0, 2),),)),
    Case("complex64", "complex64", (5, 3), (2, 2), fill_value=["Infinity", "0x80000000"]),
    Case("bool", "bool", (6, 7), (4, 4)),
    Case("zero_d", "int16", (), (), endian="big"),
    Case("zero_d_sharded", "float32", (), (), shards=(), compressors=(GZIP,)),
)


def main() -> None:
    warnings.simplefilter("ignore")
    for writer in ("zarr_python", "tensorstore", "handwritten"):
        shutil.rmtree(HERE / writer, ignore_errors=True)
    for case in ZARR_PYTHON_CASES:
        write_zarr_python(case, HERE / "zarr_python" / case.id)
        save_expected(HERE / "zarr_python" / case.id, {"root": case.expected()})
    for case in TENSORSTORE_CASES:
        write_tensorstore(case, HERE / "tensorstore" / case.id)
        save_expected(HERE / "tensorstore" / case.id, {"root": case.expected()})
    write_hierarchy(HERE / "zarr_python" / "hierarchy", consolidated=False)
    write_hierarchy(HERE / "zarr_python" / "hierarchy_consolidated", consolidated=True)
    write_raw_r24(HERE / "handwritten" / "r24")
    write_must_understand_false(HERE / "handwritten" / "must_understand_false")
    files = [p for p in HERE.rglob("*") if p.is_file() and p.name != "make_golden.py"]
    print(f"{len(files)} files, {sum(p.stat().st_size for p in files)} bytes")


def save_expected(
    directory: Path, arrays: dict[str, np.ndarray], nodes: dict[str, Any] | None = None
) -> None:
    """Write ``expected.npz`` (strings as fixed-width unicode) and ``expected.json``."""
    stored = {key: (a.astype(str) if a.dtype == object else a) for key, a in arrays.items()}
    np.savez_compressed(directory / "expected.npz", **stored)
    if nodes is not None:
        (directory / "expected.json").write_text(json.dumps(nodes, indent=1, sort_keys=True) + "\n")


HIERARCHY_GROUPS = {
    "": {"title": "golden hierarchy", "version": 3},
    "measurements": {"instrument": "thermometer", "calibration": {"offset": -0.5, "valid": [1, 2, None]}},
    "measurements/raw": {"unicode": "héllo"},
    "empty_group": {},
}
HIERARCHY_ARRAYS = {
    "measurements/temperature": ("float32", (4, 5), (2, 3), {"units": "K"}),
    "measurements/raw/counts": ("uint16", (7,), (3,), {}),
    "mask": ("bool", (3, 3), (2, 2), {"flag_meanings": ["bad", "good"]}),
}


def write_hierarchy(root: Path, consolidated: bool) -> None:
    """A nested group hierarchy with attributes on every node, optionally consolidated."""
    import zarr

    for path, attrs in HIERARCHY_GROUPS.items():
        zarr.create_group(str(root), path=path, attributes=attrs)
    arrays, nodes = (
        {},
        {path: {"node_type": "group", "attributes": a} for path, a in HIERARCHY_GROUPS.items()},
    )
    for path, (dtype, shape, chunks, attrs) in HIERARCHY_ARRAYS.items():
        data = (
            (np.arange(np.prod(shape)) % 5 == 1).reshape(shape)
            if dtype == "bool"
            else (np.arange(np.prod(shape), dtype=dtype).reshape(shape) * 3)
        )
        array = zarr.create_array(
            str(root), name=path, shape=shape, dtype=dtype, chunks=chunks, attributes=attrs
        )
        array[...] = data
        arrays[path] = data
        nodes[path] = {"node_type": "array", "attributes": attrs}
    if consolidated:
        zarr.consolidate_metadata(str(root))
    save_expected(root, arrays, nodes)


def write_raw_r24(root: Path) -> None:
    """An ``r24`` array laid out by hand: neither writer follows the spec for raw types.

    zarr-python has no ``r<N>`` (it writes ``raw_bytes``); tensorstore stores
    the fill value base64-encoded where the spec asks for an array of ints.
    """
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [5],
        "data_type": "r24",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": [1, 2, 3],
        "codecs": [{"name": "bytes"}, CRC32C],
        "attributes": {},
    }
    import crc32c

    (root / "c").mkdir(parents=True)
    (root / "zarr.json").write_text(json.dumps(meta, indent=2) + "\n")
    chunk = bytes(range(10, 16))
    (root / "c" / "0").write_bytes(chunk + crc32c.crc32c(chunk).to_bytes(4, "little"))
    expected = np.frombuffer(chunk + bytes([1, 2, 3]) * 3, dtype="V3")
    save_expected(root, {"root": expected})


def write_must_understand_false(root: Path) -> None:
    """Extensions marked ``must_understand: false`` that a reader must ignore.

    zarr-python 3.1 refuses any storage transformer and tensorstore any
    storage transformer at all, against the spec.
    """
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [6],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 7,
        "codecs": [{"name": "bytes"}],
        "attributes": {"a": 1},
        "storage_transformers": [{"name": "x-unknown-transformer", "must_understand": False}],
        "x_unknown_extension": {"must_understand": False, "value": [1, 2]},
    }
    (root / "c").mkdir(parents=True)
    (root / "zarr.json").write_text(json.dumps(meta, indent=2) + "\n")
    (root / "c" / "0").write_bytes(bytes([1, 2, 3, 4]))
    save_expected(root, {"root": np.array([1, 2, 3, 4, 7, 7], dtype="uint8")})


if __name__ == "__main__":
    main()
