"""Appends and new variables are all-or-nothing: a fault at any single store write leaves before or after.

Each test runs the write once to count its store writes, then once per
write k with a store that fails at the k-th ``set``/``delete``; after every
failure the store must open (both engines) exactly as before or exactly as
after, and a plain retry must give exactly "after" (never a double append);
readers without consolidated metadata must see the same or be refused naming
the pending record, and ``validate`` must advise finishing it.

Then: deferred appends keep every row in call order however they are
computed (``engine="zarr"`` as the oracle), rows reserved and not written are
reported, roll-backs clear only their own rows, and concurrent appenders give
every row (threads; a shared ``lock=``) or a ``ConcurrentWriteError``.
"""

from __future__ import annotations

import shutil
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (registers to_zarr3)
from tests.forking import dead_pid
from zarr3_backend.coordination.lease import LEASE_KEY
from zarr3_backend.coordination.records import PENDING_KEY
from zarr3_backend.store import make_store
from zarr3_backend.store.base import Request, Store, Value, Versioned
from zarr3_backend.validate import validate_store

pytestmark = pytest.mark.validate_stores


class InjectedFault(OSError):
    """The failure the wrapper raises."""


class FailingStore(Store):
    """Delegates to ``inner``; the ``fail_at``-th write (set or delete, counted from 0) raises."""

    def __init__(self, inner: Store, fail_at: int | None = None) -> None:
        self.inner, self.fail_at, self.writes = inner, fail_at, 0
        self.keys: list[str] = []
        self._lock = threading.Lock()

    @property
    def atomic_create(self) -> bool:
        return self.inner.atomic_create

    def create(self, key: str, value: Value) -> bool:
        return self.inner.create(key, value)  # the lease: how writers take turns, not what they write

    def _count(self, key: str) -> None:
        if key == LEASE_KEY:
            return
        with self._lock:
            index, self.writes = self.writes, self.writes + 1
            self.keys.append(key)
        if index == self.fail_at:
            raise InjectedFault(f"injected fault at write {index}")

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        return self.inner.get_many_versioned(requests)

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
    return [
        *datasets,
        xr.open_dataset(path, group="child", engine="zarr3").load(),
        tree["child"].to_dataset().load(),
        xr.open_dataset(path, group="child", engine="zarr").load(),
    ]


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
            assert got.identical(old) or got.identical(new), (
                f"fault at write {k}: neither before nor after\n{got}"
            )
        if not (path / PENDING_KEY).exists():  # failed before the commit point: rolled back, no stray chunks
            assert _keys(path) == _keys(template), f"fault at write {k}"
            assert [p for p in validate_store(path) if p.severity == "error"] == []
        else:
            _check_pending(path, tmp_path / f"finished{k}.zarr", after)
        for group, old, new in (("", before[0], after[0]), ("child", before[2], after[2])):
            try:  # without consolidated metadata: old, new, or refused naming the pending record
                got = xr.open_dataset(path, group=group or None, engine="zarr3", consolidated=False).load()
            except zarr3_backend.errors.MetadataError as exc:
                assert PENDING_KEY in str(exc) and "finish_pending_write" in str(exc)
                assert (path / PENDING_KEY).exists()
            else:
                assert got.identical(old) or got.identical(new), (
                    f"fault at write {k}: unconsolidated read\n{got}"
                )
        write(make_store(str(path)))
        for got, new in zip(_open_all(path), after):
            assert got.identical(new), f"fault at write {k}: retry did not converge to after\n{got}"
        assert not (path / PENDING_KEY).exists()
        shutil.rmtree(path)


def _check_pending(path: Path, copy: Path, after: list[xr.Dataset]) -> None:
    """``validate`` names the pending record and advises finishing it, and following that advice gives "after"."""
    problems = validate_store(path)
    assert any(
        p.key == PENDING_KEY and p.severity == "error" and "finish_pending_write" in p.message
        for p in problems
    )
    assert not any("re-run consolidate_metadata" in p.message for p in problems)
    shutil.copytree(path, copy)
    assert zarr3_backend.finish_pending_write(copy) is True
    assert not (copy / PENDING_KEY).exists()
    for got, new in zip(_open_all(copy), after):
        assert got.identical(new)
    assert got.identical(xr.open_dataset(copy, group="child", engine="zarr3", consolidated=False).load())
    assert [p for p in validate_store(copy) if p.severity == "error"] == []
    shutil.rmtree(copy)


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
    changed.to_zarr3(
        store, append_dim="time", allow_repeated_index=True
    )  # a changed one is rewritten, as engine="zarr" does
    assert [key for key in store.keys if key.startswith("lat/")]
    np.testing.assert_array_equal(xr.open_dataset(path, engine="zarr3").lat, np.arange(4.0) + 10)


