"""The output of large reads: huge pages only while free 2 MiB blocks abound, else plain pages populated at once."""

from __future__ import annotations

import gc
import sys
import time

import mmap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import zarr3_backend
from forking import in_forked_child
from zarr3_backend import output_memory, recycled_memory
from zarr3_backend.output_memory import HUGE_PAGE_BYTES, MMAP_MIN_BYTES, empty_output, page_pieces

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux memory advice")


@pytest.fixture(autouse=True)
def fresh_maps():
    """Each test sees new maps, not those earlier tests' outputs left (reuse: ``test_recycled_memory.py``)."""
    gc.collect()  # an earlier test's output held in a reference cycle would be kept, and served, once collected
    recycled_memory.release_all()
    yield
    recycled_memory.release_all()


def _mapping(address: int) -> dict[str, str]:
    """The /proc/self/smaps fields of the mapping holding ``address``."""
    with open("/proc/self/smaps") as smaps:
        lines = smaps.read().splitlines()
    found: dict[str, str] | None = None
    for line in lines:
        head = line.split()[0]
        if "-" in head and ":" not in head:
            start, end = (int(x, 16) for x in head.split("-"))
            found = {} if start <= address < end else None
        elif found is not None:
            name, _, value = line.partition(":")
            found[name] = value.strip()
            if name == "VmFlags":
                return found
    raise AssertionError(f"no mapping holds {address:#x}")


