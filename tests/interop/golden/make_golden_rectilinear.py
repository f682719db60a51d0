"""Write the rectilinear golden stores under ``tests/interop/golden/zarr_python/``, with zarr-python >= 3.2.

zarr-python 3.2+ needs Python 3.12; run this with the oracle interpreter (see
``tests/zarr_oracle.py``, which builds it under ``~/.cache/zarr3_backend/``)::

    ~/.cache/zarr3_backend/oracle-zarr/bin/python tests/interop/golden/make_golden_rectilinear.py

Layout as ``make_golden.py``: each store's root is the array, ``expected.npz`` holds its data as ``"root"``.
Some chunks are left unwritten, so readers must give the fill value there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import zarr

HERE = Path(__file__).resolve().parent / "zarr_python"
MONTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def _write(name: str, shape: tuple[int, ...], fill: int, **kwargs: object) -> None:
    path = HERE / name
    shutil.rmtree(path, ignore_errors=True)
    array = zarr.create_array(str(path), shape=shape, dtype="int32", fill_value=fill, **kwargs)
    data = np.arange(np.prod(shape), dtype="int32").reshape(shape)
    expected = np.full(shape, fill, dtype="int32")
    written = tuple(slice(0, n - n // 3) for n in shape)  # the far chunks stay missing
    array[written] = data[written]
    expected[written] = data[written]
    np.savez(path / "expected.npz", root=expected)


def main() -> None:
    zarr.config.set({"array.rectilinear_chunks": True})
    _write("rectilinear_months_rle", (365, 5), -1, chunks=[MONTHS, [2, 3]], compressors=None)
    _write("rectilinear_mixed", (6, 9), 7, chunks=[[1, 1, 1, 3], [4, 4, 1]])
    _write("rectilinear_shards_months", (59, 6), -9, chunks=(1, 3), shards=[[31, 28], 6])


if __name__ == "__main__":
    main()