@pytest.mark.parametrize("chunked", [False, True], ids=["numpy", "dask"])
def test_static_variables_of_any_size_are_compared_block_by_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunked: bool
) -> None:
    """A static variable (a land-sea mask, no ``append_dim``) larger than one comparison block is untouched when
    unchanged; a change in its last block rewrites it with the new values, as ``engine="zarr"`` does (mode="a")."""
    from zarr3_backend.xarray.write import stored

    monkeypatch.setattr(stored, "UNCHANGED_CHECK_BYTES", 64)  # the (6, 4) float64 mask: 3 blocks of 2 rows

    def days(start: int, mask: np.ndarray) -> xr.Dataset:
        ds = xr.Dataset(
            {
                "t2m": (("time", "lat", "lon"), np.full((2, 6, 4), float(start))),
                "lsm": (("lat", "lon"), mask),
            },
            coords={"time": [start, start + 1]},
        )
        return ds.chunk({"time": 1}) if chunked else ds

    mask = np.linspace(0.0, 1.0, 24).reshape(6, 4)
    changed = mask.copy()
    changed[-1, -1] = 5.0
    path, oracle = tmp_path / "static.zarr", tmp_path / "oracle.zarr"
    days(0, mask).to_zarr3(path)
    days(0, mask).to_zarr(oracle, zarr_format=3, consolidated=False)
    stored_bytes = {key: (path / key).read_bytes() for key in _keys(path) if key.startswith("lsm/")}
    store = FailingStore(make_store(str(path)))
    days(2, mask.copy()).to_zarr3(store, append_dim="time")
    assert [key for key in store.keys if key.startswith("lsm/")] == []
    assert {key: (path / key).read_bytes() for key in stored_bytes} == stored_bytes
    store = FailingStore(make_store(str(path)))
    days(4, changed).to_zarr3(store, append_dim="time")
    assert [key for key in store.keys if key.startswith("lsm/")]
    for start, values in ((2, mask), (4, changed)):
        days(start, values).to_zarr(oracle, append_dim="time")
    xr.testing.assert_identical(
        xr.open_dataset(path, engine="zarr3").load(), xr.open_dataset(oracle, engine="zarr").load()
    )


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
    addition.to_zarr3(path, append_dim="time", allow_repeated_index=True)  # a new call appends again
    assert xr.open_dataset(path, engine="zarr3").sizes["time"] == 11


@pytest.mark.invalid_store  # the broken record stays
def test_unreadable_pending_record_is_a_clear_error(tmp_path: Path) -> None:
    path = _template(tmp_path)
    (path / PENDING_KEY).write_text("{not json")
    with pytest.raises(zarr3_backend.errors.MetadataError, match="(?i)pending-write record.*delete it"):
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
        _addition().to_zarr3(
            FailingStore(make_store(str(path)), fail_at=probe.keys.index(PENDING_KEY) + 2), append_dim="time"
        )
    later = _addition().assign_coords(time=np.arange(8, 11))
    later.to_zarr3(path, append_dim="time")
    np.testing.assert_array_equal(xr.open_dataset(path, engine="zarr3").time, np.arange(11))
    np.testing.assert_array_equal(
        xr.open_dataset(path, engine="zarr", consolidated=False).time, np.arange(11)
    )
    assert not (path / PENDING_KEY).exists()


def test_datatree_new_variables_and_groups_are_all_or_nothing_at_every_write(tmp_path: Path) -> None:
    extra = xr.Dataset({"rain": (("time", "x"), np.ones((5, 4)))}, coords={"time": np.arange(5)}).chunk(
        {"time": 2}
    )
    tree = xr.DataTree.from_dict(
        {
            "/": extra,
            "/child": xr.Dataset({"snow": (("step", "x"), np.zeros((5, 4)))}).chunk({"step": 2}),
            "/fresh": xr.Dataset({"z": ("y", np.arange(3.0))}),
        }
    )
    _run_with_faults(tmp_path, lambda store: tree.to_zarr3(store, mode="a"))


def _rows(start: int, n: int) -> xr.Dataset:
    """``n`` rows from time ``start`` on, each row's values equal to its time (so any misplaced row shows)."""
    time = np.arange(start, start + n)
    return xr.Dataset(
        {
            "t2m": (("time", "x"), np.repeat(time[:, None], 4, axis=1).astype(float)),
            "lat": ("x", np.linspace(0, 3, 4)),
        },
        coords={"time": time},
    ).chunk({"time": 1})