def test_without_free_huge_blocks_large_outputs_are_populated_plain_pages(monkeypatch):
    monkeypatch.setattr(output_memory, "free_huge_blocks", lambda: 0)
    out = empty_output((MMAP_MIN_BYTES // 4 * 2,), np.dtype("float32"))
    fields = _mapping(out.ctypes.data)
    assert int(fields["Rss"].split()[0]) * 1024 >= out.nbytes  # faulted in before decoding writes a byte
    assert fields["AnonHugePages"].split()[0] == "0"  # no huge pages, hence no compaction stalls
    assert out.flags.writeable


@pytest.mark.parametrize("mode", ["always", "madvise", "never"])
def test_huge_pages_are_asked_for_only_for_large_outputs_while_free_blocks_cover_twice_them(monkeypatch, mode):
    monkeypatch.setattr(output_memory, "_thp_mode", lambda: mode)
    monkeypatch.setattr(output_memory, "free_memory_reported", lambda: False)
    nbytes = MMAP_MIN_BYTES * 2
    monkeypatch.setattr(output_memory, "free_huge_blocks", lambda: 2 * nbytes // HUGE_PAGE_BYTES - 1)
    assert not output_memory.huge_pages_free(nbytes)
    monkeypatch.setattr(output_memory, "free_huge_blocks", lambda: 2 * nbytes // HUGE_PAGE_BYTES)
    assert output_memory.huge_pages_free(nbytes) == (mode != "never")
    monkeypatch.setattr(output_memory, "HUGE_MIN_BYTES", nbytes + 1)  # smaller outputs: plain pages
    plain = empty_output((nbytes // 4,), np.dtype("float32"))
    assert "hg" not in _mapping(plain.ctypes.data)["VmFlags"].split()
    monkeypatch.setattr(output_memory, "HUGE_MIN_BYTES", nbytes)
    out = empty_output((nbytes // 4,), np.dtype("float32"))
    fields = _mapping(out.ctypes.data)
    assert ("hg" in fields["VmFlags"].split()) == (mode != "never")
    if mode != "never":
        assert out.ctypes.data % HUGE_PAGE_BYTES == 0  # huge pages need 2 MiB alignment
    out[...] = 1.5
    assert out.sum() == 1.5 * out.size


def test_no_huge_pages_in_a_vm_whose_host_takes_free_memory_back(monkeypatch):
    # the host takes back free 2 MiB blocks: huge pages would fault in through a host fault each
    monkeypatch.setattr(output_memory, "free_huge_blocks", lambda: 1 << 30)
    monkeypatch.setattr(output_memory, "_thp_mode", lambda: "madvise")
    monkeypatch.setattr(output_memory, "HUGE_MIN_BYTES", MMAP_MIN_BYTES)
    monkeypatch.setattr(output_memory, "free_memory_reported", lambda: True)
    assert not output_memory.huge_pages_free(MMAP_MIN_BYTES)
    out = empty_output((MMAP_MIN_BYTES // 4,), np.dtype("float32"))
    fields = _mapping(out.ctypes.data)
    assert "hg" not in fields["VmFlags"].split()
    assert int(fields["Rss"].split()[0]) * 1024 >= out.nbytes  # populated plain pages instead
    monkeypatch.setattr(output_memory, "free_memory_reported", lambda: False)
    assert output_memory.huge_pages_free(MMAP_MIN_BYTES)


def _virtio_device(root, name: str, device: str, features: str) -> None:
    (root / name).mkdir()
    (root / name / "device").write_text(device + "\n")
    (root / name / "features").write_text(features + "\n")


@pytest.mark.parametrize(
    ("device", "features", "reported"),
    [
        ("0x0005", "0110010" + "0" * 121, True),  # a balloon that negotiated free page reporting (bit 5)
        ("0x0005", "0110000" + "0" * 121, False),  # a balloon without it
        ("0x0001", "1100011" + "0" * 121, False),  # a network device: its bit 5 means something else
    ],
)
def test_free_page_reporting_is_read_from_the_virtio_balloons_feature_bits(tmp_path, device, features, reported):
    _virtio_device(tmp_path, "virtio0", "0x0002", "1" * 128)
    _virtio_device(tmp_path, "virtio1", device, features)
    (tmp_path / "virtio2").mkdir()  # a device whose files are unreadable is skipped
    assert output_memory.free_memory_reported.__wrapped__(str(tmp_path)) is reported
    assert output_memory.free_memory_reported.__wrapped__(str(tmp_path / "missing")) is False


@pytest.mark.parametrize(("huge", "background"), [(True, False), (True, True), (False, False), (False, True)])
def test_outputs_are_private_to_the_process(monkeypatch, huge, background):
    # ``mmap.mmap(-1, n)`` alone is MAP_SHARED: a forked child writing to its copy would write to ours
    monkeypatch.setattr(output_memory, "free_huge_blocks", lambda: 1 << 30 if huge else 0)
    monkeypatch.setattr(output_memory, "free_memory_reported", lambda: False)
    monkeypatch.setattr(output_memory, "_thp_mode", lambda: "madvise")
    monkeypatch.setattr(output_memory, "HUGE_MIN_BYTES", MMAP_MIN_BYTES)
    out = empty_output((MMAP_MIN_BYTES // 4 * 2,), np.dtype("float32"), background=background)
    out[...] = 1

    def child_writes() -> bool:
        out[...] = 2
        return bool((out == 2).all())

    assert in_forked_child(child_writes)
    assert (out == 1).all()


@pytest.mark.parametrize("always", [False, True])
@pytest.mark.parametrize("background", [False, True])
def test_populated_whatever_the_thp_setting(monkeypatch, always, background):
    monkeypatch.setattr(output_memory, "_thp_mode", lambda: "always" if always else "madvise")
    memory = output_memory.populated_memory(MMAP_MIN_BYTES, background=background)
    fields = _mapping(np.frombuffer(memory, "u1").ctypes.data)
    deadline = time.monotonic() + 30
    while background and int(fields["Rss"].split()[0]) * 1024 < MMAP_MIN_BYTES and time.monotonic() < deadline:
        time.sleep(0.02)  # the background populate may still run on another I/O thread
        fields = _mapping(np.frombuffer(memory, "u1").ctypes.data)
    assert int(fields["Rss"].split()[0]) * 1024 >= MMAP_MIN_BYTES
    assert ("nh" in fields["VmFlags"].split()) == always


def test_a_remote_reads_huge_page_output_is_populated_before_decoding_reaches_it(monkeypatch):
    # decoding would fault each huge page in, zeroing 2 MiB on the critical path; the requests' latency hides it
    monkeypatch.setattr(output_memory, "free_huge_blocks", lambda: 1 << 30)
    monkeypatch.setattr(output_memory, "free_memory_reported", lambda: False)
    monkeypatch.setattr(output_memory, "_thp_mode", lambda: "madvise")
    monkeypatch.setattr(output_memory, "HUGE_MIN_BYTES", MMAP_MIN_BYTES)
    out = empty_output((MMAP_MIN_BYTES // 4 * 2,), np.dtype("float32"), background=True)
    fields = _mapping(out.ctypes.data)
    assert "hg" in fields["VmFlags"].split()
    deadline = time.monotonic() + 30
    while int(fields["Rss"].split()[0]) * 1024 < out.nbytes and time.monotonic() < deadline:
        time.sleep(0.02)  # populated on an I/O thread; nothing here writes to it
        fields = _mapping(out.ctypes.data)
    assert int(fields["Rss"].split()[0]) * 1024 >= out.nbytes


def test_small_outputs_are_plain_numpy():
    out = empty_output((10,), np.dtype("float32"))
    assert out.base is None


def test_large_read_lands_in_the_output(tmp_path):
    data = np.arange(MMAP_MIN_BYTES // 4 * 2, dtype="float32").reshape(64, -1)
    a = zarr3_backend.create_array(str(tmp_path / "a"), shape=data.shape, dtype="float32", chunks=(16, data.shape[1] // 4))
    a[...] = data
    np.testing.assert_array_equal(zarr3_backend.open_array(str(tmp_path / "a"))[...], data)


@given(st.integers(1, 1 << 40), st.integers(1, 256))
def test_populated_pieces_cover_the_output_once_each_starting_on_a_page(nbytes, count):
    pieces = page_pieces(nbytes, count)
    assert 1 <= len(pieces) <= count
    assert pieces[0][0] == 0 and pieces[-1][1] == nbytes
    assert all(stop == start for (_, stop), (start, _) in zip(pieces, pieces[1:]))  # contiguous, no overlap
    assert all(start % mmap.PAGESIZE == 0 and stop > start for start, stop in pieces)
    sizes = [stop - start for start, stop in pieces]
    assert max(sizes) - min(sizes) <= 2 * mmap.PAGESIZE  # even work for the threads


@given(st.integers(0, 64), st.integers(1, 5 * output_memory.POPULATE_STEP_BYTES // mmap.PAGESIZE))
def test_populating_advises_the_piece_in_steps_that_cover_it_once(start_page, pages):
    calls = []

    class _Recorder:
        def madvise(self, address, length, advice):
            calls.append((address.value, length.value, advice))

    memory = mmap.mmap(-1, (start_page + pages) * mmap.PAGESIZE, flags=output_memory.PRIVATE)
    base = np.frombuffer(memory, "u1").ctypes.data
    piece = (start_page * mmap.PAGESIZE, (start_page + pages) * mmap.PAGESIZE)
    original = output_memory._libc
    output_memory._libc = lambda: _Recorder()  # not monkeypatch: hypothesis runs many examples per test
    try:
        output_memory._populate(memory, piece)
    finally:
        output_memory._libc = original
    assert all(advice == output_memory.MADV_POPULATE_WRITE for _, _, advice in calls)
    assert all(0 < length <= output_memory.POPULATE_STEP_BYTES for _, length, _ in calls)  # the map lock is let go between
    covered = [(address - base, address - base + length) for address, length, _ in calls]
    assert covered[0][0] == piece[0] and covered[-1][1] == piece[1]
    assert all(stop == start for (_, stop), (start, _) in zip(covered, covered[1:]))
