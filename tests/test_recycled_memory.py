"""Output maps serve the next output of their size once nothing references them, and never before."""

from __future__ import annotations

import gc
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr3_backend
from forking import in_forked_child
from zarr3_backend import output_memory, recycled_memory
from zarr3_backend.output_memory import MMAP_MIN_BYTES, empty_output

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux memory maps")
SIZE = MMAP_MIN_BYTES // 4  # float32 elements of the smallest mapped output


@pytest.fixture(autouse=True)
def nothing_kept(monkeypatch):
    monkeypatch.setattr(output_memory, "free_huge_blocks", lambda: 0)  # plain pages: the sizes stay exact
    gc.collect()  # an earlier test's output held in a reference cycle would be kept, and counted, once collected
    recycled_memory.release_all()
    yield
    recycled_memory.release_all()


def test_an_output_whose_arrays_are_gone_serves_the_next_of_its_size():
    first = empty_output((SIZE,), np.dtype("float32"))
    address = first.ctypes.data
    del first
    again = empty_output((SIZE // 2, 2), np.dtype("float32"))  # same bytes, another shape
    assert again.ctypes.data == address
    other = empty_output((SIZE * 2,), np.dtype("float32"))  # another size: its own map
    assert other.ctypes.data != address


@pytest.mark.parametrize(
    "hold",
    [
        lambda out: out,
        lambda out: out[10:20],  # numpy points a view at the map itself, not at ``out``
        lambda out: memoryview(out),
        lambda out: out.reshape(2, -1).T,
        lambda out: np.frombuffer(out.data, "u1"),
    ],
    ids=["array", "view", "memoryview", "transposed", "bytes-view"],
)
def test_memory_anything_still_sees_is_never_handed_out(hold):
    first = empty_output((SIZE,), np.dtype("float32"))
    first[...] = 7
    held = hold(first)
    seen = np.array(np.asarray(held))
    address = first.ctypes.data
    del first
    second = empty_output((SIZE,), np.dtype("float32"))
    assert second.ctypes.data != address
    second[...] = 9
    np.testing.assert_array_equal(np.asarray(held), seen)
    del held, second


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2]), st.booleans()), min_size=1, max_size=12))
def test_outputs_alive_at_once_never_share_memory(steps):
    alive: list[tuple[np.ndarray, int]] = []
    for value, (size, drop_oldest) in enumerate(steps):
        if drop_oldest and alive:
            alive.pop(0)
        out = empty_output((SIZE * size,), np.dtype("float32"))
        out[...] = value
        alive.append((out, value))
    for out, value in alive:  # each still holds what was written into it
        assert (out == value).all()
    del alive, out
    recycled_memory.release_all()


def test_threads_reading_at_once_never_get_one_map():
    first = [empty_output((SIZE,), np.dtype("float32")) for _ in range(4)]
    del first  # four unreferenced maps to race for
    failures: list[int] = []

    def read(marker: int) -> None:
        for _ in range(10):
            out = empty_output((SIZE,), np.dtype("float32"))
            out[...] = marker
            time.sleep(0.001)
            if not (out == marker).all():
                failures.append(marker)
            del out

    threads = [threading.Thread(target=read, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_unreferenced_maps_are_released_after_the_idle_time(monkeypatch):
    monkeypatch.setattr(recycled_memory, "IDLE_SECONDS", 0.05)
    out = empty_output((SIZE,), np.dtype("float32"))
    assert recycled_memory.kept_bytes() == (out.nbytes, 0)
    del out
    assert recycled_memory.kept_bytes() == (MMAP_MIN_BYTES, MMAP_MIN_BYTES)
    deadline = time.monotonic() + 10
    while recycled_memory.kept_bytes()[0] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert recycled_memory.kept_bytes() == (0, 0)


def test_maps_in_use_are_kept_however_long(monkeypatch):
    monkeypatch.setattr(recycled_memory, "IDLE_SECONDS", 0.02)
    out = empty_output((SIZE,), np.dtype("float32"))
    time.sleep(0.2)
    assert recycled_memory.kept_bytes() == (out.nbytes, 0)
    address = out.ctypes.data
    del out
    assert empty_output((SIZE,), np.dtype("float32")).ctypes.data == address


def test_unreferenced_maps_beyond_the_cap_go_at_once_oldest_first(monkeypatch):
    monkeypatch.setattr(recycled_memory, "KEPT_BYTES", 2 * MMAP_MIN_BYTES)
    outs = [empty_output((SIZE,), np.dtype("float32")) for _ in range(3)]
    addresses = [out.ctypes.data for out in outs]
    del outs
    newest = empty_output((SIZE * 2,), np.dtype("float32"))  # registering trims: 3 free maps, room for 2
    assert recycled_memory.kept_bytes() == (newest.nbytes + 2 * MMAP_MIN_BYTES, 2 * MMAP_MIN_BYTES)
    reused = [empty_output((SIZE,), np.dtype("float32")) for _ in range(2)]
    assert {out.ctypes.data for out in reused} == set(addresses[1:])


def test_nothing_is_kept_on_dask_workers(monkeypatch):
    monkeypatch.setattr(recycled_memory, "on_dask_worker", lambda: True)
    out = empty_output((SIZE,), np.dtype("float32"))
    assert recycled_memory.kept_bytes() == (0, 0)
    del out


def test_a_forked_child_starts_with_nothing_kept():
    out = empty_output((SIZE,), np.dtype("float32"))
    del out
    assert recycled_memory.kept_bytes()[1] == MMAP_MIN_BYTES
    assert in_forked_child(lambda: recycled_memory.kept_bytes() == (0, 0))


def test_a_read_after_the_last_one_was_dropped_lands_in_its_memory_with_its_own_values(tmp_path):
    data = np.arange(SIZE, dtype="float32").reshape(16, -1)
    array = zarr3_backend.create_array(str(tmp_path / "a"), shape=data.shape, dtype="float32", chunks=(4, data.shape[1]))
    array[...] = data
    first = np.asarray(array[...])
    address = first.ctypes.data
    del first
    array[:8] = -1
    second = np.asarray(array[...])
    assert second.ctypes.data == address
    np.testing.assert_array_equal(second[:8], -1)
    np.testing.assert_array_equal(second[8:], data[8:])