def _expected(*parts: xr.Dataset) -> xr.Dataset:
    return xr.concat([_base().drop_attrs(), *(p.compute() for p in parts)], dim="time", data_vars="minimal")


def _assert_rows(path: Path, expected: xr.Dataset) -> None:
    for engine, consolidated in (("zarr3", None), ("zarr3", False), ("zarr", False)):
        got = xr.open_dataset(path, engine=engine, consolidated=consolidated).load()
        np.testing.assert_array_equal(
            got.time, expected.time, err_msg=f"{engine}, consolidated={consolidated}"
        )
        np.testing.assert_array_equal(got.t2m, expected.t2m, err_msg=f"{engine}, consolidated={consolidated}")


@pytest.mark.parametrize("order", ["together", "in_call_order", "reversed"])
def test_deferred_appends_keep_all_their_rows_in_call_order(tmp_path: Path, order: str) -> None:
    import dask

    first, second = _rows(5, 2), _rows(7, 3)  # they share the shard of rows 6..7
    written = {}
    for engine in ("zarr3", "zarr"):  # engine="zarr" is the oracle
        path = tmp_path / f"{engine}.zarr"
        encoding = {"t2m": {"chunks": (1, 4), "shards": (2, 4)}, "time": {"chunks": (2,)}}
        if engine == "zarr3":
            _base().to_zarr3(path, encoding=encoding)
            d1 = first.to_zarr3(path, append_dim="time", compute=False)
            d2 = second.to_zarr3(path, append_dim="time", compute=False)
            # the rows are reserved at once, as engine="zarr" does: the arrays have grown already
            assert xr.open_dataset(path, engine="zarr3").sizes["time"] == 10
        else:
            _base().to_zarr(
                path, zarr_format=3, encoding={"t2m": {"chunks": (1, 4)}, "time": {"chunks": (2,)}}
            )
            d1 = first.to_zarr(path, append_dim="time", compute=False)
            d2 = second.to_zarr(path, append_dim="time", compute=False)
        if order == "together":
            dask.compute(d1, d2)
        else:
            for delayed in (d1, d2) if order == "in_call_order" else (d2, d1):
                delayed.compute()
        written[engine] = xr.open_dataset(path, engine=engine).load()
    _assert_rows(tmp_path / "zarr3.zarr", _expected(first, second))
    np.testing.assert_array_equal(written["zarr3"].t2m, written["zarr"].t2m)
    np.testing.assert_array_equal(written["zarr3"].time, written["zarr"].time)


def test_deferred_and_immediate_appends_mix(tmp_path: Path) -> None:
    path = _template(tmp_path)
    deferred = _rows(5, 3).to_zarr3(path, append_dim="time", compute=False)
    _rows(8, 1).to_zarr3(path, append_dim="time")  # plans after the reserved rows
    deferred.compute()
    _assert_rows(path, _expected(_rows(5, 3), _rows(8, 1)))


def test_appending_threads_give_every_row(tmp_path: Path) -> None:
    path = _template(tmp_path)
    parts = [
        _rows(5 + 2 * i, 2) for i in range(4)
    ]  # every part shares no shard, but all plan against one store
    errors: list[BaseException] = []

    def append(part: xr.Dataset) -> None:
        try:
            part.to_zarr3(path, append_dim="time")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(part,)) for part in parts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    got = xr.open_dataset(path, engine="zarr3").load().sortby("time")
    expected = _expected(*parts)
    np.testing.assert_array_equal(got.time, expected.time)
    np.testing.assert_array_equal(got.t2m, expected.t2m)  # each row in the place of its time


class HookStore(FailingStore):
    """A second writer's view of the store (its own lock): ``hook`` runs once, at the first metadata read after a write."""

    def __init__(self, inner: Store, hook) -> None:  # type: ignore[no-untyped-def]
        super().__init__(inner)
        self.hook = hook

    @property
    def atomic_create(self) -> bool:
        return False  # no lease: the writer in ``hook`` does not wait for this one

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        if self.hook is not None and self.writes and any(key.endswith("zarr.json") for key, _ in requests):
            hook, self.hook = self.hook, None
            hook()
        return self.inner.get_many_versioned(requests)


def test_an_append_that_lost_a_race_is_refused_and_keeps_the_winners_rows(tmp_path: Path) -> None:
    path = _template(tmp_path)
    winner, loser = _rows(5, 3), _rows(100, 3)
    store = HookStore(make_store(str(path)), lambda: winner.to_zarr3(path, append_dim="time"))
    with pytest.raises(zarr3_backend.errors.ConcurrentWriteError, match="another writer changed .*lock="):
        # the winner commits between the loser's data and its commit: the loser's lock= is not the winner's
        loser.to_zarr3(store, append_dim="time", lock=threading.Lock())
    _assert_rows(path, _expected(winner))
    assert not (path / PENDING_KEY).exists()


