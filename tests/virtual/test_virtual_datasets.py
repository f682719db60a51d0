"""Virtual datasets end to end: NetCDF4 files written here, referenced by VirtualiZarr, read by engine="zarr3".

Three small NetCDF4 files (zlib + shuffle, chunked) are made with h5netcdf;
VirtualiZarr turns them into kerchunk JSON and Parquet references, an
Icechunk 2 repository of virtual chunks, and a ``ManifestStore``. Every one
reads identical to the files themselves and to engine="zarr" on the same
references, eagerly and with ``chunks={}`` on a LocalCluster. VirtualiZarr 2
needs Python >= 3.12: on 3.11 the module skips.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.store import icechunk_api

virtualizarr = pytest.importorskip("virtualizarr")
pytest.importorskip("kerchunk")
pytest.importorskip("h5netcdf")
icechunk = pytest.importorskip("icechunk", minversion="2")

DAYS = 4  # per file


def netcdf(path: Path, k: int) -> Path:
    """Days ``4k .. 4k+3`` of a temperature field, zlib + shuffle in (2, 3, 4) chunks."""
    values = np.random.default_rng(k).normal(280, 5, (DAYS, 3, 8)).astype("float32")
    days = np.arange(DAYS * k, DAYS * (k + 1), dtype="int32")
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), values, {"units": "K", "long_name": "2 m temperature"})},
        coords={
            "time": ("time", days, {"units": "days since 2026-01-01", "calendar": "standard"}),
            "lat": ("lat", [10.0, 20.0, 30.0], {"units": "degrees_north"}),
            "lon": ("lon", np.arange(0.0, 360.0, 45.0), {"units": "degrees_east"}),
        },
        attrs={"title": "virtual test"},
    )
    encoding = {"t2m": {"zlib": True, "shuffle": True, "chunksizes": (2, 3, 4), "_FillValue": None}}
    ds.to_netcdf(path, engine="h5netcdf", encoding=encoding)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("netcdf")
    return [netcdf(folder / f"day{k}.nc", k) for k in range(3)]


@pytest.fixture(scope="module")
def source(files: list[Path]) -> xr.Dataset:
    """What the files hold, read by h5netcdf."""
    return xr.concat([xr.open_dataset(p, engine="h5netcdf").load() for p in files], "time")


def registry():  # type: ignore[no-untyped-def]
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    return ObjectStoreRegistry({"file://": LocalStore()})


@pytest.fixture(scope="module")
def virtual(files: list[Path]) -> xr.Dataset:
    """The three files as one virtual dataset (coordinates loaded, ``t2m`` as chunk references)."""
    from virtualizarr.parsers import HDFParser

    parts = [
        virtualizarr.open_virtual_dataset(
            p.as_uri(), registry=registry(), parser=HDFParser(), loadable_variables=["time", "lat", "lon"]
        )
        for p in files
    ]
    return xr.concat(parts, dim="time", coords="minimal", compat="override", combine_attrs="override")


def assert_reads_as_source(store: object, source: xr.Dataset, **kwargs: object) -> None:
    """engine="zarr3" reads ``store`` identical to the files and to engine="zarr", eagerly and lazily."""
    ours = xr.open_dataset(store, engine="zarr3", **kwargs).load()
    xr.testing.assert_identical(ours, source)
    theirs = xr.open_dataset(store, engine="zarr", consolidated=False, **kwargs).load()
    xr.testing.assert_identical(ours, theirs)
    lazy = xr.open_dataset(store, engine="zarr3", chunks={}, **kwargs)
    assert lazy.t2m.chunks is not None
    xr.testing.assert_identical(lazy.compute(), source)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_kerchunk_json_references(virtual, source, tmp_path, client, zarr_format):
    refs = tmp_path / "refs.json"
    virtual.vz.to_kerchunk(str(refs), format="json", zarr_format=zarr_format)
    assert_reads_as_source("reference://", source, storage_options={"fo": str(refs)})


def test_kerchunk_parquet_references_read_lazily(virtual, source, tmp_path, client):
    from fsspec.implementations.reference import LazyReferenceMapper

    refs = tmp_path / "refs.parq"
    virtual.vz.to_kerchunk(str(refs), format="parquet", record_size=4)
    store = zarr3_backend.store.make_store("reference://", storage_options={"fo": str(refs)})
    assert isinstance(store.fs.references, LazyReferenceMapper)  # type: ignore[attr-defined]
    assert_reads_as_source("reference://", source, storage_options={"fo": str(refs)})


def virtual_repository(virtual: xr.Dataset, files: list[Path], where: Path) -> tuple[object, str]:
    """An Icechunk 2 repository of ``virtual``'s chunks (a container for the files' folder); its storage."""
    prefix = files[0].parent.as_uri() + "/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(files[0].parent)))
    )
    storage = icechunk.local_filesystem_storage(str(where))
    access = {prefix: icechunk_api.no_credentials(prefix)}
    repo = icechunk.Repository.create(storage, config=config, authorize_virtual_chunk_access=access)
    session = repo.writable_session("main")
    virtual.vz.to_icechunk(session.store)
    session.commit("three files, virtually")
    return storage, prefix


def test_icechunk_2_repository_of_virtual_chunks(virtual, files, source, tmp_path, client):
    storage, prefix = virtual_repository(virtual, files, tmp_path / "repo")
    access = {prefix: icechunk_api.no_credentials(prefix)}
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=access)
    assert repo.readonly_session(branch="main").all_virtual_chunk_locations()  # the chunks are references
    assert_reads_as_source(repo.readonly_session(branch="main").store, source)


def test_icechunk_refuses_an_unauthorized_container_with_a_store_error(virtual, files, tmp_path):
    storage, prefix = virtual_repository(virtual, files, tmp_path / "repo")
    store = icechunk.Repository.open(storage).readonly_session(branch="main").store
    lazy = xr.open_dataset(store, engine="zarr3")  # metadata and the loaded coordinates read
    with pytest.raises(zarr3_backend.StoreError, match=f"into the container {prefix}, which") as caught:
        lazy.t2m.load()
    assert "authorize_virtual_chunk_access" in str(caught.value)


def test_manifest_store_passed_directly(files, client):
    """VirtualiZarr's ``ManifestStore`` (a zarr-python store) is a store like any other."""
    from virtualizarr.parsers import HDFParser

    for path in files:
        manifest = HDFParser()(url=path.as_uri(), registry=registry())
        assert_reads_as_source(manifest, xr.open_dataset(path, engine="h5netcdf").load())
