"""Appends and new variables are all-or-nothing: a fault at any single store write leaves before or after.

Each test runs the write once to count its store writes, then once per
write k with a store that fails at the k-th ``set``/``delete``; after every
failure the store must open (both engines) exactly as before or exactly as
after, and a plain retry must give exactly "after" (never a double append).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (registers to_zarr3)
from zarr3_backend.store import make_store
from zarr3_backend.store.base import Request, Store, Value
from zarr3_backend.xarray_backend.commit import PENDING_KEY


class InjectedFault(OSError):
    """The failure the wrapper raises."""


class FailingStore(Store):
    """Delegates to ``inner``; the ``fail_at``-th write (set or delete, counted from 0) raises."""

    def __init__(self, inner: Store, fail_at: int | None = None) -> None:
        self.inner, self.fail_at, self.writes = inner, fail_at, 0
        self.keys: list[str] = []
        self._lock = threading.Lock()

    def _count(self, key: str) -> None:
        with self._lock:
            index, self.writes = self.writes, self.writes + 1
            self.keys.append(key)
        if index == self.fail_at:
            raise InjectedFault(f"injected fault at write {index}")

    def get_many(self, requests: Sequence[Request]) -> list[bytes | None]:
        return self.inner.get_many(requests)

    def set(self, key: str, value: Value) -> None:
        self._count(key)
        self.inner.set(key, value)

    def delete(self, key: str) -> None:
        self._count(key)
        self.inner.delete(key)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        return self.inner.list_prefix(prefix)

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        return self.inner.list_dir(prefix)


def _base() -> xr.Dataset:
    time = np.arange(5)
    return xr.Dataset(
        {"t2m": (("time", "x"), np.arange(20.0).reshape(5, 4)), "lat": ("x", np.linspace(0, 3, 4))},
        coords={"time": time},
        attrs={"title": "before"},
    )


def _addition() -> xr.Dataset:
    return xr.Dataset(
        {"t2m": (("time", "x"), -np.arange(12.0).reshape(3, 4)), "lat": ("x", np.linspace(0, 3, 4))},
        coords={"time": np.arange(5, 8)},
        attrs={"title": "after"},
    ).chunk({"time": 1})


def _template(tmp_path: Path) -> Path:
    path = tmp_path / "template.zarr"
    _base().to_zarr3(path, encoding={"t2m": {"chunks": (1, 4), "shards": (2, 4)}, "time": {"chunks": (2,)}})
    _base().rename(time="step").to_zarr3(path, group="child", mode="a")
    return path


def _keys(path: Path) -> set[str]:
    return {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()}


def _open_all(path: Path) -> list[xr.Dataset]:
    """The root with both engines, and the child group with engine="zarr3" alone and inside the tree."""
    datasets = [xr.open_dataset(path, engine=engine).load() for engine in ("zarr3", "zarr")]
    tree = xr.open_datatree(path, engine="zarr3")
    return [*datasets, xr.open_dataset(path, group="child", engine="zarr3").load(), tree["child"].to_dataset().load(),
            xr.open_dataset(path, group="child", engine="zarr").load()]


def _run_with_faults(tmp_path: Path, write) -> None:  # type: ignore[no-untyped-def]
    template = _template(tmp_path)
    before = _open_all(template)
    clean = tmp_path / "clean.zarr"
    shutil.copytree(template, clean)
    counter = FailingStore(make_store(str(clean)))
    write(counter)
    after = _open_all(clean)
    assert any(not new.identical(old) for new, old in zip(after, before))
    assert counter.writes > 3
    for k in range(counter.writes):
        path = tmp_path / f"run{k}.zarr"
        shutil.copytree(template, path)
        with pytest.raises(InjectedFault):
            write(FailingStore(make_store(str(path)), fail_at=k))
        for got, old, new in zip(_open_all(path), before, after):
            assert got.identical(old) or got.identical(new), f"fault at write {k}: neither before nor after\n{got}"
        if not (path / PENDING_KEY).exists():  # failed before the commit point: rolled back, no stray chunks
            assert _keys(path) == _keys(template), f"fault at write {k}"
        write(make_store(str(path)))
        for got, new in zip(_open_all(path), after):
            assert got.identical(new), f"fault at write {k}: retry did not converge to after\n{got}"
        assert not (path / PENDING_KEY).exists()
        shutil.rmtree(path)


def test_append_is_all_or_nothing_at_every_write(tmp_path: Path) -> None:
    _run_with_faults(tmp_path, lambda store: _addition().to_zarr3(store, append_dim="time"))


def test_append_in_a_child_group_is_all_or_nothing_at_every_write(tmp_path: Path) -> None:
    child = _addition().rename(time="step")
    _run_with_faults(tmp_path, lambda store: child.to_zarr3(store, group="child", append_dim="step"))


def test_new_variables_are_all_or_nothing_at_every_write(tmp_path: Path) -> None:
    extra = xr.Dataset(
        {"rain": (("time", "x"), np.ones((5, 4))), "q": ("x", np.arange(4.0))}, coords={"time": np.arange(5)}
    ).chunk({"time": 2})
    _run_with_faults(tmp_path, lambda store: extra.to_zarr3(store, mode="a"))


def test_unchanged_variables_without_append_dim_are_not_rewritten(tmp_path: Path) -> None:
    path = _template(tmp_path)
    store = FailingStore(make_store(str(path)))
    _addition().to_zarr3(store, append_dim="time")
    assert xr.open_dataset(path, engine="zarr3").sizes["time"] == 8
    assert not [key for key in store.keys if key.startswith("lat/")]
    changed = _addition().assign(lat=("x", np.arange(4.0) + 10))
    store = FailingStore(make_store(str(path)))
    changed.to_zarr3(store, append_dim="time")  # a changed one is rewritten, as engine="zarr" does
    assert [key for key in store.keys if key.startswith("lat/")]
    np.testing.assert_array_equal(xr.open_dataset(path, engine="zarr3").lat, np.arange(4.0) + 10)


def test_retry_after_commit_does_not_append_twice(tmp_path: Path) -> None:
    path = _template(tmp_path)
    addition = _addition()
    shutil.copytree(path, tmp_path / "probe.zarr")
    probe = FailingStore(make_store(str(tmp_path / "probe.zarr")))
    addition.to_zarr3(probe, append_dim="time")
    assert probe.keys[-1] == PENDING_KEY  # the last write clears the pending record
    with pytest.raises(InjectedFault):
        addition.to_zarr3(FailingStore(make_store(str(path)), fail_at=probe.writes - 1), append_dim="time")
    assert (path / PENDING_KEY).exists()
    assert xr.open_dataset(path, engine="zarr3").sizes["time"] == 8
    addition.to_zarr3(path, append_dim="time")  # the retry completes, it does not append again
    assert xr.open_dataset(path, engine="zarr3").sizes["time"] == 8
    assert not (path / PENDING_KEY).exists()
    addition.to_zarr3(path, append_dim="time")  # a new call (no pending record) appends again
    assert xr.open_dataset(path, engine="zarr3").sizes["time"] == 11


def test_unreadable_pending_record_is_a_clear_error(tmp_path: Path) -> None:
    path = _template(tmp_path)
    (path / PENDING_KEY).write_text("{not json")
    with pytest.raises(zarr3_backend.errors.MetadataError, match="pending-write record.*delete it"):
        _addition().to_zarr3(path, append_dim="time")


def test_failing_data_task_leaves_the_store_as_before(tmp_path: Path) -> None:
    import dask.array as da

    path = _template(tmp_path)
    before = _open_all(path)
    keys = _keys(path)

    def explode(block: np.ndarray, block_info: dict | None = None) -> np.ndarray:
        if block_info and block_info[None]["chunk-location"][0] == 2:
            raise RuntimeError("source failed")
        return block

    data = da.map_blocks(explode, da.ones((3, 4), chunks=(1, 4)), dtype=float)
    broken = _addition().assign(t2m=(("time", "x"), data))
    with pytest.raises(RuntimeError, match="source failed"):
        broken.to_zarr3(path, append_dim="time")
    for got, old in zip(_open_all(path), before):
        assert got.identical(old)
    assert _keys(path) == keys


def test_a_different_request_completes_the_pending_one_first(tmp_path: Path) -> None:
    path = _template(tmp_path)
    shutil.copytree(path, tmp_path / "probe.zarr")
    probe = FailingStore(make_store(str(tmp_path / "probe.zarr")))
    _addition().to_zarr3(probe, append_dim="time")
    with pytest.raises(InjectedFault):  # fails on the first node document after the commit point
        _addition().to_zarr3(FailingStore(make_store(str(path)), fail_at=probe.keys.index(PENDING_KEY) + 2),
                             append_dim="time")
    later = _addition().assign_coords(time=np.arange(8, 11))
    later.to_zarr3(path, append_dim="time")
    np.testing.assert_array_equal(xr.open_dataset(path, engine="zarr3").time, np.arange(11))
    np.testing.assert_array_equal(xr.open_dataset(path, engine="zarr", consolidated=False).time, np.arange(11))
    assert not (path / PENDING_KEY).exists()


def test_datatree_new_variables_and_groups_are_all_or_nothing_at_every_write(tmp_path: Path) -> None:
    extra = xr.Dataset({"rain": (("time", "x"), np.ones((5, 4)))}, coords={"time": np.arange(5)}).chunk({"time": 2})
    tree = xr.DataTree.from_dict({
        "/": extra,
        "/child": xr.Dataset({"snow": (("step", "x"), np.zeros((5, 4)))}).chunk({"step": 2}),
        "/fresh": xr.Dataset({"z": ("y", np.arange(3.0))}),
    })
    _run_with_faults(tmp_path, lambda store: tree.to_zarr3(store, mode="a"))
