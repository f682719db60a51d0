"""Round-trip properties: random Datasets written with to_zarr3 read back identically.

Readers: xarray with ``engine="zarr"`` (zarr-python), ``engine="zarr3"``
(when registered) and tensorstore (array values). Chunk and shard shapes,
dask chunks (aligned or not), fill values and attributes are all drawn.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarr3_backend.xarray.write.planner  # noqa: F401  (registers .to_zarr3 until zarr3_backend does)
from zarr3_backend.dask.write_graph import ShardAlignmentWarning

DTYPES = ["int8", "uint16", "int32", "int64", "float32", "float64", "bool"]
DIMS = ("a", "b", "c")
pytestmark = [
    pytest.mark.validate_stores,
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated metadata:RuntimeWarning"),
]


@st.composite
def variables(draw, sizes: dict[str, int]):
    ndim = draw(st.integers(1, len(sizes)))
    dims = tuple(draw(st.permutations(list(sizes)))[:ndim])
    shape = tuple(sizes[d] for d in dims)
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    values = np.asarray(
        draw(st.lists(st.integers(-100, 100), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    )
    data = (values % 2 == 0) if dtype == np.dtype(bool) else values.astype(dtype).reshape(shape)
    if dtype.kind == "f" and draw(st.booleans()):
        data = data.astype(dtype).copy()
        data.reshape(-1)[:: draw(st.integers(2, 5))] = np.nan
    chunks = tuple(draw(st.integers(1, n + 1)) for n in shape)
    encoding: dict = {"chunks": chunks}
    if draw(st.booleans()):
        encoding["shards"] = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    if dtype.kind in "iu" and draw(st.booleans()):
        encoding["fill_value"] = int(draw(st.integers(0, 100)))
    attrs = draw(
        st.dictionaries(
            st.sampled_from(["units", "long_name", "n"]),
            st.one_of(st.text(max_size=5), st.integers(-5, 5)),
            max_size=2,
        )
    )
    return xr.Variable(dims, np.reshape(data, shape), attrs), encoding


@st.composite
def datasets(draw):
    sizes = {d: draw(st.integers(1, 9)) for d in DIMS[: draw(st.integers(1, 3))]}
    names = draw(st.lists(st.sampled_from(["t2m", "u", "v", "q"]), min_size=1, max_size=3, unique=True))
    drawn = {name: draw(variables(sizes)) for name in names}
    ds = xr.Dataset({n: v for n, (v, _) in drawn.items()}, attrs={"title": draw(st.text(max_size=8))})
    if draw(st.booleans()):
        ds = ds.assign_coords({d: np.arange(n) * 2 for d, n in sizes.items()})
    if draw(st.booleans()):
        ds = ds.chunk({d: draw(st.integers(1, n)) for d, n in ds.sizes.items()})
    return ds, {n: e for n, (_, e) in drawn.items()}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets())
def test_round_trip(case):
    ds, encoding = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.zarr"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ShardAlignmentWarning)
            ds.to_zarr3(path, encoding=encoding)
        expected = ds.compute()
        for engine in ("zarr", "zarr3"):
            try:
                back = xr.open_dataset(path, engine=engine).load()
            except ValueError as exc:
                if engine == "zarr3" and "zarr3" in str(exc):
                    continue
                raise
            xr.testing.assert_identical(back, expected)
        ts = pytest.importorskip("tensorstore")
        for name, variable in expected.data_vars.items():
            spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / name)}}
            np.testing.assert_array_equal(ts.open(spec).result().read().result(), variable.values)
