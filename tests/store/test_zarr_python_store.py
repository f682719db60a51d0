"""The adapter of any zarr-python store: the store contract on zarr's ObjectStore, and xarray through a ZipStore."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import xarray as xr
import zarr
import zarr.storage

from zarr3_backend.errors import WriteError
from zarr3_backend.store import Store, make_store
from zarr3_backend.store.zarr_python import ZarrPythonStore
from zarr3_backend.testing.stores import StoreContract

obstore = pytest.importorskip("obstore")


class TestZarrObjectStoreContract(StoreContract):
    reports_generations = False  # the zarr-python Store ABC returns no object versions

    @pytest.fixture
    def store(self, tmp_path) -> Store:
        made = make_store(zarr.storage.ObjectStore(obstore.store.LocalStore(str(tmp_path))))
        assert isinstance(made, ZarrPythonStore) and made.io_concurrency > 1 and not made.transactional
        return made

    def read_only_view(self, store: Store) -> Store:
        assert isinstance(store, ZarrPythonStore)
        return ZarrPythonStore(store.wrapped, read_only=True)


@pytest.mark.filterwarnings("ignore:Duplicate name")  # zarr-python rewrites zarr.json into the zip
def test_xarray_reads_a_zip_store_and_writes_an_object_store(tmp_path) -> None:
    ds = xr.Dataset(
        {"t": (("x", "y"), np.arange(24.0).reshape(6, 4), {"units": "K"})}, coords={"x": np.arange(6)}
    )
    with zarr.storage.ZipStore(tmp_path / "a.zip", mode="w") as zipped:
        ds.to_zarr(zipped, zarr_format=3, consolidated=False, encoding={"t": {"chunks": (2, 4)}})
    zipped = zarr.storage.ZipStore(tmp_path / "a.zip", mode="r")
    assert isinstance(make_store(zipped), ZarrPythonStore)
    back = xr.open_dataset(zipped, engine="zarr3", chunks={})
    xr.testing.assert_identical(
        back.load(), xr.open_dataset(zipped, engine="zarr", consolidated=False).load()
    )

    objects = zarr.storage.ObjectStore(obstore.store.LocalStore(str(tmp_path / "objects"), mkdir=True))
    ds.chunk(x=2).to_zarr3(objects, encoding={"t": {"chunks": (2, 4)}})
    with pytest.raises(WriteError, match="needs lock="):  # the adapter declares no atomic create
        ds.to_zarr3(objects, append_dim="x", allow_repeated_index=True)
    ds.to_zarr3(objects, append_dim="x", lock=threading.Lock(), allow_repeated_index=True)  # the only writer
    xr.testing.assert_identical(
        xr.open_dataset(objects, engine="zarr", consolidated=False).load(), xr.concat([ds, ds], "x")
    )


class ArraysUnlisted(zarr.storage.MemoryStore):
    """A store that cannot list inside an array, as VirtualiZarr's ``ManifestStore`` with ``/`` chunk keys."""

    async def list_dir(self, prefix):  # type: ignore[no-untyped-def]
        if prefix.strip("/") == "g/t":
            raise NotImplementedError("Array listing only supports '.' as chunk key separator")
        async for name in super().list_dir(prefix):
            yield name


def test_a_store_that_cannot_list_an_array_opens() -> None:
    store = ArraysUnlisted()
    ds = xr.Dataset({"t": (("x",), np.arange(6.0))}, attrs={"title": "unlisted"})
    ds.to_zarr(store, zarr_format=3, consolidated=False, group="g")
    ours = xr.open_dataset(store, engine="zarr3", group="g").load()
    xr.testing.assert_identical(ours, ds)
    assert make_store(store).list_dir("g/") == (["g/zarr.json"], ["g/t/"])  # the array: a prefix
