"""Memory for the output of large reads: huge pages when the kernel has them free, else plain pages populated at once.

Faulting a 759 MB output in on plain 4 KiB pages costs ~185k page faults;
populated up front (``MADV_POPULATE_WRITE``) that is ~0.25-0.3 s of kernel
time, and faulted in by the decoding threads as they write it costs about
twice that. The CPU threads populate one piece each, side by side, before
decoding starts: with THP ``never`` a 759 MB read took 0.51 s so, against
0.58-0.63 s populated by one thread (``MAP_POPULATE``) and 0.55-0.61 s
faulted in while decoding (tensorstore: 0.50 s). On 2 MiB
transparent huge pages it takes ~0.1 s and a few thousand faults, but
where the kernel must compact memory to find free 2 MiB blocks (THP
``defrag`` = ``madvise``, the common default, applies to memory that asks
for huge pages) a read stalls for up to seconds: measured here on a 759 MB
read, 1.65 s of system time against 0.36 s. So huge pages are asked for
only for outputs of 256 MiB and more (:data:`HUGE_MIN_BYTES`: smaller,
short-lived ones measured slower on them) and only while
``/proc/buddyinfo`` shows free 2 MiB blocks for twice the output, which
the kernel hands out without compacting, and not in a VM whose balloon
reports free memory to the host (:func:`free_memory_reported`): the host
takes back exactly the free blocks of 2 MiB and more, so there huge pages
fault in slowly a few idle seconds after other work (a 759 MB local read,
THP ``madvise``, 3 s idle before each: 1.21 s on huge pages, 1.60 s of it
system time, against 0.59 s on plain pages, 0.34 s; back to back 0.50-0.55 s
against 0.59 s), while plain pages come from smaller blocks, which the host
never takes. Otherwise the output is populated plain pages (huge pages
refused explicitly where THP is ``always``). Elsewhere than Linux: a plain
anonymous map. A map whose arrays are all gone serves the next output of
its size and kind for a second or two
(:mod:`~zarr3_backend.recycled_memory`), already populated. Reads from
remote stores have either kind populated on an I/O thread while their first
requests are in flight (``background``).
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import sys
from pathlib import Path

import numpy as np

from .executor import map_concurrently, submit_io, thread_count
from .recycled_memory import keep, take

#: Outputs from this size on get their own memory map; smaller ones are plain ``np.empty``.
MMAP_MIN_BYTES = 16 << 20
#: Outputs from this size on may get huge pages. A dask task's output (a shard, freed once copied
#: into the result) is usually smaller: on huge pages a 759 MB ``chunks={}`` load of 76 MB shards
#: took 2.2-2.4 s (system time ~2 s, zeroing pages) against 0.72-0.76 s on populated plain pages.
HUGE_MIN_BYTES = 256 << 20
#: The size of a transparent huge page (x86-64, arm64 with 4 KiB base pages).
HUGE_PAGE_BYTES = 2 << 20
MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)  # Linux 5.14+; Python names it from 3.13 on
#: Bytes populated per ``madvise`` call (see :func:`_populate`): ~0.3 ms of kernel time, a multiple of any page size.
POPULATE_STEP_BYTES = 1 << 20
#: Where Linux lists virtio devices: ``device`` holds the type (the balloon's is :data:`VIRTIO_BALLOON`), ``features``
#: the negotiated feature bits as a string of 0s and 1s, bit 0 first.
VIRTIO_DEVICES = "/sys/bus/virtio/devices"
VIRTIO_BALLOON = "0x0005"
VIRTIO_BALLOON_F_REPORTING = 5
#: Private memory: ``mmap.mmap(-1, n)`` alone is shared, which a forked child would write through to us.
PRIVATE = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
_HUGE_ORDER = 9  # a 2 MiB block is 2**9 pages of 4 KiB in /proc/buddyinfo


def empty_output(shape: tuple[int, ...], dtype: np.dtype, *, background: bool = False) -> np.ndarray:
    """An uninitialised array for read results (``background``: see :func:`populated_memory`)."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < MMAP_MIN_BYTES or dtype.hasobject:
        return np.empty(shape, dtype=dtype)
    memory, kind = _output_map(nbytes, background)
    offset = huge_page_offset(memory) if kind == "huge" else 0
    out = np.frombuffer(memory, dtype=dtype, count=nbytes // dtype.itemsize, offset=offset).reshape(shape)
    keep(memory, kind)
    return out


def _output_map(nbytes: int, background: bool) -> tuple[mmap.mmap, str]:
    """A map for an output of ``nbytes`` and its kind (``"huge"``/``"plain"``): a kept one if any, else a new one."""
    if nbytes >= HUGE_MIN_BYTES:
        memory = take(nbytes + HUGE_PAGE_BYTES, "huge")
        if memory is None and huge_pages_free(nbytes):
            memory = huge_page_memory(nbytes, background=background)
        if memory is not None:
            return memory, "huge"
    memory = take(nbytes, "plain")
    return (populated_memory(nbytes, background=background) if memory is None else memory), "plain"


def huge_pages_free(nbytes: int) -> bool:
    """Whether transparent huge pages are on, free 2 MiB blocks cover ``nbytes`` twice over, and the host keeps them."""
    if not sys.platform.startswith("linux") or _thp_mode() not in ("always", "madvise") or free_memory_reported():
        return False
    return free_huge_blocks() * HUGE_PAGE_BYTES >= 2 * nbytes


@functools.cache
def free_memory_reported(devices: str = VIRTIO_DEVICES) -> bool:
    """Whether this is a VM whose balloon reports free memory to the host (virtio ``VIRTIO_BALLOON_F_REPORTING``).

    The host then takes back free blocks of 2 MiB and more, the ones huge
    pages are made of, and faulting one in again costs a fault on the host too.
    """
    for device in Path(devices).glob("*"):
        try:
            balloon = (device / "device").read_text().strip() == VIRTIO_BALLOON
            features = (device / "features").read_text()
        except OSError:
            continue
        if balloon and features[VIRTIO_BALLOON_F_REPORTING : VIRTIO_BALLOON_F_REPORTING + 1] == "1":
            return True
    return False


def free_huge_blocks() -> int:
    """Free 2 MiB blocks the kernel could hand out now, from ``/proc/buddyinfo`` (0 if unreadable)."""
    try:
        with open("/proc/buddyinfo") as info:
            return count_huge_blocks(info.read())
    except OSError:
        return 0


def count_huge_blocks(buddyinfo: str) -> int:
    """2 MiB blocks in a ``/proc/buddyinfo`` text: each zone lists its free blocks of 2**0, 2**1, ... pages.

    >>> count_huge_blocks("Node 0, zone   Normal   7   4   4   6   2   4   4   2   3   2   5")  # 2 blocks of 2 MiB, 5 of 4 MiB
    12
    """
    blocks = 0
    for line in buddyinfo.splitlines():
        counts = line.split(",", 1)[-1].split()[2:]  # after "Node 0, zone Normal"
        for order, count in enumerate(counts):
            if order >= _HUGE_ORDER and count.isdigit():
                blocks += int(count) << (order - _HUGE_ORDER)  # a block of 2**k pages holds 2**(k - 9) huge pages
    return blocks


def huge_page_memory(nbytes: int, *, background: bool = False) -> mmap.mmap:
    """An anonymous map asking for huge pages, with room for ``nbytes`` from a 2 MiB boundary on (see :func:`huge_page_offset`).

    Its pages fault in as decoding writes them; with ``background`` (reads
    from remote stores) an I/O thread populates them while the first
    requests are in flight, as :func:`populated_memory` does.
    """
    memory = mmap.mmap(-1, nbytes + HUGE_PAGE_BYTES, flags=PRIVATE)
    memory.madvise(mmap.MADV_HUGEPAGE)
    if background:
        submit_io(_populate, memory, (0, len(memory)))
    return memory


def huge_page_offset(memory: mmap.mmap) -> int:
    """The offset of the first 2 MiB boundary in ``memory``."""
    return -ctypes.addressof(ctypes.c_char.from_buffer(memory)) % HUGE_PAGE_BYTES


def populated_memory(nbytes: int, *, background: bool = False) -> mmap.mmap:
    """Anonymous memory on plain 4 KiB pages, populated by the CPU threads side by side, one piece each.

    Where THP is ``always``, huge pages are refused explicitly
    (``MADV_NOHUGEPAGE``) before populating, so no fault waits on
    compaction. With ``background`` (reads from remote stores) an I/O thread
    populates while the first requests are in flight; pages that decoding
    reaches first simply fault in.
    """
    memory = mmap.mmap(-1, nbytes, flags=PRIVATE)
    if not sys.platform.startswith("linux"):
        return memory
    if _thp_mode() == "always":
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    if background:
        submit_io(_populate, memory, (0, nbytes))
    else:
        map_concurrently(functools.partial(_populate, memory), page_pieces(nbytes, thread_count()))
    return memory


def page_pieces(nbytes: int, count: int) -> list[tuple[int, int]]:
    """``(start, stop)`` byte ranges cutting ``nbytes`` into ``count`` pieces that start on page boundaries.

    >>> page_pieces(10 * mmap.PAGESIZE + 5, 2) == [(0, 5 * mmap.PAGESIZE), (5 * mmap.PAGESIZE, 10 * mmap.PAGESIZE + 5)]
    True
    """
    pages = -(-nbytes // mmap.PAGESIZE)
    bounds = [pages * i // count * mmap.PAGESIZE for i in range(count)] + [nbytes]
    return [(start, stop) for start, stop in zip(bounds, bounds[1:]) if stop > start]


def _populate(memory: mmap.mmap, piece: tuple[int, int]) -> None:
    """``MADV_POPULATE_WRITE`` on ``piece`` through ctypes, which (unlike ``mmap.madvise``) releases the GIL meanwhile.

    One call per :data:`POPULATE_STEP_BYTES`: the kernel holds the process's
    memory-map lock for the whole of a call, and every thread that maps
    memory meanwhile (any large allocation, the event loop's included) waits
    for it; populating 76 MB in one call held back a read's first requests
    by 23 ms. Kernels before 5.14 refuse the advice; pages then fault in as
    they are written.
    """
    start, stop = piece
    address = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    for step in range(start, stop, POPULATE_STEP_BYTES):
        length = min(POPULATE_STEP_BYTES, stop - step)
        _libc().madvise(ctypes.c_void_p(address + step), ctypes.c_size_t(length), MADV_POPULATE_WRITE)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None)


@functools.cache
def _thp_mode() -> str:
    """The bracketed choice of ``/sys/kernel/mm/transparent_hugepage/enabled`` ("never" if unreadable)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as setting:
            text = setting.read()
    except OSError:
        return "never"
    return text[text.index("[") + 1 : text.index("]")] if "[" in text else "never"
