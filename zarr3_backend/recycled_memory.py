"""Large output maps kept for a moment after their last array is gone, for the next read of the same size.

With ``chunks={}`` each dask task reads one shard array (76 MB in the
benchmark), which dask reduces or copies into the result and drops. Each was
a fresh anonymous map, populated page by page (~18.5k faults), and its pages
went back to the kernel as soon as dask dropped it, so a reduction over many
shards (or loads one after another) paid that for every shard; on a VM that
reports freed memory to its host, touching fresh memory costs a fault on the
host as well. zarr-python's many small arrays come from malloc's heap, which
keeps freed memory.

So every map :func:`keep` is given stays registered. :func:`take` hands a
registered map of the asked size and kind to the next read, already
populated, once nothing references it any more: every array, view and
buffer export of a map holds a reference to the map object, so a reference
count showing only the registry's own means no array can see the memory.
A map taken is out of the registry until its new array exists and
:func:`keep` registers it again, so two reads never get one map. A timer
releases maps nothing has referenced for :data:`IDLE_SECONDS` (1-2 s after
their arrays are gone), and unreferenced maps beyond :data:`KEPT_BYTES` go
at once, oldest first. Not on dask.distributed workers, whose memory
manager counts kept memory as unmanaged; a forked child starts empty.
"""

from __future__ import annotations

import mmap
import sys
import threading
import time
from dataclasses import dataclass

from .executor import after_fork, on_dask_worker

#: Seconds a map nothing references stays kept; the sweep runs every half of it.
IDLE_SECONDS = 1.0
#: Unreferenced maps kept at most: a 759 MB ``chunks={}`` load's ten 76 MB shards fit.
KEPT_BYTES = 1 << 30
#: ``sys.getrefcount`` of a kept map nothing else references: the registry's entry and the call's argument.
_UNREFERENCED = 2


@dataclass
class _Kept:
    memory: mmap.mmap
    kind: str
    free_since: float | None = None  # when a sweep first saw nothing but the registry reference it


class _Registry:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kept: list[_Kept] = []
        self.timer: threading.Timer | None = None


_registry = _Registry()


def take(nbytes: int, kind: str) -> mmap.mmap | None:
    """A kept map of ``nbytes`` bytes and ``kind`` that nothing references, removed from the registry; else ``None``."""
    with _registry.lock:
        for position, kept in enumerate(_registry.kept):
            if kept.kind == kind and len(kept.memory) == nbytes and _unreferenced(kept):
                del _registry.kept[position]
                return kept.memory
    return None


def keep(memory: mmap.mmap, kind: str) -> None:
    """Register ``memory`` (already referenced by its array) for reuse once its arrays are gone.

    Does nothing on dask.distributed workers.
    """
    if on_dask_worker():
        return
    with _registry.lock:
        _registry.kept.append(_Kept(memory, kind))
        _trim(time.monotonic())
        if _registry.timer is None:
            _arm()


def kept_bytes() -> tuple[int, int]:
    """Bytes of kept maps: ``(all, unreferenced)``."""
    with _registry.lock:
        total = sum(len(kept.memory) for kept in _registry.kept)
        free = sum(len(kept.memory) for kept in _registry.kept if _unreferenced(kept))
    return total, free


def release_all() -> None:
    """Release every kept map nothing references now (those still in use stay registered)."""
    with _registry.lock:
        for kept in [kept for kept in _registry.kept if _unreferenced(kept)]:
            _release(kept)


def _unreferenced(kept: _Kept) -> bool:
    return sys.getrefcount(kept.memory) <= _UNREFERENCED


def _trim(now: float) -> None:
    """Release maps unreferenced for :data:`IDLE_SECONDS`, then the oldest unreferenced beyond :data:`KEPT_BYTES`."""
    free = []
    for kept in list(_registry.kept):
        if not _unreferenced(kept):
            kept.free_since = None
            continue
        if kept.free_since is None:
            kept.free_since = now
        if now - kept.free_since >= IDLE_SECONDS:
            _release(kept)
        else:
            free.append(kept)
    held = sum(len(kept.memory) for kept in free)
    for kept in sorted(free, key=lambda k: k.free_since or now):
        if held <= KEPT_BYTES:
            break
        held -= len(kept.memory)
        _release(kept)


def _release(kept: _Kept) -> None:
    _registry.kept.remove(kept)
    kept.memory.close()


def _arm() -> None:
    timer = threading.Timer(IDLE_SECONDS / 2, _sweep)
    timer.daemon = True
    _registry.timer = timer
    timer.start()


def _sweep() -> None:
    with _registry.lock:
        _registry.timer = None
        _trim(time.monotonic())
        if _registry.kept:
            _arm()


def _forget_after_fork() -> None:
    global _registry
    _registry = _Registry()


after_fork(_forget_after_fork)
