"""What users already hold is accepted: zarr-python stores, fsspec mappers, numcodecs codecs.

Also: a path holding no node is never read as an empty group (issue 14, item 3).
"""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path
from typing import Any

import fsspec
import numcodecs
import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.errors import ArgumentTypeError, MetadataError, NodeNotFoundError, ReadOnlyError
from zarr3_backend.store import FsspecStore, LocalStore, Store, ZarrMemoryStore, make_store
from zarr3_backend.testing.stores import StoreContract

pytestmark = pytest.mark.validate_stores

zarr = pytest.importorskip("zarr")
xr = pytest.importorskip("xarray")


def _roundtrip(store: Any) -> np.ndarray:
    array = zarr3_backend.create_array(store, "v", shape=(6,), dtype="int32", chunks=(4,))
    array[:] = np.arange(6)
    return zarr3_backend.open_array(store, "v")[:]


# -- zarr-python stores and fsspec mappers ---------------------------------------------


def test_zarr_local_store_becomes_our_local_store(tmp_path: Path) -> None:
    theirs = zarr.storage.LocalStore(tmp_path / "a.zarr")
    assert make_store(theirs) == LocalStore(tmp_path / "a.zarr")
    assert _roundtrip(theirs).tolist() == list(range(6))
    assert zarr.open_array(theirs, path="v", mode="r")[:].tolist() == list(
        range(6)
    )  # zarr-python reads what we wrote


def test_read_only_zarr_store_stays_read_only(tmp_path: Path) -> None:
    _roundtrip(tmp_path / "a.zarr")
    theirs = zarr.storage.LocalStore(tmp_path / "a.zarr", read_only=True)
    assert make_store(theirs).read_only
    with pytest.raises(ReadOnlyError):
        zarr3_backend.open_array(theirs, "v", mode="r+")[:] = 0


def test_zarr_fsspec_store_becomes_our_fsspec_store() -> None:
    theirs = zarr.storage.FsspecStore.from_url("memory://store-inputs/fsspec.zarr")
    ours = make_store(theirs)
    assert isinstance(ours, FsspecStore) and ours.root == "/store-inputs/fsspec.zarr"
    assert not getattr(ours.fs, "asynchronous", False)
    assert _roundtrip(theirs).tolist() == list(range(6))


def test_zarr_fsspec_store_on_s3(s3_url: str, s3_storage_options: dict[str, Any]) -> None:
    theirs = zarr.storage.FsspecStore.from_url(f"{s3_url}/x.zarr", storage_options=s3_storage_options)
    assert theirs.fs.asynchronous  # zarr-python's mode; ours reopens it synchronously
    assert _roundtrip(theirs).tolist() == list(range(6))
    assert zarr3_backend.open_array(f"{s3_url}/x.zarr", "v", storage_options=s3_storage_options)[5] == 5


def test_zarr_memory_store_is_shared_both_ways() -> None:
    theirs = zarr.storage.MemoryStore()
    assert isinstance(make_store(theirs), ZarrMemoryStore)
    assert _roundtrip(theirs).tolist() == list(range(6))
    assert zarr.open_array(theirs, path="v", mode="r")[:].tolist() == list(range(6))
    written = zarr.create_array(theirs, name="w", shape=(3,), dtype="float64", chunks=(2,))
    written[:] = [1.5, 2.5, 3.5]
    assert zarr3_backend.open_array(theirs, "w")[:].tolist() == [1.5, 2.5, 3.5]


def test_zarr_memory_store_works_inside_a_running_event_loop() -> None:
    """As in Jupyter: listing drives zarr's async ``list_prefix`` without starting a loop of its own."""
    theirs = zarr.storage.MemoryStore()
    zarr.create_array(theirs, name="g/a", shape=(2,), dtype="int8")

    async def inside() -> tuple[list[str], list[str]]:
        return make_store(theirs).list_dir("g/")

    assert asyncio.run(inside()) == (["g/zarr.json"], ["g/a/"])
    assert repr(make_store(theirs)).startswith("ZarrMemoryStore(MemoryStore('memory://")


def test_zarr_memory_store_cannot_travel_to_other_processes() -> None:
    with pytest.raises(TypeError, match="MemoryStore cannot be sent to another process"):
        pickle.dumps(make_store(zarr.storage.MemoryStore()))


def test_fsspec_mapper_becomes_fsspec_store() -> None:
    mapper = fsspec.get_mapper("memory://store-inputs/mapper.zarr")
    ours = make_store(mapper)
    assert isinstance(ours, FsspecStore) and ours.fs is mapper.fs and ours.root == "/store-inputs/mapper.zarr"
    assert _roundtrip(mapper).tolist() == list(range(6))


