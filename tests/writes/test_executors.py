"""The executor seam: one write test matrix run on dask and on Cubed, byte for byte the same stores.

Each test writes with the executor given by ``chunked_array_type`` and, where
the result is data, compares the store's bytes with the dask path's: both
executors run the same shard tasks, so they must write identical shards.
"""

from __future__ import annotations

import functools
import pathlib
import time

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("dask")
pytest.importorskip("cubed")
pytest.importorskip("cubed_xarray")

import cubed  # noqa: E402
import dask.array as da  # noqa: E402

from zarr3_backend.errors import WriteError  # noqa: E402
from zarr3_backend.writes.executor import executor_for, executor_named  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::zarr3_backend.dask.write_graph.ShardAlignmentWarning")

EXECUTORS = ["dask", "cubed"]
ENCODING = {"t": {"chunks": (5, 10), "shards": (10, 20)}}


def dataset(rows: int = 30, start: int = 0) -> xr.Dataset:
    values = np.arange(start * 20, (start + rows) * 20, dtype="float64").reshape(rows, 20)
    return xr.Dataset({"t": (("x", "y"), values)}, coords={"x": np.arange(start, start + rows)})


def chunked(ds: xr.Dataset, executor: str, rows: int = 10, spec: object = None) -> xr.Dataset:
    kwargs = {"from_array_kwargs": {"spec": spec}} if spec is not None else {}
    return ds.chunk({"x": rows}, chunked_array_type=executor, **kwargs)


def files(root: pathlib.Path) -> dict[str, bytes]:
    return {str(f.relative_to(root)): f.read_bytes() for f in root.rglob("*") if f.is_file()}


def test_executor_is_picked_from_the_data() -> None:
    ds = dataset()
    assert executor_for([chunked(ds, "cubed").t.data]).name == "cubed"
    assert executor_for([chunked(ds, "dask").t.data]).name == "dask"
    assert executor_for([ds.t.values]).name == "dask"  # no chunked array: the default
    with pytest.raises(WriteError, match="mixes arrays"):
        executor_for([chunked(ds, "cubed").t.data, chunked(ds, "dask").t.data])
    with pytest.raises(WriteError, match="no executor named"):
        executor_named("nope")


@pytest.mark.parametrize("rows", [10, 7])  # shard-aligned chunks; chunks the executor rechunks
def test_first_write_is_byte_identical(tmp_path: pathlib.Path, rows: int) -> None:
    ds = dataset()
    for executor in EXECUTORS:
        chunked(ds, executor, rows).to_zarr3(tmp_path / executor, encoding=ENCODING)
    assert files(tmp_path / "dask") == files(tmp_path / "cubed")
    back = xr.open_dataset(tmp_path / "cubed", engine="zarr3")
    np.testing.assert_array_equal(back.t.values, ds.t.values)


@pytest.mark.parametrize("old_rows", [10, 15])  # an append from a shard boundary, and from inside a shard
def test_append_is_byte_identical(tmp_path: pathlib.Path, old_rows: int) -> None:
    for executor in EXECUTORS:
        dataset(old_rows).to_zarr3(tmp_path / executor, encoding=ENCODING)
        new = chunked(dataset(30 - old_rows, start=old_rows), executor, rows=5)
        new.to_zarr3(tmp_path / executor, mode="a", append_dim="x")
    assert files(tmp_path / "dask") == files(tmp_path / "cubed")
    back = xr.open_dataset(tmp_path / "cubed", engine="zarr3")
    np.testing.assert_array_equal(back.t.values, dataset().t.values)


def test_region_write_is_byte_identical(tmp_path: pathlib.Path) -> None:
    for executor in EXECUTORS:
        dataset().to_zarr3(tmp_path / executor, encoding=ENCODING)
        patch = chunked(dataset(10, start=10) * -1, executor).drop_vars("x")
        patch.to_zarr3(tmp_path / executor, region={"x": slice(10, 20)})
    assert files(tmp_path / "dask") == files(tmp_path / "cubed")
    back = xr.open_dataset(tmp_path / "cubed", engine="zarr3").t.values
    np.testing.assert_array_equal(back[10:20], -dataset(10, start=10).t.values)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_deferred_write_runs_on_compute(tmp_path: pathlib.Path, executor: str) -> None:
    deferred = chunked(dataset(), executor).to_zarr3(tmp_path / "out", encoding=ENCODING, compute=False)
    assert deferred is not None
    deferred.compute()
    np.testing.assert_array_equal(
        xr.open_dataset(tmp_path / "out", engine="zarr3").t.values, dataset().t.values
    )


@pytest.mark.parametrize("executor", EXECUTORS)
def test_mode_w_over_its_own_source_is_refused(tmp_path: pathlib.Path, executor: str) -> None:
    dataset().to_zarr3(tmp_path / "s", encoding=ENCODING)
    lazy = xr.open_dataset(tmp_path / "s", engine="zarr3", chunks={}, chunked_array_type=executor)
    before = files(tmp_path / "s")
    with pytest.raises(WriteError, match="reads from"):
        (lazy + 1).to_zarr3(tmp_path / "s", mode="w")
    assert files(tmp_path / "s") == before


@pytest.mark.parametrize("executor", EXECUTORS)
def test_region_over_what_it_reads_is_refused(tmp_path: pathlib.Path, executor: str) -> None:
    dataset().to_zarr3(tmp_path / "s", encoding=ENCODING)
    lazy = xr.open_dataset(tmp_path / "s", engine="zarr3", chunks={}, chunked_array_type=executor)
    before = files(tmp_path / "s")
    with pytest.raises(WriteError, match="reads from"):
        (lazy.isel(x=slice(0, 10)) + 1).drop_vars("x").to_zarr3(tmp_path / "s", region={"x": slice(0, 10)})
    assert files(tmp_path / "s") == before