def test_a_failed_append_keeps_rows_another_writer_committed_meanwhile(tmp_path: Path) -> None:
    import dask
    import dask.array as da

    path = _template(tmp_path)
    other = _rows(5, 3).compute()  # in memory: written without a dask computation of its own
    calls = []

    def fail_after_the_other_writer(block: np.ndarray) -> np.ndarray:
        if not calls:
            calls.append(1)
            other.to_zarr3(path, append_dim="time")  # commits rows 5..7 while this write runs
        raise RuntimeError("source failed")

    data = da.ones((3, 4), chunks=(3, 4)).map_blocks(
        fail_after_the_other_writer, dtype=float, meta=np.array((), float)
    )
    failing = _rows(5, 3).assign(t2m=(("time", "x"), data))
    with dask.config.set(scheduler="synchronous"), pytest.raises(RuntimeError, match="source failed"):
        failing.to_zarr3(  # a store and a lock of its own: another "process", taking no lease
            HookStore(make_store(str(path)), None), append_dim="time", lock=threading.Lock()
        )
    _assert_rows(path, _expected(other))  # its roll-back did not clear the other writer's rows


def test_a_failed_append_after_a_deferred_one_resets_only_its_own_rows(tmp_path: Path) -> None:
    import dask.array as da

    path = _template(tmp_path)  # t2m shards hold 2 rows: rows 7..8 of the two appends below share one
    reserved = _rows(5, 2).to_zarr3(path, append_dim="time", compute=False)
    reserved.compute()
    keys = _keys(path)

    def explode(block: np.ndarray, block_info: dict | None = None) -> np.ndarray:
        if block_info and block_info[None]["chunk-location"][0] == 1:
            raise RuntimeError("source failed")
        return block

    broken = _rows(7, 3).assign(
        t2m=(("time", "x"), da.map_blocks(explode, da.ones((3, 4), chunks=(1, 4)), dtype=float))
    )
    with pytest.raises(RuntimeError, match="source failed"):
        broken.to_zarr3(path, append_dim="time")
    _assert_rows(path, _expected(_rows(5, 2)))
    assert _keys(path) == keys


def test_rows_reserved_and_not_written_are_never_silent(tmp_path: Path) -> None:
    from zarr3_backend.coordination.reservations import APPENDING, HINT
    from zarr3_backend.coordination.unfinished import UnfinishedWriteWarning

    path = _template(tmp_path)
    delayed = _rows(5, 3).to_zarr3(path, append_dim="time", compute=False)
    with pytest.warns(
        UnfinishedWriteWarning, match=r"rows 5\.\.7 of 'time'.*not written yet.*compute the delayed"
    ) as caught:
        assert HINT not in xr.open_dataset(path, engine="zarr3").attrs
    assert caught[0].filename == __file__  # the warning names the user's line
    assert HINT in xr.open_dataset(path, engine="zarr").attrs  # engine="zarr" shows it
    assert [p.severity for p in validate_store(path) if p.key == APPENDING] == ["warning"]
    delayed.compute()
    assert not (path / APPENDING).exists()
    assert HINT not in xr.open_dataset(path, engine="zarr").attrs
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnfinishedWriteWarning)
        _assert_rows(path, _expected(_rows(5, 3)))


@pytest.mark.parametrize("fail_at", ["reserving", "computing"])
def test_a_failed_deferred_append_stays_reported(tmp_path: Path, fail_at: str) -> None:
    import dask.array as da

    from zarr3_backend.coordination.reservations import APPENDING
    from zarr3_backend.coordination.unfinished import UnfinishedWriteWarning

    path = _template(tmp_path)
    keys = _keys(path)

    def explode(block: np.ndarray) -> np.ndarray:
        raise RuntimeError("source failed")

    broken = _rows(5, 3).assign(
        t2m=(("time", "x"), da.ones((3, 4), chunks=(1, 4)).map_blocks(explode, meta=np.array((), float)))
    )
    if (
        fail_at == "reserving"
    ):  # the pending record, just after the reservation is listed: nothing is published
        shutil.copytree(path, tmp_path / "probe.zarr")
        probe = FailingStore(make_store(str(tmp_path / "probe.zarr")))
        broken.to_zarr3(probe, append_dim="time", compute=False)
        assert probe.keys[probe.keys.index(APPENDING) + 1] == PENDING_KEY
        with pytest.raises(InjectedFault):
            broken.to_zarr3(
                FailingStore(make_store(str(path)), fail_at=probe.keys.index(PENDING_KEY)),
                append_dim="time",
                compute=False,
            )
        assert _keys(path) == keys  # rolled back, reservation taken off
        _assert_rows(path, _expected())
        return
    delayed = broken.to_zarr3(path, append_dim="time", compute=False)
    with pytest.raises(RuntimeError, match="source failed"):
        delayed.compute()
    with pytest.warns(
        UnfinishedWriteWarning, match=r"rows 5\.\.7 of 'time'.*region=\{'time': slice\(5, 8\)\}"
    ):
        xr.open_dataset(path, engine="zarr3")


