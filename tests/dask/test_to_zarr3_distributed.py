"""to_zarr3 on a multi-process dask.distributed LocalCluster: local disk, S3 (moto), failures.

One cluster (2 worker processes, 1 thread each) serves the whole module.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
import zarr3_backend.xarray.write.planner  # noqa: F401  (registers .to_zarr3 until zarr3_backend does)
from zarr3_backend.coordination.reservations import read_reservations
from zarr3_backend.coordination.unfinished import MARK_ATTRIBUTE
from zarr3_backend.dask.write_graph import ShardAlignmentWarning
from zarr3_backend.store import LocalStore

distributed = pytest.importorskip("distributed")
pytestmark = [
    pytest.mark.validate_stores,
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated metadata:RuntimeWarning"),
]
ENCODING = {"v": {"chunks": (4, 5, 6), "shards": (8, 10, 12)}}


def dataset() -> xr.Dataset:
    values = np.arange(20 * 18 * 24, dtype="f4").reshape(20, 18, 24)
    return xr.Dataset(
        {"v": (("t", "y", "x"), values, {"units": "K"})},
        coords={"t": np.arange(20), "y": np.linspace(0, 1, 18)},
    ).chunk({"t": 8, "y": 10, "x": 12})


def check(path, expected: xr.Dataset, **kwargs) -> None:
    back = xr.open_dataset(path, engine="zarr", **kwargs).load()
    xr.testing.assert_identical(back, expected)


def test_local_disk(client, tmp_path):
    ds = dataset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShardAlignmentWarning)
        ds.to_zarr3(tmp_path / "a.zarr", encoding=ENCODING)
    check(tmp_path / "a.zarr", ds.compute())
    ts = pytest.importorskip("tensorstore")
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a.zarr" / "v")}}
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), ds.v.values)


def test_s3(client, s3_url, s3_storage_options):
    ds = dataset()
    url = f"{s3_url}/a.zarr"
    ds.to_zarr3(url, encoding=ENCODING, storage_options=s3_storage_options, progress=True)
    check(url, ds.compute(), storage_options=s3_storage_options)


def test_memory_store_is_refused(client):
    with pytest.raises(zarr3_backend.WriteError, match="lives in this process's memory"):
        dataset().to_zarr3("memory://to_zarr3_distributed/refused", encoding=ENCODING)


def test_every_write_step_runs_as_the_last_task_on_a_worker(client, tmp_path):
    """ClearUnfinishedMarks, CommitMetadata and ReleaseReservation pickle, and do their work from a worker."""
    ds, path = dataset(), tmp_path / "a.zarr"
    store = LocalStore(path)
    template = ds.isel(t=slice(0, 8)).to_zarr3(path, encoding=ENCODING, compute=False)
    assert MARK_ATTRIBUTE in json.loads(store.get("zarr.json"))["attributes"]
    template.compute()  # ClearUnfinishedMarks
    assert MARK_ATTRIBUTE not in json.loads(store.get("zarr.json"))["attributes"]
    ds.isel(t=slice(8, 16)).to_zarr3(path, append_dim="t")  # CommitMetadata, in the graph's last task
    check(path, ds.isel(t=slice(0, 16)).compute())
    deferred = ds.isel(t=slice(16, 20)).to_zarr3(path, append_dim="t", compute=False)
    assert [(r.start, r.stop) for r in read_reservations(store, "")] == [(16, 20)]
    deferred.compute()  # ReleaseReservation
    assert read_reservations(store, "") == []
    check(path, ds.compute())


class ExitOnceStore(LocalStore):
    """Kills the worker process the first time ``key`` is written (a marker file remembers)."""

    def __init__(self, root, key: str, marker: str) -> None:
        super().__init__(root)
        self.key, self.marker = key, marker

    def set(self, key, value) -> None:
        if key == self.key and not os.path.exists(self.marker):
            Path(self.marker).touch()
            os._exit(1)
        super().set(key, value)


def test_killed_worker_converges(client, tmp_path):
    ds = dataset()
    ds.to_zarr3(tmp_path / "a.zarr", encoding=ENCODING)
    changed = ds * 2
    store = ExitOnceStore(tmp_path / "a.zarr", "v/c/1/0/1", str(tmp_path / "died"))
    changed[["v"]].drop_vars(["t", "y"]).to_zarr3(store, region={"t": slice(0, 20)})
    assert os.path.exists(tmp_path / "died")  # the worker died mid-write; the scheduler retried the shard
    check(tmp_path / "a.zarr", changed.compute().assign_coords(ds.coords))
    zarr3_backend.open_array(tmp_path / "a.zarr", "v")[...]  # every shard decodes: none is torn


class RaisingStore(LocalStore):
    """Fails every write of ``key``, as a full disk or a lost connection would."""

    def __init__(self, root, key: str) -> None:
        super().__init__(root)
        self.key = key

    def set(self, key, value) -> None:
        if key == self.key:
            raise OSError(f"injected failure writing {key!r}")
        super().set(key, value)


def test_failed_append_on_cluster_is_invisible(client, tmp_path):
    ds = dataset()
    ds.isel(t=slice(0, 8)).to_zarr3(tmp_path / "a.zarr", encoding=ENCODING)
    with pytest.raises(OSError, match="injected failure"):
        ds.isel(t=slice(8, 20)).to_zarr3(RaisingStore(tmp_path / "a.zarr", "v/c/1/1/1"), append_dim="t")
    check(tmp_path / "a.zarr", ds.isel(t=slice(0, 8)).compute())
    ds.isel(t=slice(8, 20)).to_zarr3(tmp_path / "a.zarr", append_dim="t")
    check(tmp_path / "a.zarr", ds.compute())


def test_longer_dask_strings_fail_in_the_worker_and_roll_back(client, tmp_path):
    xr.Dataset({"s": ("t", np.array(["ab", "cd"]))}).to_zarr3(tmp_path / "s.zarr")
    longer = xr.Dataset({"s": ("t", np.array(["a", "b", "abc", "ghijk"], dtype=object))}).chunk({"t": 2})
    with pytest.raises(
        zarr3_backend.WriteError, match=r"variable 's' holds strings of up to 5 characters.*fixed length 2"
    ):
        longer.to_zarr3(tmp_path / "s.zarr", append_dim="t")
    np.testing.assert_array_equal(xr.open_dataset(tmp_path / "s.zarr", engine="zarr3").s.values, ["ab", "cd"])
