"""engine="zarr3" accepts what code written for engine="zarr" passes: keywords, exception types, async loading."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.store import make_store
from zarr3_backend.testing.stores import CountingStore
from zarr3_backend.xarray import Zarr3BackendArray

pytest.importorskip("zarr")
pytestmark = [
    pytest.mark.validate_stores,
    pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning", "ignore::FutureWarning"),
]


def sample() -> xr.Dataset:
    data = np.arange(24.0).reshape(6, 4)
    data[0, 0] = -1.0
    return xr.Dataset(
        {"v": (("t", "x"), data), "w": (("t",), np.arange(6, dtype="int32"))},
        coords={"t": pd.date_range("2000-01-01", periods=6), "x": np.arange(4)},
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.zarr"
    sample().to_zarr3(path, encoding={"v": {"fill_value": -1.0, "chunks": (2, 4), "shards": (6, 4)}})
    return path


# --- open_dataset keywords ---------------------------------------------------------------------------------------


def test_open_dataset_accepts_zarr_engine_keywords(store: Path) -> None:
    expected = xr.open_dataset(store, engine="zarr")
    for kwargs in (
        {"consolidated": True},
        {"consolidated": False},
        {"consolidated": None},
        {"zarr_format": 3},
        {"cache_members": False},
        {"use_zarr_fill_value_as_mask": False},
    ):
        xr.testing.assert_identical(xr.open_dataset(store, engine="zarr3", **kwargs).load(), expected.load())


def test_use_zarr_fill_value_as_mask_really_masks(store: Path) -> None:
    # xarray's own entry point accepts this keyword but drops it for v3 stores, so it is no oracle here:
    # True means an array's fill_value becomes the _FillValue xarray masks with (its v2 behaviour).
    ours = xr.open_dataset(store, engine="zarr3", use_zarr_fill_value_as_mask=True, drop_variables=["t", "x"])
    expected = sample().drop_vars(["t", "x"])
    xr.testing.assert_equal(ours.v, expected.v.where(expected.v != -1.0))
    xr.testing.assert_equal(ours.w, expected.w.where(expected.w != 0))  # the default int fill value 0
    assert ours.v.encoding["_FillValue"] == -1.0 and "fill_value" not in ours.v.encoding
    unmasked = xr.open_dataset(store, engine="zarr3", use_zarr_fill_value_as_mask=False)
    assert unmasked.v.values[0, 0] == -1.0 and unmasked.v.encoding["fill_value"] == -1.0


@pytest.mark.parametrize("writer", ["zarr", "zarr3"])
def test_cf_fill_value_attribute_stays_the_mask(tmp_path: Path, writer: str) -> None:
    # An int variable with CF _FillValue -9 over the zarr fill_value 0: the attribute is what the writer meant.
    path = tmp_path / "cf.zarr"
    ds = xr.Dataset(
        {"i": ("x", np.array([0, -9, 3], dtype="int16")), "j": ("x", np.array([0, 1, 2], dtype="int16"))}
    )
    encoding = {"i": {"_FillValue": -9}}
    if writer == "zarr":
        ds.to_zarr(path, zarr_format=3, encoding=encoding)
    else:
        ds.to_zarr3(path, encoding=encoding)
    masked_i = [0.0, np.nan, 3.0]
    for flag in (None, False):
        opened = xr.open_dataset(path, engine="zarr3", use_zarr_fill_value_as_mask=flag)
        np.testing.assert_array_equal(opened.i.values, masked_i)
        xr.testing.assert_identical(
            opened.load(), xr.open_dataset(path, engine="zarr", use_zarr_fill_value_as_mask=flag).load()
        )
    # True: the CF attribute still wins for i; j, without one, is masked with its zarr fill_value 0.
    opened = xr.open_dataset(path, engine="zarr3", use_zarr_fill_value_as_mask=True)
    np.testing.assert_array_equal(opened.i.values, masked_i)
    assert opened.i.encoding["_FillValue"] == -9 and opened.i.encoding["fill_value"] == 0
    np.testing.assert_array_equal(opened.j.values, [np.nan, 1.0, 2.0])


def test_zarr_format_2_is_refused_clearly(store: Path) -> None:
    with pytest.raises(zarr3_backend.MetadataError, match="zarr_format=2: .* holds a Zarr v3 hierarchy"):
        xr.open_dataset(store, engine="zarr3", zarr_format=2)
    with pytest.raises(
        zarr3_backend.WriteError, match="zarr_format=2 is not supported.*'zarr3 convert SRC DST'"
    ):
        sample().to_zarr3(store.parent / "v2.zarr", zarr_format=2)
    assert not (store.parent / "v2.zarr").exists()


@pytest.mark.invalid_store  # stale on purpose
def test_consolidated_false_ignores_stale_consolidated_metadata(store: Path) -> None:
    zarr3_backend.consolidate_metadata(str(store))
    member = store / "w" / "zarr.json"
    document = json.loads(member.read_text())
    document["attributes"]["note"] = "fresh"  # the member changes behind the root's consolidated copy
    member.write_text(json.dumps(document))
    assert "note" not in xr.open_dataset(store, engine="zarr3").w.attrs
    assert xr.open_dataset(store, engine="zarr3", consolidated=False).w.attrs["note"] == "fresh"


def test_standard_chunking_keywords(store: Path) -> None:
    ds = xr.open_dataset(store, engine="zarr3", chunks={"t": 3}, inline_array=True, cache=False)
    assert ds.v.chunks == ((3, 3), (4,))
    assert xr.open_dataset(store, engine="zarr3", chunks="auto").v.chunks is not None
    xr.testing.assert_identical(ds.load(), xr.open_dataset(store, engine="zarr").load())


def test_to_zarr3_accepts_zarr_engine_keywords(tmp_path: Path) -> None:
    ds = sample().chunk({"t": 3})
    ds.to_zarr3(tmp_path / "a.zarr", zarr_format=3, safe_chunks=False, align_chunks=True)
    ds.to_zarr3(tmp_path / "b.zarr", safe_chunks=True, align_chunks=False)
    for name in ("a.zarr", "b.zarr"):
        xr.testing.assert_identical(xr.open_dataset(tmp_path / name, engine="zarr").load(), sample())


# --- exception types ----------------------------------------------------------------------------------------------


def _both_raise(tmp_path: Path, exc: type[Exception], write) -> None:  # type: ignore[no-untyped-def]
    """``write(path, engine)`` raises ``exc`` with engine="zarr" (the oracle) and with to_zarr3."""
    with pytest.raises(exc):
        write(tmp_path / "oracle.zarr", "zarr")
    with pytest.raises(exc):
        write(tmp_path / "ours.zarr", "zarr3")


def _to(ds: xr.Dataset, path: Path, engine: str, **kwargs) -> None:  # type: ignore[no-untyped-def]
    if engine == "zarr":
        ds.to_zarr(path, zarr_format=3, **kwargs)
    else:
        ds.to_zarr3(path, **kwargs)


def test_region_auto_with_missing_coordinate_values_is_a_key_error(tmp_path: Path) -> None:
    def write(path: Path, engine: str) -> None:
        _to(sample(), path, engine)
        shifted = sample().isel(t=slice(0, 2)).assign_coords(t=pd.date_range("1990-01-01", periods=2))
        _to(shifted, path, engine, region="auto", mode="r+")

    _both_raise(tmp_path, KeyError, write)


def test_region_slice_with_a_step_is_a_value_error(tmp_path: Path) -> None:
    def write(path: Path, engine: str) -> None:
        _to(sample(), path, engine)
        _to(sample().isel(t=slice(0, 3)).drop_vars(["t", "x"]), path, engine, region={"t": slice(0, 6, 2)})

    _both_raise(tmp_path, ValueError, write)


def test_variable_named_0_is_a_type_error(tmp_path: Path) -> None:
    ds = xr.Dataset({0: ("x", np.arange(3.0))})
    _both_raise(tmp_path, TypeError, lambda path, engine: _to(ds, path, engine))
    assert not (tmp_path / "ours.zarr").exists()


# --- the lazy array wrapper and async loading ----------------------------------------------------------------------


def test_backend_array_does_not_expose_the_engine_array_as_array(store: Path) -> None:
    wrapped = Zarr3BackendArray(zarr3_backend.open_array(str(store), "v"))
    assert not hasattr(wrapped, "array")
    assert isinstance(wrapped.zarr_array, zarr3_backend.Array)
    variable = xr.open_dataset(store, engine="zarr3").v.variable._data
    chain = []
    while hasattr(variable, "array"):  # what xarray walks
        variable = variable.array
        chain.append(type(variable))
    assert zarr3_backend.Array not in chain


class SlowStore(CountingStore):
    """Adds ``delay`` seconds to every chunk read and records how many reads overlap."""

    def __init__(self, inner, delay: float) -> None:  # type: ignore[no-untyped-def]
        super().__init__(inner)
        self.delay = delay
        self.in_flight = 0
        self.most_in_flight = 0
        self._gate = threading.Lock()

    def _slowly(self, read, requests):  # type: ignore[no-untyped-def]
        requests = list(requests)
        if all(key.endswith("zarr.json") for key, _ in requests):
            return read(requests)
        with self._gate:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            return read(requests)
        finally:
            with self._gate:
                self.in_flight -= 1

    def get_many_versioned(self, requests):  # type: ignore[no-untyped-def]
        return self._slowly(super().get_many_versioned, requests)


def test_load_async_reads_variables_concurrently(tmp_path: Path) -> None:
    n, delay = 4, 0.3
    ds = xr.Dataset({f"v{i}": (("t",), np.arange(10.0) + i) for i in range(n)})
    ds.to_zarr3(tmp_path / "a.zarr")
    slow = SlowStore(make_store(tmp_path / "a.zarr", read_only=True), delay)
    lazy = xr.open_dataset(slow, engine="zarr3")
    start = time.perf_counter()
    loaded = asyncio.run(lazy.load_async())
    elapsed = time.perf_counter() - start
    xr.testing.assert_identical(loaded, ds)
    assert slow.most_in_flight == n  # every variable's read was in flight at once
    assert elapsed < n * delay * 0.9  # ~ the slowest read, not the sum


def test_async_indexing_path(store: Path) -> None:
    lazy = xr.open_dataset(store, engine="zarr3")
    picked = asyncio.run(lazy.v.isel(t=[0, 3], x=slice(1, 3)).load_async())
    xr.testing.assert_identical(picked, sample().v.isel(t=[0, 3], x=slice(1, 3)))
    wrapped = Zarr3BackendArray(zarr3_backend.open_array(str(store), "v"))
    from xarray.core import indexing

    out = asyncio.run(wrapped.async_getitem(indexing.VectorizedIndexer((np.array([0, 5]), np.array([1, 2])))))
    np.testing.assert_array_equal(out, sample().v.values[[0, 5], [1, 2]])


def test_no_warning_noise_from_keywords(store: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.open_dataset(store, engine="zarr3", consolidated=None, zarr_format=3, cache_members=True)


def test_datatree_and_groups_accept_the_same_keywords(tmp_path: Path) -> None:
    tree = xr.DataTree.from_dict({"/": sample(), "/child": xr.Dataset({"b": ("y", np.array([0.0, -1.0]))})})
    tree.to_zarr3(tmp_path / "t.zarr", encoding={"/child": {"b": {"fill_value": -1.0}}})
    kwargs = {"consolidated": False, "zarr_format": 3, "cache_members": False}
    xr.testing.assert_identical(
        xr.open_datatree(tmp_path / "t.zarr", engine="zarr3", **kwargs).load(),
        xr.open_datatree(tmp_path / "t.zarr", engine="zarr").load(),
    )
    masked = xr.open_groups(tmp_path / "t.zarr", engine="zarr3", use_zarr_fill_value_as_mask=True)
    assert np.isnan(masked["/child"].b.values[1])
    with pytest.raises(zarr3_backend.MetadataError, match="zarr_format=2"):
        xr.open_datatree(tmp_path / "t.zarr", engine="zarr3", zarr_format=2)
