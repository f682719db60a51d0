"""Parity with engine="zarr" on chunk encodings after selections, and on the exception types of bad encodings.

Each scenario is one of xarray's own zarr tests (``test_encoding_chunksizes``,
``test_indexing_roundtrip``, ``test_write_read_select_write``,
``test_chunk_encoding``, ``test_encoding_kwarg``, ``test_roundtrip_None_variable``),
run with ``engine="zarr"`` as the oracle on the same data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend import WriteError, WriteKeyError, WriteTypeError

zarr = pytest.importorskip("zarr")
pytestmark = pytest.mark.filterwarnings(
    "ignore::RuntimeWarning", "ignore::UserWarning", "ignore::FutureWarning"
)


def write_open(ds: xr.Dataset, path: Path, engine: str, **open_kwargs: object) -> xr.Dataset:
    """``ds`` written with ``engine`` (``to_zarr3`` for "zarr3") and opened again with it."""
    if engine == "zarr3":
        ds.to_zarr3(path)
    else:
        ds.to_zarr(path, zarr_format=3)
    return xr.open_dataset(path, engine=engine, **open_kwargs)  # type: ignore[arg-type]


def stored_chunks(path: Path, name: str, engine: str) -> tuple[int, ...]:
    if engine == "zarr3":
        return zarr3_backend.open_array(path, name).chunks
    return tuple(zarr.open_array(path / name, mode="r").chunks)


# --- chunk shapes carried over from the source ------------------------------------------------------------------------


def test_encoding_chunksizes_after_isel_drops_the_source_chunks(tmp_path: Path) -> None:
    original = xr.Dataset(coords={"x": np.arange(4), "y": np.arange(4), "t": np.arange(5)})
    original["v"] = xr.Variable(("x", "y", "t"), np.arange(80.0).reshape(4, 4, 5))
    original = original.chunk({"t": 1, "x": 2, "y": 2})
    for engine in ("zarr", "zarr3"):
        ds1 = write_open(original, tmp_path / f"{engine}1.zarr", engine, chunks={})
        assert ds1.v.encoding["chunks"] == (2, 2, 1)
        ds2 = write_open(ds1.isel(t=0), tmp_path / f"{engine}2.zarr", engine)  # (2, 2, 1) no longer fits 'v'
        xr.testing.assert_equal(ds2.load(), original.isel(t=0).load())
    assert (
        stored_chunks(tmp_path / "zarr32.zarr", "v", "zarr3")
        == stored_chunks(tmp_path / "zarr2.zarr", "v", "zarr")
        == (2, 2)
    )


@pytest.mark.parametrize(
    "indexer", [{"y": 1}, {"x": ("x0", [0, 1]), "y": ("x0", [0, 1])}], ids=["scalar", "vectorized"]
)
def test_indexing_roundtrip_writes_a_selection_of_fewer_dimensions(
    tmp_path: Path, indexer: dict[str, object]
) -> None:
    ds = xr.Dataset({"A": xr.DataArray([[1, "a"], [2, "b"]], dims=["x", "y"])})
    results = {}
    for engine in ("zarr", "zarr3"):
        expected = write_open(ds, tmp_path / f"{engine}1.zarr", engine).sel(indexer)
        assert len(expected.A.encoding["chunks"]) == 2 and expected.A.ndim == 1
        results[engine] = write_open(expected, tmp_path / f"{engine}2.zarr", engine)
        xr.testing.assert_identical(results[engine], expected)
    xr.testing.assert_identical(results["zarr3"].load(), results["zarr"].load())


def test_where_and_squeeze_of_a_lazily_opened_dataset_writes(tmp_path: Path) -> None:
    ds = xr.Dataset(
        {"var1": (("dim1", "dim3"), np.arange(24.0).reshape(8, 3)), "var2": (("dim1",), np.arange(8.0))},
        coords={"dim3": ["a", "b", "c"], "dim1": np.arange(8)},
    )
    results = {}
    for engine in ("zarr", "zarr3"):
        ds1 = write_open(ds, tmp_path / f"{engine}1.zarr", engine, chunks={})
        selected = ds1.where(ds1.coords["dim3"] == "a", drop=True).squeeze("dim3")
        assert selected.dim3.ndim == 0 and selected.dim3.encoding["chunks"] == (3,)
        results[engine] = write_open(selected, tmp_path / f"{engine}2.zarr", engine).load()
        xr.testing.assert_identical(results[engine], selected.load())
    xr.testing.assert_identical(results["zarr3"], results["zarr"])


def test_source_shards_and_codecs_that_no_longer_fit_are_dropped_with_the_chunks(tmp_path: Path) -> None:
    ds = xr.Dataset({"v": (("t", "x"), np.arange(64.0).reshape(8, 8))})
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"v": {"chunks": (2, 2), "shards": (4, 4)}})
    opened = xr.open_dataset(tmp_path / "a.zarr", engine="zarr3")
    opened.isel(t=0).to_zarr3(tmp_path / "b.zarr")  # chunks, shards and the sharding codec are all 2-d
    array = zarr3_backend.open_array(tmp_path / "b.zarr", "v")
    assert (array.chunks, array.shards) == ((8,), None)
    assert all(codec["name"] != "sharding_indexed" for codec in array.metadata.codecs)
    np.testing.assert_array_equal(array[...], np.arange(8.0))
    opened.isel(t=slice(0, 3)).to_zarr3(tmp_path / "c.zarr")  # still 2-d: kept, as engine="zarr" keeps them
    kept = zarr3_backend.open_array(tmp_path / "c.zarr", "v")
    assert (kept.chunks, kept.shards) == ((2, 2), (4, 4))


@pytest.mark.parametrize("key", ["chunks", "shards"])
def test_explicit_chunks_of_the_wrong_rank_still_raise(tmp_path: Path, key: str) -> None:
    # Deliberate difference (README): engine="zarr" ignores them silently; an explicit request is refused instead.
    ds = xr.Dataset({"x": ("y", np.arange(10.0))})
    with pytest.raises(
        WriteError, match=rf"encoding\['x'\]\['{key}'\]=\(2, 2\) has 2 entries, but 'x' has 1 dimensions"
    ):
        ds.to_zarr3(tmp_path / "a.zarr", encoding={"x": {key: (2, 2)}})
    assert not (tmp_path / "a.zarr").exists()


# --- exception types --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("explicit", [False, True], ids=["variable-encoding", "encoding-argument"])
def test_non_integer_chunk_sizes_raise_type_error_like_the_zarr_engine(
    tmp_path: Path, explicit: bool
) -> None:
    ds = xr.Dataset({"v": (("t", "x"), np.zeros((10, 6)))})
    if explicit:
        kwargs: dict[str, object] = {"encoding": {"v": {"chunks": (5, 4.5)}}}
    else:
        ds.v.encoding["chunks"] = (5, 4.5)
        kwargs = {}
    with pytest.raises(TypeError):
        ds.to_zarr(tmp_path / "oracle.zarr", zarr_format=3, **kwargs)  # type: ignore[call-overload]
    with pytest.raises(
        WriteTypeError,
        match=r"encoding\['v'\]\['chunks'\]=\(5, 4.5\): every size must be a positive integer, got 4.5",
    ):
        ds.to_zarr3(tmp_path / "a.zarr", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(
        WriteError, match=r"positive integer, got -2"
    ):  # a bad value stays a ValueError, as in zarr
        ds.to_zarr3(tmp_path / "a.zarr", encoding={"v": {"shards": (10, -2)}})
    assert not (tmp_path / "a.zarr").exists()


@pytest.mark.parametrize(
    ("encoding", "exc", "ours"),
    [
        (
            {"x": "foo"},
            ValueError,
            (WriteError, r"encoding\['x'\] must be castable to a dict of encoding keys"),
        ),
        ({"x": ["a"]}, ValueError, (WriteError, r"must be castable to a dict.*got list \['a'\]")),
        ({"x": {"foo": "bar"}}, ValueError, (WriteError, r"unexpected encoding keys for 'x': \['foo'\]")),
        (
            {"invalid": {}},
            KeyError,
            (WriteKeyError, r"encoding given for 'invalid', which is not a variable"),
        ),
    ],
)
def test_bad_encoding_arguments_raise_what_the_zarr_engine_raises(
    tmp_path: Path, encoding, exc, ours
) -> None:  # type: ignore[no-untyped-def]
    ds = xr.Dataset({"x": ("y", np.arange(10.0))})
    with pytest.raises(exc):
        ds.to_zarr(tmp_path / "oracle.zarr", zarr_format=3, mode="w", encoding=encoding)
    with pytest.raises(exc):
        ds.to_zarr3(tmp_path / "a.zarr", encoding=encoding)
    with pytest.raises(ours[0], match=ours[1]):
        ds.to_zarr3(tmp_path / "a.zarr", encoding=encoding)
    assert not (tmp_path / "a.zarr").exists()


def test_encoding_as_key_value_pairs_is_cast_to_a_dict_like_the_zarr_engine(tmp_path: Path) -> None:
    ds = xr.Dataset({"x": ("y", np.arange(10.0))})
    ds.to_zarr(tmp_path / "oracle.zarr", zarr_format=3, encoding={"x": [("chunks", (5,))]})
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"x": [("chunks", (5,))]})
    assert (
        stored_chunks(tmp_path / "a.zarr", "x", "zarr3")
        == stored_chunks(tmp_path / "oracle.zarr", "x", "zarr")
        == (5,)
    )


# --- a variable named None --------------------------------------------------------------------------------------------


def test_a_variable_named_none_is_refused_naming_the_reserved_name(tmp_path: Path) -> None:
    # Deliberate difference (README): engine="zarr" stores it as '__values__', a node name the v3 spec reserves.
    ds = xr.Dataset({None: (("x", "y"), [[0, 1], [2, 3]])})
    ds.to_zarr(tmp_path / "oracle.zarr", zarr_format=3)
    assert (tmp_path / "oracle.zarr" / "__values__" / "zarr.json").exists()
    with pytest.raises(
        WriteTypeError,
        match=r"a variable is named None, which engine='zarr' stores as '__values__'.*"
        r"ds.rename\(\{None: 'values'\}\)",
    ):
        ds.to_zarr3(tmp_path / "a.zarr")
    assert not (tmp_path / "a.zarr").exists()
    ds.rename({None: "values"}).to_zarr3(tmp_path / "a.zarr")  # the advised fix works
    xr.testing.assert_identical(
        xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load(), ds.rename({None: "values"})
    )