@pytest.mark.parametrize("kind", ["one lock", "a lock per key"])
def test_appenders_with_separate_stores_sharing_a_lock_give_every_row(tmp_path: Path, kind: str) -> None:
    path = _template(tmp_path)
    shared = threading.Lock()
    locks: dict[str, threading.Lock] = {}
    guard = threading.Lock()

    def per_key(key: str) -> threading.Lock:
        with guard:
            return locks.setdefault(key, threading.Lock())

    lock = shared if kind == "one lock" else per_key
    parts = [_rows(5 + 3 * i, 3) for i in range(3)]  # 3 rows each: neighbours share a shard
    errors: list[BaseException] = []

    def append(part: xr.Dataset) -> None:
        try:  # each its own store object, as in another process: only the lock given serialises them
            part.to_zarr3(FailingStore(make_store(str(path))), append_dim="time", lock=lock)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(part,)) for part in parts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and not any(thread.is_alive() for thread in threads)
    got = xr.open_dataset(path, engine="zarr3").load().sortby("time")
    expected = _expected(*parts)
    np.testing.assert_array_equal(got.time, expected.time)
    np.testing.assert_array_equal(got.t2m, expected.t2m)
    if kind == "a lock per key":
        assert PENDING_KEY in locks


def _append_in_a_process(path: str, start: int, count: int) -> None:
    """Run in a spawned process: append ``count`` rows from ``start`` with no ``lock=``."""
    import zarr3_backend  # noqa: F401  (registers to_zarr3 in the new process)

    _rows(start, count).to_zarr3(path, append_dim="time")


def test_appending_processes_without_a_lock_give_every_row(tmp_path: Path) -> None:
    """The store's lease (created atomically) serialises appends from processes that share nothing."""
    import concurrent.futures
    import multiprocessing

    from zarr3_backend.coordination.lease import LEASE_KEY

    path = _template(tmp_path)
    parts = [
        (5 + 3 * i, 3) for i in range(3)
    ]  # 3 rows each: neighbours share a shard, all plan from one length
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(len(parts), mp_context=context) as pool:
        list(pool.map(_append_in_a_process, [str(path)] * len(parts), *zip(*parts)))
    got = xr.open_dataset(path, engine="zarr3").load().sortby("time")
    expected = _expected(*(_rows(start, count) for start, count in parts))
    np.testing.assert_array_equal(got.time, expected.time)
    np.testing.assert_array_equal(got.t2m, expected.t2m)  # each row in the place of its time
    assert not (path / LEASE_KEY).exists()


@pytest.mark.parametrize("holder", ["alive", "gone"])
def test_a_held_lease_is_waited_for_and_an_abandoned_one_taken_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holder: str
) -> None:
    import json
    import os
    import socket

    from zarr3_backend.coordination.lease import LEASE_KEY
    from zarr3_backend.errors import ConcurrentWriteError

    path = _template(tmp_path)
    pid = os.getppid() if holder == "alive" else dead_pid()
    (path / LEASE_KEY).write_text(
        json.dumps({"host": socket.gethostname(), "pid": pid, "since": 0, "id": "x"})
    )
    monkeypatch.setenv("ZARR3_BACKEND_LEASE_WAIT", "0.3")
    if holder == "alive":
        keys = _keys(path)
        with pytest.raises(
            ConcurrentWriteError, match=rf"held {LEASE_KEY} .*process {pid} on .*delete {LEASE_KEY}"
        ):
            _rows(5, 2).to_zarr3(path, append_dim="time")
        assert _keys(path) == keys  # nothing of the write was done
        _assert_rows(path, _expected())
        return
    _rows(5, 2).to_zarr3(path, append_dim="time")  # its writer is gone: the lease is taken over
    _assert_rows(path, _expected(_rows(5, 2)))
    assert not (path / LEASE_KEY).exists()
