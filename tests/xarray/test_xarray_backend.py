"""engine="zarr3": entry point, dims, laziness, indexing, dask chunking, encoding, trees, errors."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest
import xarray as xr
from xarray.core import indexing

import zarr3_backend
from zarr3_backend.errors import (
    GroupNotFoundError,
    MetadataError,
    NodeNotFoundError,
    StoreError,
    UnknownExtensionError,
)
from zarr3_backend.store import make_store
from zarr3_backend.testing.stores import CountingStore
from zarr3_backend.xarray import Zarr3BackendArray, Zarr3BackendEntrypoint

pytestmark = pytest.mark.validate_stores

V = np.arange(8 * 12 * 10, dtype="float32").reshape(8, 12, 10)


def write_sample(target: Any, **group_kwargs: Any) -> zarr3_backend.Group:
    """A group with a sharded 3-D variable, index coordinates, a CF non-index coordinate and attributes."""
    g = zarr3_backend.create_group(
        target, attributes={"title": "sample", "_NCProperties": "hidden"}, **group_kwargs
    )
    v = g.create_array(
        "v",
        shape=V.shape,
        dtype="float32",
        chunks=(2, 3, 5),
        shards=(4, 6, 10),
        dimension_names=["time", "y", "x"],
        attributes={"units": "K", "coordinates": "label"},
    )
    v[...] = V
    for name, n in (("time", 8), ("y", 12), ("x", 10)):
        g.create_array(name, shape=(n,), dtype="int64", chunks=(n,), dimension_names=[name])[...] = (
            np.arange(n) * 10
        )
    lab = g.create_array("label", shape=(10,), dtype="string", chunks=(5,), dimension_names=["x"])
    lab[...] = [f"l{i}" for i in range(10)]
    return g


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    write_sample(str(tmp_path / "s.zarr"))
    return tmp_path / "s.zarr"


def counting(path: Path) -> CountingStore:
    return CountingStore(make_store(str(path), read_only=True))


def chunk_reads(store: CountingStore, array: str) -> list[Any]:
    return [r for r in store.requests if r[0].startswith(f"{array}/c")]


# -- entry point -------------------------------------------------------------
def test_entry_point_works_without_importing_package(sample: Path) -> None:
    code = f"import xarray as xr; print(dict(xr.open_dataset({str(sample)!r}, engine='zarr3').sizes))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'time': 8" in out


def test_entry_point_attributes() -> None:
    engine = xr.backends.list_engines()["zarr3"]
    assert isinstance(engine, Zarr3BackendEntrypoint)
    assert engine.description and engine.url.startswith("https://") and engine.supports_groups
    assert {"group", "storage_options", "drop_variables", "decode_times"} <= set(
        engine.open_dataset_parameters
    )


@pytest.mark.invalid_store  # "wrong" on purpose
def test_guess_can_open(sample: Path, tmp_path: Path) -> None:
    engine = Zarr3BackendEntrypoint()
    (tmp_path / "file.nc").write_bytes(b"CDF")
    (tmp_path / "wrong").mkdir()
    (tmp_path / "wrong" / ".zgroup").write_text('{"zarr_format": 3}')  # a v2 key must hold a v2 document
    (tmp_path / "wrong" / "zarr.json").write_text('{"zarr_format": 2}')
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / ".zarray").write_text("{not json")
    assert engine.guess_can_open(sample) and engine.guess_can_open(str(sample))
    assert engine.guess_can_open(make_store(str(sample)))
    for other in (
        tmp_path / "file.nc",
        tmp_path / "missing.zarr",
        tmp_path / "wrong",
        tmp_path / "broken",
        object(),
    ):
        assert not engine.guess_can_open(other)
    assert not (tmp_path / "missing.zarr").exists()


@pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated metadata:RuntimeWarning")
@pytest.mark.parametrize("consolidated", [True, False])
def test_guess_can_open_claims_zarr_v2_stores(tmp_path: Path, consolidated: bool) -> None:
    """A v2 group (consolidated or not) and a v2 root array, written by zarr-python, as v3 stores are claimed."""
    zarr = pytest.importorskip("zarr")
    ds = xr.Dataset({"t": (("time", "x"), np.arange(12.0).reshape(3, 4))}, coords={"x": np.arange(4)})
    ds.to_zarr(tmp_path / "v2store", zarr_format=2, consolidated=consolidated)
    array = zarr.create_array(tmp_path / "v2array", shape=(3,), dtype="int8", zarr_format=2)
    array[:] = 1
    assert (tmp_path / "v2store" / ".zmetadata").exists() == consolidated
    assert (tmp_path / "v2array" / ".zarray").exists() and not (tmp_path / "v2array" / ".zgroup").exists()
    engine = Zarr3BackendEntrypoint()
    for path in (tmp_path / "v2store", tmp_path / "v2array"):
        assert engine.guess_can_open(path) and engine.guess_can_open(str(path))
        assert engine.guess_can_open(make_store(str(path)))
    # engine="zarr" is asked first and claims names ending in .zarr; a v2 store named otherwise is ours
    assert xr.backends.plugins.guess_engine(str(tmp_path / "v2store")) == "zarr3"
    xr.testing.assert_identical(
        xr.open_dataset(tmp_path / "v2store"), xr.open_dataset(tmp_path / "v2store", engine="zarr")
    )


# -- dims, coordinates, attributes --------------------------------------------
def test_variables_coords_and_attrs(sample: Path) -> None:
    ds = xr.open_dataset(sample, engine="zarr3")
    assert ds.v.dims == ("time", "y", "x") and ds.v.attrs == {"units": "K"}
    assert set(ds.indexes) == {"time", "y", "x"} and "label" in ds.coords and "label" not in ds.indexes
    assert ds.attrs == {"title": "sample"}
    assert ds.label.dtype == np.dtypes.StringDType() and ds.label.values.tolist()[:2] == ["l0", "l1"]
    np.testing.assert_array_equal(ds.v.values, V)


def test_dims_fallbacks(tmp_path: Path) -> None:
    g = zarr3_backend.create_group(str(tmp_path / "d.zarr"))
    g.create_array("named", shape=(2, 3), dtype="int8", dimension_names=["a", None])
    g.create_array("legacy", shape=(2, 4), dtype="int8", attributes={"_ARRAY_DIMENSIONS": ["a", "b"], "k": 1})
    g.create_array("anon", shape=(2,), dtype="int8")
    ds = xr.open_dataset(tmp_path / "d.zarr", engine="zarr3")
    assert ds.named.dims == ("a", "dim_1") and ds.legacy.dims == ("a", "b") and ds.anon.dims == ("dim_0",)
    assert ds.legacy.attrs == {"k": 1}


def test_conflicting_dims_error_names_arrays_and_fix(tmp_path: Path) -> None:
    g = zarr3_backend.create_group(str(tmp_path / "c.zarr"))
    g.create_array("p", shape=(2,), dtype="int8")
    g.create_array("q", shape=(5,), dtype="int8")
    with pytest.raises(
        MetadataError, match=r"'dim_0'.*size 2 in \['p'\].*size 5 in \['q'\].*dimension_names.*drop_variables"
    ):
        xr.open_dataset(tmp_path / "c.zarr", engine="zarr3")
    assert list(xr.open_dataset(tmp_path / "c.zarr", engine="zarr3", drop_variables="q").data_vars) == ["p"]


def test_encoding_records_what_round_trips(sample: Path) -> None:
    enc = xr.open_dataset(sample, engine="zarr3").v.encoding
    assert enc["chunks"] == (2, 3, 5) and enc["shards"] == (4, 6, 10)
    assert enc["preferred_chunks"] == {"time": 4, "y": 6, "x": 10}
    assert enc["codecs"][0]["name"] == "sharding_indexed" and enc["dimension_names"] == ("time", "y", "x")
    assert enc["chunk_key_encoding"] == {"name": "default", "configuration": {"separator": "/"}}
    assert enc["fill_value"] == 0 and enc["fill_value"].dtype == np.float32 and enc["dtype"] == np.float32
    json.dumps([enc["codecs"], enc["chunk_key_encoding"]])


# -- laziness and request counts --------------------------------------------
def test_open_reads_metadata_and_index_coordinates_only(sample: Path) -> None:
    store = counting(sample)
    ds = xr.open_dataset(store, engine="zarr3", chunks={})
    reads = [key for key, _ in store.requests if "/c" in key]
    assert sorted(reads) == ["time/c/0", "x/c/0", "y/c/0"]
    # root doc, child docs, coordinates, and (no consolidated metadata) the pending-write record of to_zarr3
    assert store.counts["get_many"] + store.counts["get"] <= 4
    assert not chunk_reads(store, "v") and not chunk_reads(store, "label")
    assert ds.v.chunks == ((4, 4), (6, 6), (10,))


def test_consolidated_open_is_one_metadata_request(sample: Path) -> None:
    zarr3_backend.consolidate_metadata(make_store(str(sample)))
    store = counting(sample)
    xr.open_dataset(store, engine="zarr3", drop_variables=["time", "x", "y"])
    assert store.requests == [("zarr.json", None)]


class RemoteWithoutListings(CountingStore):
    """A store that keeps requests in flight like object storage but refuses listings, as many public buckets do."""

    io_concurrency = 32

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        super().list_dir(prefix)
        raise StoreError(f"AccessDenied: ListObjectsV2 on {prefix!r}")


def test_an_unneeded_listing_may_fail_but_a_needed_one_may_not(sample: Path) -> None:
    plain = RemoteWithoutListings(make_store(str(sample)))
    with pytest.raises(
        StoreError, match="AccessDenied"
    ):  # nothing consolidated: the members need the listing
        xr.open_dataset(plain, engine="zarr3")
    zarr3_backend.consolidate_metadata(make_store(str(sample)))
    store = RemoteWithoutListings(make_store(str(sample)))
    ds = xr.open_dataset(store, engine="zarr3")
    assert store.counts["list_dir"] == 1  # sent alongside the root document, in case nothing was consolidated
    xr.testing.assert_identical(ds.load(), xr.open_dataset(sample, engine="zarr3").load())


def test_consolidated_false_lists_once(sample: Path) -> None:
    zarr3_backend.consolidate_metadata(make_store(str(sample)))
    store = counting(sample)
    xr.open_dataset(store, engine="zarr3", consolidated=False)
    assert store.counts["list_dir"] == 1


def test_point_read_touches_one_inner_chunk_per_shard(sample: Path) -> None:
    store = counting(sample)
    ds = xr.open_dataset(store, engine="zarr3")
    store.reset()
    np.testing.assert_array_equal(ds.v.isel(y=7, x=1).values, V[:, 7, 1])
    reads = chunk_reads(store, "v")
    assert {key for key, _ in reads} == {"v/c/0/1/0", "v/c/1/1/0"}
    assert len(reads) == 4  # per shard: the index, then one inner chunk


@pytest.mark.parametrize(
    "key",
    [
        {"time": [0, 5, 7], "x": [1, 9]},
        {"time": slice(1, 7, 3), "y": [11, 0, 4], "x": 2},
        {"y": np.array([True, False] * 6)},
    ],
)
def test_outer_indexing(sample: Path, key: dict[str, Any]) -> None:
    ds = xr.open_dataset(sample, engine="zarr3")
    expected = xr.DataArray(V, dims=("time", "y", "x"))
    np.testing.assert_array_equal(ds.v.isel(key).values, expected.isel(key).values)


def test_vectorized_indexing(sample: Path) -> None:
    ds = xr.open_dataset(sample, engine="zarr3")
    pts = {"time": xr.DataArray([0, 3, 7], dims="p"), "x": xr.DataArray([9, 0, 4], dims="p")}
    np.testing.assert_array_equal(ds.v.isel(pts).values, V[[0, 3, 7], :, [9, 0, 4]])


def test_backend_array_uses_outer_reads(sample: Path) -> None:
    array = Zarr3BackendArray(zarr3_backend.open_array(str(sample), "v"))
    out = array[indexing.OuterIndexer((np.array([1, 6]), slice(None), np.array([0, 9])))]
    np.testing.assert_array_equal(out, V[[1, 6]][:, :, [0, 9]])
    assert pickle.loads(pickle.dumps(array)).zarr_array.path == "v"


# -- dask ----------------------------------------------------------------------
def test_chunk_options_follow_shards(tmp_path: Path) -> None:
    g = zarr3_backend.create_group(str(tmp_path / "big.zarr"))
    g.create_array(
        "a",
        shape=(400, 60, 40),
        dtype="float64",
        chunks=(10, 30, 20),
        shards=(20, 60, 40),
        dimension_names=["t", "y", "x"],
    )
    opened = lambda chunks: xr.open_dataset(tmp_path / "big.zarr", engine="zarr3", chunks=chunks).a.chunks  # noqa: E731
    assert opened({}) == ((20,) * 20, (60,), (40,))
    with dask.config.set({"array.chunk-size": "2MiB"}):
        auto = opened("auto")
    assert all(n % 20 == 0 for n in auto[0][:-1]) and auto[1:] == ((60,), (40,))  # whole shards
    assert opened({"t": 100}) == ((100,) * 4, (60,), (40,))
    with pytest.warns(UserWarning, match="separate the stored chunks"):
        opened({"t": 30})


def test_one_task_per_shard_reading_index_once(sample: Path) -> None:
    store = counting(sample)
    ds = xr.open_dataset(store, engine="zarr3", chunks={})
    assert ds.v.data.npartitions == 4
    store.reset()
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(ds.v.isel(time=slice(1, 7), y=slice(0, 9)).values, V[1:7, :9])
    assert store.counts["get_many"] <= 8  # per shard: its index once, then the inner chunks in one batch
    index_reads = [key for key, r in store.requests if r is not None and r.start < 0]
    assert sorted(index_reads) == sorted(set(index_reads)) and len(index_reads) <= 4


def test_graph_pickles(sample: Path) -> None:
    ds = xr.open_dataset(sample, engine="zarr3", chunks={})
    data = pickle.loads(pickle.dumps(ds.v.data))
    np.testing.assert_array_equal(data.compute(scheduler="sync"), V)


@pytest.mark.slow
def test_local_cluster_processes(sample: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster):
            ds = xr.open_dataset(sample, engine="zarr3", chunks={})
            assert float(ds.v.sum().compute()) == float(V.sum(dtype="float64"))
            np.testing.assert_array_equal(ds.v.isel(x=3).compute().values, V[:, :, 3])


# -- stores ------------------------------------------------------------------
def test_open_from_s3(s3_url: str, s3_storage_options: dict[str, Any]) -> None:
    url = f"{s3_url}/s.zarr"
    write_sample(url, storage_options=s3_storage_options)
    ds = xr.open_dataset(url, engine="zarr3", storage_options=s3_storage_options, chunks={})
    np.testing.assert_array_equal(ds.v.isel(time=5).values, V[5])
    assert ds.attrs == {"title": "sample"}


# -- groups and trees -------------------------------------------------------
def write_tree(root: str) -> None:
    g = zarr3_backend.create_group(root, attributes={"level": 0})
    g.create_array("top", shape=(3,), dtype="int16", dimension_names=["x"])[...] = [1, 2, 3]
    sub = g.create_group("sub", attributes={"level": 1})
    sub.create_array("x", shape=(3,), dtype="float64", dimension_names=["x"])[...] = [0.5, 1.5, 2.5]
    zarr3_backend.create_array(root, "implicit/deeper/z", shape=(2,), dtype="uint8", dimension_names=["z"])
    Path(root, "implicit", "zarr.json").unlink()


def test_open_datatree_and_groups(tmp_path: Path) -> None:
    root = str(tmp_path / "t.zarr")
    write_tree(root)
    tree = xr.open_datatree(root, engine="zarr3")
    assert tree.attrs == {"level": 0} and tree["top"].values.tolist() == [1, 2, 3]
    assert tree["sub"].attrs == {"level": 1} and tree["sub/x"].values.tolist() == [0.5, 1.5, 2.5]
    assert tree["implicit/deeper/z"].dims == ("z",)
    groups = xr.open_groups(root, engine="zarr3")
    assert set(groups) == {"/", "/sub", "/implicit", "/implicit/deeper"}
    assert xr.open_datatree(root, engine="zarr3", group="sub").attrs == {"level": 1}


def test_open_dataset_of_subgroup(tmp_path: Path) -> None:
    root = str(tmp_path / "t.zarr")
    write_tree(root)
    assert xr.open_dataset(root, engine="zarr3", group="/implicit/deeper").z.shape == (2,)


# -- errors ------------------------------------------------------------------
def test_error_missing_store(tmp_path: Path) -> None:
    with pytest.raises(
        NodeNotFoundError,
        match=r"no Zarr group at .*missing\.zarr.*zarr\.json not found \(nor a Zarr v2 \.zgroup\).*Check the path",
    ):
        xr.open_dataset(tmp_path / "missing.zarr", engine="zarr3")
    assert not (tmp_path / "missing.zarr").exists()


def test_v2_store_opens(tmp_path: Path) -> None:
    (tmp_path / "v2.zarr").mkdir()
    (tmp_path / "v2.zarr" / ".zgroup").write_text('{"zarr_format": 2}')
    (tmp_path / "v2.zarr" / ".zattrs").write_text('{"title": "empty"}')
    opened = xr.open_dataset(tmp_path / "v2.zarr", engine="zarr3")
    assert dict(opened.variables) == {} and opened.attrs == {"title": "empty"}


def test_error_array_at_root(tmp_path: Path) -> None:
    zarr3_backend.create_array(str(tmp_path / "a.zarr"), shape=(2,), dtype="int8")
    with pytest.raises(GroupNotFoundError, match=r"a\.zarr.*is a Zarr array, not a group.*open_array"):
        xr.open_dataset(tmp_path / "a.zarr", engine="zarr3")


@pytest.mark.invalid_store  # damaged on purpose
def test_error_unsupported_extension(tmp_path: Path) -> None:
    g = zarr3_backend.create_group(str(tmp_path / "e.zarr"))
    g.create_array("a", shape=(2,), dtype="int8")
    doc_path = tmp_path / "e.zarr" / "a" / "zarr.json"
    doc = json.loads(doc_path.read_text())
    doc["codecs"].append({"name": "fancy_codec"})
    doc_path.write_text(json.dumps(doc))
    with pytest.raises(UnknownExtensionError, match=r"e\.zarr.*engine='zarr3'.*'/a'.*fancy_codec.*install"):
        xr.open_dataset(tmp_path / "e.zarr", engine="zarr3")


def test_no_warnings_on_plain_open(sample: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.open_dataset(sample, engine="zarr3", chunks={}).load()