def _boom(block: np.ndarray) -> np.ndarray:
    if block.min() >= 400:
        raise RuntimeError("a shard task failed")
    return block


@pytest.mark.parametrize("executor", EXECUTORS)
def test_failed_append_rolls_back(tmp_path: pathlib.Path, executor: str) -> None:
    dataset(10).to_zarr3(tmp_path / "s", encoding=ENCODING)
    before = files(tmp_path / "s")
    new = chunked(dataset(20, start=10), executor)
    library = cubed if executor == "cubed" else da
    failing = new.copy(data={"t": library.map_blocks(_boom, new.t.data, dtype=new.t.dtype)})
    with pytest.raises(RuntimeError, match="a shard task failed"):
        failing.to_zarr3(tmp_path / "s", mode="a", append_dim="x")
    assert files(tmp_path / "s") == before


def _await(marker: pathlib.Path) -> None:
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def _late(root: pathlib.Path, block: np.ndarray) -> np.ndarray:
    """Two shard tasks: one fails once the other runs; the other has its block a second after that failure."""
    if block.min() >= 400:
        _await(root / "started")
        (root / "failed").touch()
        raise RuntimeError("a shard task failed")
    (root / "started").touch()
    _await(root / "failed")
    time.sleep(1)  # still running when the failure reaches the client
    (root / "done").touch()
    return block


@pytest.mark.parametrize("executor_name", ["threads", "processes"])
def test_cubed_rolls_back_after_its_last_task(tmp_path: pathlib.Path, executor_name: str) -> None:
    dataset(10).to_zarr3(tmp_path / "s", encoding=ENCODING)
    before = files(tmp_path / "s")
    work, options = str(tmp_path / "work"), {"max_workers": 2}
    spec = cubed.Spec(work, allowed_mem="200MB", executor_name=executor_name, executor_options=options)
    new = chunked(dataset(20, start=10), "cubed", spec=spec)
    late = cubed.map_blocks(functools.partial(_late, tmp_path), new.t.data, dtype=new.t.dtype)
    with pytest.raises(RuntimeError, match="a shard task failed"):
        new.copy(data={"t": late}).to_zarr3(tmp_path / "s", mode="a", append_dim="x")
    assert files(tmp_path / "s") == before
    _await(
        tmp_path / "done"
    )  # the other task's data is ready a second after the roll-back: it writes nothing
    time.sleep(1)
    assert (tmp_path / "done").exists() and files(tmp_path / "s") == before


def test_cubed_into_icechunk_is_refused(tmp_path: pathlib.Path) -> None:
    icechunk = pytest.importorskip("icechunk")
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))
    session = repo.writable_session("main")
    with pytest.raises(WriteError, match="Icechunk session"):
        chunked(dataset(), "cubed").to_zarr3(session.store, encoding=ENCODING)


def test_cubed_reads_one_chunk_per_shard(tmp_path: pathlib.Path) -> None:
    dataset().to_zarr3(tmp_path / "s", encoding=ENCODING)
    lazy = xr.open_dataset(tmp_path / "s", engine="zarr3", chunks={}, chunked_array_type="cubed")
    assert isinstance(lazy.t.data, cubed.Array)
    assert lazy.t.data.chunks == ((10, 10, 10), (20,))
    np.testing.assert_array_equal(lazy.t.values, dataset().t.values)


@pytest.mark.parametrize("executor_name", ["threads", "processes"])
def test_cubed_executors_write_the_same_bytes(tmp_path: pathlib.Path, executor_name: str) -> None:
    spec = cubed.Spec(work_dir=str(tmp_path / "work"), allowed_mem="200MB", executor_name=executor_name)
    chunked(dataset(), "dask").to_zarr3(tmp_path / "dask", encoding=ENCODING)
    chunked(dataset(), "cubed", rows=7, spec=spec).to_zarr3(tmp_path / "cubed", encoding=ENCODING)
    assert files(tmp_path / "dask") == files(tmp_path / "cubed")


def test_cubed_processes_refuse_a_memory_store() -> None:
    spec = cubed.Spec(allowed_mem="200MB", executor_name="processes")
    with pytest.raises(WriteError, match="this process's memory"):
        chunked(dataset(), "cubed", spec=spec).to_zarr3("memory://seam/processes", encoding=ENCODING)


def test_cubed_refuses_shards_over_allowed_mem(tmp_path: pathlib.Path) -> None:
    spec = cubed.Spec(work_dir=str(tmp_path / "work"), allowed_mem="2kB", reserved_mem=0)
    with pytest.raises(ValueError, match="allowed_mem|exceeds"):
        chunked(dataset(), "cubed", spec=spec).to_zarr3(tmp_path / "s", encoding=ENCODING)
    assert not (tmp_path / "s" / "t" / "c").exists()


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("rows", [10, 7])
def test_progress_counts_shard_tasks_only(
    tmp_path: pathlib.Path, executor: str, rows: int, capsys: pytest.CaptureFixture[str]
) -> None:
    chunked(dataset(), executor, rows).to_zarr3(tmp_path / "out", encoding=ENCODING, progress=True)
    lines = capsys.readouterr().out.replace("\r", "\n").split()
    assert "3/3" in lines and not any(line.startswith("4/") for line in lines)
