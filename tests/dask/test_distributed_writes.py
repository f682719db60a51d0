"""Distributed writes: graph size and shard progress."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

import zarr3_backend
import zarr3_backend.xarray.write.planner  # noqa: F401  (registers .to_zarr3)
from zarr3_backend.dask.progress import ShardProgress, is_shard_key
from zarr3_backend.dask.write_graph import WRITER_PREFIX

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated metadata:RuntimeWarning"),
]
PROGRESS = re.compile(r"to_zarr3: (\d+)/(\d+) shards \((\d+)%\), (\d+) MB, ([\d.]+) MB/s")


def small_dataset() -> xr.Dataset:
    values = np.random.default_rng(0).random((16, 12, 10)).astype("f4")
    return xr.Dataset({"v": (("t", "y", "x"), values)}).chunk({"t": 4, "y": 6, "x": -1})


ENCODING = {"v": {"chunks": (2, 3, 10), "shards": (4, 6, 10)}}  # 4 x 2 = 8 shards


def test_graph_is_one_task_per_shard_for_a_large_lazy_dataset(tmp_path):
    # 2.9 GB of float32, never materialised: 720 shards of 4 MB
    data = da.zeros((7200, 320, 320), chunks=(10, 320, 320), dtype="f4")
    ds = xr.Dataset({"v": (("t", "y", "x"), data)})
    delayed = ds.to_zarr3(
        tmp_path / "a.zarr",
        encoding={"v": {"chunks": (10, 160, 160), "shards": (10, 320, 320)}},
        compute=False,
    )
    graph = dict(delayed.__dask_graph__())
    shard_tasks = [key for key in graph if is_shard_key(key)]
    assert len(shard_tasks) == 720
    writers = [key for key in graph if str(key).startswith(WRITER_PREFIX)]
    assert len(writers) == 1  # the array's description, once per graph
    # the source blocks fuse into their shard task; + the writer + gathering the counts + finalize
    assert len(graph) == 720 + 3
    assert zarr3_backend.open_array(tmp_path / "a.zarr", "v").nchunks_stored() == 0  # nothing written yet


def shard_task_sizes(tmp_path, n: int) -> set[int]:
    """The pickled sizes of the shard tasks of writing ``n`` shards, as the client sends them."""
    import cloudpickle
    import dask
    from dask._task_spec import Alias

    values = np.arange(n * 8 * 6, dtype="f4").reshape(n, 8, 6)
    ds = xr.Dataset({"v": (("t", "y", "x"), values)}).chunk({"t": 1})
    delayed = ds.to_zarr3(
        tmp_path / f"{n}.zarr", encoding={"v": {"chunks": (1, 4, 6), "shards": (1, 8, 6)}}, compute=False
    )
    (optimized,) = dask.optimize(delayed)
    graph = dict(optimized.__dask_graph__())
    tasks = [graph[key] for key in graph if is_shard_key(key)][-50:]
    tasks = [
        graph[task.target] if isinstance(task, Alias) else task for task in tasks
    ]  # fused under another name
    return {len(cloudpickle.dumps(task)) for task in tasks}


def test_a_shard_task_does_not_grow_with_the_number_of_shards(tmp_path):
    small, large = shard_task_sizes(tmp_path, 1000), shard_task_sizes(tmp_path, 9000)
    # no offsets of other blocks, no Array per task: only the block index's and slices' digits differ
    assert max(large) - min(small) < 16
    assert max(large) < 1000


def test_shard_tasks_return_the_bytes_they_wrote(tmp_path):
    ds = small_dataset()
    delayed = ds.to_zarr3(tmp_path / "a.zarr", encoding=ENCODING, compute=False)
    graph = delayed.__dask_graph__()
    import dask

    counts = dask.get(dict(graph), [key for key in graph if is_shard_key(key)])
    assert sorted(int(np.sum(c)) for c in counts) == [4 * 6 * 10 * 4] * 8
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load(), ds.compute())


def progress_lines(text: str) -> list[tuple[int, ...]]:
    return [tuple(int(float(g)) for g in m.groups()) for m in PROGRESS.finditer(text)]


def test_progress_on_a_cluster_counts_shards_and_rate(client, tmp_path, capsys):
    ds = small_dataset()
    ds.to_zarr3(tmp_path / "a.zarr", encoding=ENCODING, progress=True)
    lines = progress_lines(capsys.readouterr().out)
    assert [line[:3] for line in lines] == [(n, 8, 100 * n // 8) for n in range(1, 9)]
    assert lines[-1][3] == round(ds.v.nbytes / 1e6)
    xr.testing.assert_identical(xr.open_dataset(tmp_path / "a.zarr", engine="zarr3").load(), ds.compute())


def test_progress_threaded_counts_shards(tmp_path, capsys):
    import dask

    with dask.config.set(scheduler="threads"):
        small_dataset().to_zarr3(tmp_path / "a.zarr", encoding=ENCODING, progress=True)
    out = capsys.readouterr().out
    assert [line[:2] for line in progress_lines(out)] == [(n, 8) for n in range(1, 9)]
    assert out.endswith("\n")


def test_progress_line_format():
    import io

    stream = io.StringIO()
    progress = ShardProgress(4, stream=stream)
    progress.update(np.array([[2_000_000]]))
    progress.close()
    assert PROGRESS.search(stream.getvalue()).groups()[:4] == ("1", "4", "25", "2")


def _first_block_fails(block: np.ndarray, block_info: dict | None = None) -> np.ndarray:
    import time

    if block_info is not None and block_info[None]["chunk-location"][0] == 0:
        raise RuntimeError("source block failed")
    time.sleep(0.5)  # the other shards are still being computed when the first one fails
    return block


def _files(path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def test_failed_cluster_append_is_rolled_back_with_no_task_still_writing(tmp_path, client):
    # The caller rolls back right after the exception: a shard task still running on a worker
    # would write its chunks beyond the rolled-back extent afterwards.
    import time

    ds = small_dataset()
    path = tmp_path / "a.zarr"
    ds.to_zarr3(path, encoding=ENCODING)
    before = _files(path)
    failing = ds.assign(v=ds.v.copy(data=ds.v.data.map_blocks(_first_block_fails, dtype=ds.v.dtype)))
    with pytest.raises(RuntimeError, match="source block failed"):
        failing.to_zarr3(path, append_dim="t")
    assert _files(path) == before
    time.sleep(1.5)
    assert _files(path) == before
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr3").load(), ds.compute())