def test_local_file_systems_become_local_stores(tmp_path: Path) -> None:
    assert make_store(fsspec.get_mapper(str(tmp_path / "m.zarr"))) == LocalStore(tmp_path / "m.zarr")
    assert make_store(zarr.storage.FsspecStore.from_url(f"file://{tmp_path}/f.zarr")) == LocalStore(
        tmp_path / "f.zarr"
    )
    assert _roundtrip(fsspec.get_mapper(str(tmp_path / "m.zarr"))).tolist() == list(range(6))


def test_xarray_reads_and_writes_through_foreign_stores(tmp_path: Path) -> None:
    ds = xr.Dataset({"t": (("x",), np.arange(4.0))}, coords={"x": [10, 20, 30, 40]})
    ds.to_zarr3(zarr.storage.LocalStore(tmp_path / "ds.zarr"))
    mapper = fsspec.get_mapper(str(tmp_path / "ds.zarr"))
    back = xr.open_dataset(mapper, engine="zarr3")
    xr.testing.assert_identical(back.load(), xr.open_dataset(tmp_path / "ds.zarr", engine="zarr").load())


def test_other_objects_are_refused_with_what_is_accepted(tmp_path: Path) -> None:
    with pytest.raises(
        ArgumentTypeError, match=r"store must be a path or URL string.*fsspec mapper.*got builtins.object"
    ):
        make_store(object())
    with pytest.raises(ArgumentTypeError, match="storage_options only apply to URLs"):
        make_store(fsspec.get_mapper("memory://x"), storage_options={"anon": True})
    with pytest.raises(
        ArgumentTypeError, match="store must be"
    ):  # the public entry points too, a TypeError as before
        zarr3_backend.open_group(12)


class TestZarrMemoryStoreContract(StoreContract):
    reports_generations = False  # a plain dict has no object versions: indexes are never cached

    @pytest.fixture
    def store(self) -> Store:
        return make_store(zarr.storage.MemoryStore())

    def read_only_view(self, store: Store) -> Store:
        assert isinstance(store, ZarrMemoryStore)
        return ZarrMemoryStore(store.zarr_store, read_only=True)

    def test_pickle_round_trip(self, store: Store) -> None:
        with pytest.raises(TypeError, match="memory://"):
            pickle.dumps(store)


# -- numcodecs and zarr-python codec objects ---------------------------------------------


