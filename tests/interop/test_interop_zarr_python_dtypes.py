"""``fixed_length_utf32`` against zarr-python >= 3.4 (the subprocess oracle), both ways, byte for byte.

zarr-python 3.4 has no ML formats (``bfloat16``, ``float8_*``, ``int4`` ...) nor the narrow
``complex_*`` types: `test_zarr_python_still_has_no_ml_formats` fails the day it gains them,
so that a cross-check is added then; until then tensorstore is their oracle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from zarr_oracle import oracle_or_skip, run_oracle

import zarr3_backend

WRITE = """
a = zarr.create_array(ARGS["path"], shape=(5,), chunks=(2,), dtype="U3", fill_value="zz", compressors=None)
a[:3] = np.array(["a", "\u00e9\u00e9\u00e9", "\U0001f600"], "U3")
print(json.dumps([zarr.open_array(ARGS["read"], mode="r")[...].tolist(), a.metadata.to_dict()["data_type"]]))
"""

ML_FORMATS = """
try:
    import ml_dtypes  # numpy then knows the names; zarr-python still maps none of them to a data type
except ImportError:
    pass
failed = []
for name in ARGS["names"]:
    try:
        zarr.create_array({}, shape=(1,), dtype=name)
    except Exception:
        failed.append(name)
print(json.dumps(failed))
"""


def _chunks(path: Path) -> dict[str, bytes]:
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in path.rglob("*")
        if p.is_file() and p.name != "zarr.json"
    }


def test_fixed_length_utf32_both_ways(tmp_path: Path) -> None:
    python = oracle_or_skip((3, 4))
    ours = zarr3_backend.create_array(
        str(tmp_path / "ours"), shape=(5,), chunks=(2,), dtype="U3", fill_value="zz", compressors=None
    )
    ours[:3] = np.array(["a", "ééé", "\U0001f600"], "U3")
    read, data_type = run_oracle(python, WRITE, path=str(tmp_path / "theirs"), read=str(tmp_path / "ours"))
    assert data_type == {"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}
    assert read == ours[...].tolist() == ["a", "ééé", "\U0001f600", "zz", "zz"]
    assert zarr3_backend.open_array(str(tmp_path / "theirs"))[...].tolist() == read
    assert _chunks(tmp_path / "ours") == _chunks(tmp_path / "theirs")


def test_zarr_python_still_has_no_ml_formats() -> None:
    python = oracle_or_skip((3, 4))
    names = ["bfloat16", "float8_e4m3fn", "int4", "uint4", "float4_e2m1fn", "complex_bfloat16"]
    assert run_oracle(python, ML_FORMATS, names=names) == names
