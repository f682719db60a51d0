"""Write the golden stores of registered extensions under ``tests/interop/golden/zarr_python/``, with zarr-python >= 3.4.

The ``scale_offset`` and ``cast_value`` codecs and the ``struct`` data type. zarr-python 3.4 needs
Python 3.12, and its ``cast_value`` needs ``cast-value-rs``; run this with the oracle interpreter
(see ``tests/zarr_oracle.py``)::

    ~/.cache/zarr3_backend/oracle-zarr/bin/python tests/interop/golden/make_golden_extensions.py

Layout as ``make_golden.py``: each store's root is the array, ``expected.npz`` holds the data
zarr-python reads back (the codecs are lossy) as ``"root"``. Some chunks are left unwritten,
so readers must give the fill value there.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import zarr

HERE = Path(__file__).resolve().parent / "zarr_python"
NAN_TO_ZERO = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}
POINT = {"name": "struct", "configuration": {"fields": [
    {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float32"}]}}  # fmt: skip
RECORD = {"name": "struct", "configuration": {"fields": [
    {"name": "id", "data_type": "int32"},
    {"name": "flag", "data_type": "uint8"},
    {"name": "point", "data_type": POINT},
    {"name": "time", "data_type": {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}},
]}}  # fmt: skip


def _write(name: str, data: np.ndarray, written: tuple[slice, ...], **kwargs: Any) -> None:
    path = HERE / name
    shutil.rmtree(path, ignore_errors=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.create_array(
            str(path), shape=data.shape, dtype=kwargs.pop("dtype", data.dtype), **kwargs
        )
        array[written] = data[written]
    np.savez(path / "expected.npz", root=zarr.open_array(str(path), mode="r")[...])


def _climate() -> np.ndarray:
    data = np.linspace(-30.0, 2500.0, 7 * 5).reshape(7, 5)
    data[1, 2] = data[5, 0] = np.nan
    data[2, 3] = 0.05  # rounds to the same stored value as -10 + 0.5 / 0.1 would
    return data


def main() -> None:
    _write(
        "scale_offset_cast_value_nan",
        _climate(),
        (slice(0, 6), slice(0, 4)),
        chunks=(3, 2),
        fill_value=np.nan,
        filters=[
            {"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
            {"name": "cast_value", "configuration": {"data_type": "uint8", "out_of_range": "clamp", "scalar_map": NAN_TO_ZERO}},
        ],
    )  # fmt: skip
    _write(
        "scale_offset_float32",
        np.linspace(-1e3, 1e3, 24, dtype="float32").reshape(4, 6),
        (slice(0, 4), slice(0, 3)),
        chunks=(2, 3),
        fill_value=5.0,
        filters=[{"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}],
    )
    _write(
        "cast_value_modes",
        np.array([-1e6, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 32767.5, 1e6, 7.7, -7.7, 0.0], dtype="float64"),
        (slice(0, 10),),
        chunks=(4,),
        fill_value=3.0,
        filters=[{"name": "cast_value", "configuration": {"data_type": "int16", "rounding": "towards-zero", "out_of_range": "clamp"}}],
        compressors=[{"name": "zstd", "configuration": {"level": 1}}],
    )  # fmt: skip
    _write(
        "scale_offset_uint16_wrap",
        np.arange(1000, 1300, 10, dtype="uint16").reshape(5, 6),
        (slice(0, 5), slice(0, 4)),
        chunks=(2, 4),
        fill_value=1000,
        filters=[
            {"name": "scale_offset", "configuration": {"offset": 1000}},
            {"name": "cast_value", "configuration": {"data_type": "uint8", "out_of_range": "wrap"}},
        ],
    )
    records = np.zeros(9, dtype=zarr.core.dtype.parse_data_type(RECORD, zarr_format=3).to_native_dtype())
    records["id"] = np.arange(9) - 4
    records["flag"] = np.arange(9) % 3
    records["point"]["x"] = np.linspace(-1, 1, 9)
    records["point"]["y"] = -0.0
    records["time"] = np.datetime64("2026-03-01T00:00:00") + np.arange(9).astype("m8[h]")
    fill = np.array((-1, 0, (np.nan, 0.0), np.datetime64("NaT", "s")), dtype=records.dtype)[()]
    _write("struct_nested", records, (slice(0, 6),), dtype=RECORD, chunks=(2,), fill_value=fill,
           serializer={"name": "bytes", "configuration": {"endian": "big"}})  # fmt: skip
    _write("struct_sharded", records, (slice(0, 7),), dtype=RECORD, chunks=(2,), shards=(4,), fill_value=fill)


if __name__ == "__main__":
    main()
