"""Icechunk sessions through engine="zarr3" and to_zarr3 (threaded); engine="zarr" on the same session is the oracle."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
from zarr3_backend.store import icechunk_api, make_store
from zarr3_backend.store.zarr_python import ZarrPythonStore

icechunk = pytest.importorskip("icechunk")


def dataset(start: int = 0, days: int = 8) -> xr.Dataset:
    time = np.arange(start, start + days).astype("datetime64[D]").astype("datetime64[ns]")
    temperature = np.arange(start * 12, (start + days) * 12, dtype="float32").reshape(days, 3, 4)
    return xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), temperature, {"units": "K", "long_name": "temperature"}),
            "station": (("lat",), np.array(["a", "bb", "ccc"])),
        },
        coords={"time": time, "lat": [10.0, 20.0, 30.0], "lon": np.arange(4)},
        attrs={"title": "icechunk test"},
    )


@pytest.fixture
def repo(tmp_path):
    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))


def zarr_oracle(store, **kwargs) -> xr.Dataset:
    return xr.open_dataset(store, engine="zarr", consolidated=False, **kwargs).load()


def assert_same_reads(store) -> None:
    """Values, attrs, encodings and dims read by engine="zarr3" equal engine="zarr"'s on ``store``."""
    ours = xr.open_dataset(store, engine="zarr3").load()
    theirs = zarr_oracle(store)
    xr.testing.assert_identical(ours, theirs)
    for name in theirs.variables:
        for key in ("dtype", "units", "calendar", "_FillValue", "chunks"):
            np.testing.assert_equal(
                ours[name].encoding.get(key), theirs[name].encoding.get(key), str((name, key))
            )
    lazy = xr.open_dataset(store, engine="zarr3", chunks={})
    assert lazy.t2m.chunks is not None
    xr.testing.assert_identical(lazy.load(), theirs)


def test_written_by_zarr_python_reads_identically_at_head_and_older_snapshot(repo):
    session = repo.writable_session("main")
    dataset().to_zarr(
        session.store, zarr_format=3, consolidated=False, encoding={"t2m": {"chunks": (2, 3, 2)}}
    )
    first = session.commit("first week")
    session = repo.writable_session("main")
    dataset(8).to_zarr(session.store, append_dim="time", consolidated=False)
    session.commit("second week")
    head = repo.readonly_session(branch="main").store
    assert_same_reads(head)
    assert xr.open_dataset(head, engine="zarr3").sizes["time"] == 16
    old = repo.readonly_session(snapshot_id=first).store
    assert_same_reads(old)
    xr.testing.assert_identical(xr.open_dataset(old, engine="zarr3").load(), zarr_oracle(old))
    assert xr.open_dataset(old, engine="zarr3").sizes["time"] == 8


def test_tags_groups_and_the_core_api(repo):
    session = repo.writable_session("main")
    tree = xr.DataTree.from_dict({"/": dataset(), "/child": xr.Dataset({"v": (("x",), np.arange(5))})})
    tree.to_zarr(session.store, zarr_format=3, consolidated=False)
    repo.create_tag("v1", session.commit("tree"))
    store = repo.readonly_session(tag="v1").store
    ours = xr.open_datatree(store, engine="zarr3").load()
    xr.testing.assert_identical(ours, xr.open_datatree(store, engine="zarr", consolidated=False).load())
    assert set(xr.open_groups(store, engine="zarr3")) == {"/", "/child"}
    group = zarr3_backend.open_group(store)
    assert group["child/v"][:].tolist() == [0, 1, 2, 3, 4]


def test_writable_session_sees_its_own_uncommitted_changes(repo):
    session = repo.writable_session("main")
    dataset().to_zarr(session.store, zarr_format=3, consolidated=False)
    xr.testing.assert_identical(xr.open_dataset(session.store, engine="zarr3").load(), dataset())
    with pytest.raises(FileNotFoundError):
        xr.open_dataset(repo.readonly_session(branch="main").store, engine="zarr3")


def test_to_zarr3_modes_commit_and_read_with_engine_zarr(repo):
    session = repo.writable_session("main")
    ds = dataset()
    ds.to_zarr3(session.store, encoding={"t2m": {"chunks": (2, 3, 4), "shards": (4, 3, 4)}})
    with pytest.raises(FileExistsError):  # w- (the default) refuses a non-empty location
        ds.to_zarr3(session.store)
    with pytest.raises(FileNotFoundError):  # uncommitted: invisible to the branch's readers
        xr.open_dataset(repo.readonly_session(branch="main").store, engine="zarr")
    session.commit("first")
    xr.testing.assert_identical(zarr_oracle(repo.readonly_session(branch="main").store), ds)

    session = repo.writable_session("main")
    dataset(8).chunk(time=4).to_zarr3(session.store, append_dim="time")  # dask, threaded
    session.commit("append")
    session = repo.writable_session("main")
    region = dataset(2, 2).drop_vars(["station", "lat", "lon"]) * 0 - 1
    region.to_zarr3(session.store, region={"time": slice(2, 4)})
    session.commit("region")
    expected = xr.concat([ds, dataset(8)], "time", data_vars="minimal")
    expected["t2m"][2:4] = -1
    expected["station"] = ds.station
    xr.testing.assert_identical(zarr_oracle(repo.readonly_session(branch="main").store), expected)

    session = repo.writable_session("main")
    ds.attrs["title"] = "replaced"
    ds.chunk(time=2).to_zarr3(session.store, mode="w")
    ds[["t2m"]].to_zarr3(session.store, mode="r+")
    ds.assign(extra=ds.t2m * 2).to_zarr3(session.store, mode="a")
    session.commit("replace")
    xr.testing.assert_identical(
        zarr_oracle(repo.readonly_session(branch="main").store), ds.assign(extra=ds.t2m * 2)
    )