@pytest.mark.parametrize(
    "given, expected",
    [
        (
            numcodecs.Blosc(cname="lz4", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
            {
                "name": "blosc",
                "configuration": {
                    "typesize": 4,
                    "cname": "lz4",
                    "clevel": 3,
                    "shuffle": "bitshuffle",
                    "blocksize": 0,
                },
            },
        ),
        (
            numcodecs.Blosc(cname="zstd", shuffle=numcodecs.Blosc.AUTOSHUFFLE),
            {
                "name": "blosc",
                "configuration": {
                    "typesize": 4,
                    "cname": "zstd",
                    "clevel": 5,
                    "shuffle": "shuffle",
                    "blocksize": 0,
                },
            },
        ),
        (
            numcodecs.Zstd(level=7, checksum=True),
            {"name": "zstd", "configuration": {"level": 7, "checksum": True}},
        ),
        (numcodecs.GZip(level=2), {"name": "gzip", "configuration": {"level": 2}}),
        (
            numcodecs.LZMA(),
            {"name": "numcodecs.lzma", "configuration": numcodecs.LZMA().get_config() | {"id": None}},
        ),
    ],
)
def test_numcodecs_compressors_become_v3_codecs(given: Any, expected: dict[str, Any]) -> None:
    expected["configuration"].pop("id", None)
    array = zarr3_backend.create_array(
        "memory://store-inputs/numcodecs",
        shape=(10,),
        dtype="float32",
        chunks=(5,),
        compressors=given,
        overwrite=True,
    )  # one object, not a list
    assert array.metadata.codecs[-1] == expected
    array[:] = np.arange(10)
    assert zarr3_backend.open_array("memory://store-inputs/numcodecs")[:].tolist() == list(range(10))


def test_numcodecs_filters_and_zarr_python_codecs() -> None:
    array = zarr3_backend.create_array(
        "memory://store-inputs/filters",
        shape=(8,),
        dtype="int32",
        chunks=(4,),
        overwrite=True,
        filters=[numcodecs.Delta(dtype="<i4")],
        compressors=[zarr.codecs.ZstdCodec(level=4)],
    )
    assert [c["name"] for c in array.metadata.codecs] == ["numcodecs.delta", "bytes", "zstd"]
    assert array.metadata.codecs[-1]["configuration"]["level"] == 4
    array[:] = np.arange(8) * 3
    assert array[:].tolist() == [i * 3 for i in range(8)]


def test_zarr_python_blosc_left_unset_takes_the_element_size_as_zarr_python_does(tmp_path: Path) -> None:
    """zarr.codecs.BloscCodec() reports typesize 1 until an array fills it in: it must not be written as 1."""
    ds = xr.Dataset({"t": (("x",), np.arange(6.0, dtype="float32"))})
    blosc = zarr.codecs.BloscCodec(cname="zstd", clevel=3)
    ds.to_zarr3(tmp_path / "ours.zarr", encoding={"t": {"compressors": [blosc]}})
    ds.to_zarr(tmp_path / "theirs.zarr", zarr_format=3, encoding={"t": {"compressors": [blosc]}})
    ours = zarr3_backend.open_array(tmp_path / "ours.zarr", "t").metadata.codecs[-1]
    theirs = zarr.open_array(tmp_path / "theirs.zarr", path="t").metadata.to_dict()["codecs"][-1]
    assert ours["configuration"]["typesize"] == theirs["configuration"]["typesize"] == 4
    assert ours["configuration"]["shuffle"] == theirs["configuration"]["shuffle"] == "shuffle"


def test_to_zarr3_encoding_accepts_numcodecs(tmp_path: Path) -> None:
    ds = xr.Dataset({"t": (("x",), np.arange(6.0))})
    ds.to_zarr3(tmp_path / "e.zarr", encoding={"t": {"compressors": numcodecs.Zstd(level=5)}})
    codecs = zarr3_backend.open_array(tmp_path / "e.zarr", "t").metadata.codecs
    assert codecs[-1] == {"name": "zstd", "configuration": {"level": 5, "checksum": False}}


def test_other_codec_objects_are_refused_with_what_is_accepted() -> None:
    with pytest.raises(MetadataError, match=r"expected a name or an object.*a numcodecs codec.*got 3\.5"):
        zarr3_backend.create_array("memory://store-inputs/bad", shape=(2,), dtype="int8", compressors=[3.5])


# -- a wrong path is not an empty group ----------------------------------------------------


@pytest.fixture
def parent_of_stores(tmp_path: Path) -> Path:
    zarr3_backend.create_array(tmp_path / "a" / "b.zarr", "v", shape=(2,), dtype="int8")
    zarr3_backend.create_group(tmp_path / "c.zarr")
    (tmp_path / "notes.txt").write_text("not zarr")
    return tmp_path


@pytest.mark.parametrize(
    "opener",
    [
        zarr3_backend.open,
        zarr3_backend.open_group,
        lambda p: xr.open_dataset(p, engine="zarr3"),
    ],
    ids=["open", "open_group", "open_dataset"],
)
def test_a_directory_of_stores_is_not_an_empty_group(parent_of_stores: Path, opener: Any) -> None:
    with pytest.raises(NodeNotFoundError, match=r"zarr.json not found.*further down.*c\.zarr, a/b\.zarr"):
        opener(parent_of_stores)
    with pytest.raises(NodeNotFoundError) as plain:
        opener(parent_of_stores / "a" / "nothing-here")
    assert "found further down" not in str(plain.value) and "found Zarr stores" not in str(plain.value)


def test_implicit_groups_holding_arrays_still_open(tmp_path: Path) -> None:
    array = zarr3_backend.create_array(
        tmp_path / "s.zarr", "g/v", shape=(3,), dtype="int16", dimension_names=["x"]
    )
    array[:] = [1, 2, 3]
    for key in ("zarr.json", "g/zarr.json"):
        (tmp_path / "s.zarr" / key).unlink()
    assert isinstance(zarr3_backend.open(tmp_path / "s.zarr" / "g"), zarr3_backend.Group)
    assert list(zarr3_backend.open_group(tmp_path / "s.zarr", "g")) == ["v"]
    assert xr.open_dataset(tmp_path / "s.zarr", group="g", engine="zarr3")["v"].values.tolist() == [1, 2, 3]
    with pytest.raises(NodeNotFoundError, match="further down at: g/v"):
        zarr3_backend.open(tmp_path / "s.zarr")  # the root holds no array directly