def test_no_records_of_our_own_in_the_repository(repo):
    session = repo.writable_session("main")
    dataset().to_zarr3(session.store)
    dataset(8).to_zarr3(session.store, append_dim="time")
    dataset(16).chunk(time=8).to_zarr3(session.store, append_dim="time", compute=False).compute()
    session.commit("three")
    store = make_store(repo.readonly_session(branch="main").store)
    assert isinstance(store, ZarrPythonStore) and store.transactional
    assert not [key for key in store.list() if "zarr3_backend" in key]
    group = zarr3_backend.open_group(store)
    assert "_zarr3_backend_unfinished" not in group.attrs
    root = json.loads(store.get("zarr.json") or b"{}")  # not consolidated by default: writers merge per node
    assert "consolidated_metadata" not in root or root["consolidated_metadata"] is None
    xr.testing.assert_identical(
        zarr_oracle(store.wrapped),
        xr.concat([dataset(), dataset(8), dataset(16)], "time", data_vars="minimal"),
    )


def test_failed_write_commits_nothing_and_is_discarded(repo):
    session = repo.writable_session("main")
    dataset().to_zarr3(session.store)
    session.commit("first")
    session = repo.writable_session("main")

    def fail(block: np.ndarray) -> np.ndarray:
        raise RuntimeError("boom")

    broken = dataset(8).chunk(time=8)
    broken["t2m"] = broken.t2m.copy(data=broken.t2m.data.map_blocks(fail, dtype="float32"))
    with pytest.raises(RuntimeError, match="boom"):
        broken.to_zarr3(session.store, append_dim="time")
    assert session.has_uncommitted_changes
    session.discard_changes()
    assert not session.has_uncommitted_changes
    xr.testing.assert_identical(zarr_oracle(repo.readonly_session(branch="main").store), dataset())


def test_conflicting_commit_is_icechunks_conflict_error(repo):
    session = repo.writable_session("main")
    dataset().to_zarr3(session.store)
    session.commit("first")
    one, two = repo.writable_session("main"), repo.writable_session("main")
    (dataset()[["t2m"]] + 1).to_zarr3(one.store, mode="r+")
    (dataset()[["t2m"]] + 2).to_zarr3(two.store, mode="r+")
    one.commit("one")
    with pytest.raises(icechunk.ConflictError):
        two.commit("two")


def virtual_repo(tmp_path, data: np.ndarray) -> tuple[object, str]:
    """A repository whose array ``t`` is two virtual chunks, byte ranges of a file outside it; and its container."""
    legacy = tmp_path / "raw" / "legacy.bin"
    legacy.parent.mkdir()
    legacy.write_bytes(b"HEADER--" + data.tobytes())
    prefix = f"file://{legacy.parent}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(legacy.parent)))
    )
    storage = icechunk.local_filesystem_storage(str(tmp_path / "repo"))
    repo = icechunk.Repository.create(
        storage, config=config, authorize_virtual_chunk_access={prefix: icechunk_api.no_credentials(prefix)}
    )
    session = repo.writable_session("main")
    group = zarr3_backend.create_group(session.store)
    group.create_array(
        "t", shape=(6, 4), dtype="<f8", chunks=(3, 4), compressors=None, dimension_names=("x", "y")
    )
    for i in range(2):
        session.store.set_virtual_ref(f"t/c/{i}/0", f"file://{legacy}", offset=8 + i * 96, length=96)
    session.commit("virtual")
    return storage, prefix


@pytest.mark.filterwarnings("error::DeprecationWarning")  # icechunk 2 deprecates None as "no credentials"
def test_virtual_chunks_resolve_as_icechunk_resolves_them(tmp_path):
    """Chunks that are byte ranges of a file outside the repository (a virtual dataset) read like stored ones."""
    data = np.arange(24, dtype="<f8").reshape(6, 4)
    storage, prefix = virtual_repo(tmp_path, data)
    repo = icechunk.Repository.open(
        storage, authorize_virtual_chunk_access={prefix: icechunk_api.no_credentials(prefix)}
    )
    store = repo.readonly_session(branch="main").store
    assert xr.open_dataset(store, engine="zarr3").t.values.tolist() == data.tolist()
    lazy = xr.open_dataset(store, engine="zarr3", chunks={})
    xr.testing.assert_identical(lazy.load(), zarr_oracle(store))


def test_unauthorized_virtual_chunks_are_a_store_error_saying_how_to_authorize(tmp_path):
    storage, prefix = virtual_repo(tmp_path, np.zeros((6, 4)))
    store = icechunk.Repository.open(storage).readonly_session(branch="main").store
    dataset = xr.open_dataset(store, engine="zarr3")  # metadata reads; the chunks are refused
    with pytest.raises(zarr3_backend.StoreError, match=f"container {prefix}, which this Icechunk") as caught:
        dataset.t.load()
    assert "authorize_virtual_chunk_access={" + repr(prefix) in str(caught.value)
    assert isinstance(caught.value.__cause__, icechunk.IcechunkError)


def test_no_credentials_is_what_the_installed_icechunk_takes():
    if icechunk_api.major_version() < 2:
        assert icechunk_api.no_credentials("file:///data/") is None
    else:  # 2.x deprecates None for these
        assert icechunk_api.no_credentials("file:///data/") is icechunk.credentials.LocalFileSystemAccess
        assert icechunk_api.no_credentials("https://example.org/") is icechunk.credentials.HttpAccess
        assert isinstance(icechunk_api.no_credentials("s3://bucket/"), icechunk.S3Credentials.Anonymous)
    with pytest.raises(zarr3_backend.ArgumentError, match="'ftp://host/' has no scheme"):
        icechunk_api.no_credentials("ftp://host/")
