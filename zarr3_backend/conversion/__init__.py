"""``convert``: rewrite a Zarr hierarchy (any format the library reads) as sharded Zarr v3, on dask.

The steps, each safe to interrupt:

1. plan every node's metadata (`plan`) and
   record the plan in DST (`record`);
2. copy the data, one dask task per shard, each verified against the source
   (`shards`);
3. write every node's ``zarr.json``, the root's last with the consolidated
   metadata of the hierarchy, then delete the record.

DST holds no ``zarr.json`` before step 3, so an unfinished DST cannot be
opened as if it were complete. Run again on an unfinished DST with the
same SRC and settings, a convert checks the shards recorded as verified
(each still stored as recorded, its source region still holding the values
recorded), copies again those that are not, copies the others and finishes;
with different settings, it refuses. One convert runs into a DST at a time:
another is refused naming it. Step 3 also keeps the checksum of every shard
in DST (`zarr3_backend.coordination.converted`), which ``validate --deep`` checks.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api import open as open_node
from ..coordination.converted import Manifest, encode_manifest
from ..coordination.records import CONVERT_DONE_PREFIX, CONVERT_PREFIX, MANIFEST_KEY
from ..core.metadata import GroupMetadata, NodeMetadata, encode_metadata, metadata_key
from ..errors import ArgumentError, ConcurrentWriteError, MetadataError, NodeExistsError, WriteError
from ..nodes.array import Array
from ..nodes.consolidation import consolidated_entry
from ..nodes.creation import CodecLike
from ..store import StoreLike, make_store
from ..store.base import Store
from ..writes.executor import Executor, executor_for
from .plan import PerArray, Plan, default_shards, describe_source, make_plan, past_the_extent
from .progress_record import OVERWRITE_OPTION, Done, Record
from .shards import ShardCopy, ShardResume, shard_copies

__all__ = ["ConvertSummary", "convert", "default_shards"]


@dataclass(frozen=True)
class ConvertSummary:
    """What a `convert()` call did: ``shards`` in DST, of which this call ``copied`` some (``nbytes``
    decoded bytes) and found ``skipped`` already verified by an interrupted earlier run (and unchanged
    since, in DST and in SRC); ``recopied`` of the copied ones were recorded by that run but had changed."""

    arrays: int
    shards: int
    copied: int
    skipped: int
    nbytes: int
    recopied: int = 0
    #: Why some shards are longer than their array along a dimension (see ``plan.past_the_extent``).
    notes: tuple[str, ...] = field(default=(), repr=False)


def convert(
    src: StoreLike,
    dst: StoreLike,
    *,
    chunks: PerArray[Sequence[int]] = None,
    shards: PerArray[Sequence[int]] = None,
    codecs: PerArray[Sequence[CodecLike]] = None,
    overwrite: bool = False,
    progress: bool = False,
    storage_options: dict[str, Any] | None = None,
    dst_storage_options: dict[str, Any] | None = None,
) -> ConvertSummary:
    """Rewrite the hierarchy at ``src`` as sharded Zarr v3 at ``dst``, verifying every shard.

    Attributes, dimension names, fill values and data types are kept (see
    `zarr3_backend.conversion.plan` for Zarr v2 sources), so a dataset reads
    the same from ``dst`` as from ``src``; ``dst`` gets consolidated metadata.
    The shards are written by one dask task each, on the active
    ``dask.distributed`` client if there is one, else on threads. ``src`` is
    only read.

    Parameters
    ----------
    src, dst : str, os.PathLike or Store
        Paths or fsspec URLs (see `make_store()`).
    chunks, shards : tuple of int, or dict of array path to tuple of int, optional
        Inner chunk and shard shapes: one shape for every array with as many
        dimensions (others keep the default), or one per array path. Default:
        the source chunks, and `default_shards()` (~64-128 MiB slabs of
        the leading dimension). A shard holds whole inner chunks.
    codecs : list of codecs, or dict of array path to list, optional
        The inner chunks' codec chain (JSON objects or names, e.g.
        ``["bytes", {"name": "zstd", "configuration": {"level": 3}}, "crc32c"]``).
        Default: the source's own compressor and filters in v3 form, then
        ``crc32c`` (see `zarr3_backend.conversion.codecs.carried_codecs`).
    overwrite : bool, default False
        Delete whatever is at ``dst`` first (an unfinished convert included).
        Otherwise a ``dst`` holding anything but an unfinished convert of the
        same plan is refused.
    progress : bool, default False
        Print shards done out of the total, with the data rate.
    storage_options, dst_storage_options : dict, optional
        fsspec options of ``src`` and of ``dst``.

    Returns
    -------
    ConvertSummary

    Raises
    ------
    NodeExistsError
        ``dst`` holds data and ``overwrite`` is false.
    ArgumentError
        ``dst`` holds an unfinished convert with another plan, ``dst`` is
        ``src`` or inside it (or the reverse), or a setting names no array.
    ChecksumError
        A shard read back differs from its source region (nothing is marked
        done for it; run again to rewrite it).
    ConcurrentWriteError
        Another convert into ``dst`` is running (the message names it).
    MetadataError
        ``dst`` holds a record that is not a convert's (the message names it).

    Examples
    --------
    >>> import numpy as np, zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/convert/src", "x", shape=(100,), dtype="int32", chunks=(10,))
    >>> a[:] = np.arange(100)
    >>> zarr3_backend.convert("memory://doc/convert/src", "memory://doc/convert/dst", shards=(50,))
    ConvertSummary(arrays=1, shards=2, copied=2, skipped=0, nbytes=400, recopied=0)
    >>> b = zarr3_backend.open_array("memory://doc/convert/dst", "x")
    >>> b.chunks, b.shards, int(b[:].sum())
    ((10,), (50,), 4950)
    """
    _check_apart(src, dst)
    source_store = make_store(src, storage_options=storage_options, read_only=True)
    target = make_store(dst, storage_options=dst_storage_options)
    plan = make_plan(
        open_node(source_store),
        describe_source(src, source_store),
        chunks=chunks,
        shards=shards,
        codecs=codecs,
    )
    record = Record.new_run(target)
    done = _start(record, plan, overwrite)
    try:
        tasks = [
            task
            for a in plan.arrays
            for task in shard_copies(a.source, Array(target, a.path, a.metadata), record, done)
        ]
        if tasks:
            executor = executor_for([])  # the data is read by the tasks: the default executor (dask)
            _check_readable(executor, source_store)
            executor.check_reachable(target)
            executor.run_tasks(tasks, progress=progress, label="convert")
        entries = record.done()
        manifest = _manifest(plan, tasks, entries)
        _finish(target, plan, manifest)
        record.clear()
    finally:
        record.release()
    copied = [t for t in tasks if (e := entries.get(_copy(t).key)) is not None and e.run == record.run]
    total = sum(math.prod(a.metadata.chunk_grid.grid_shape(a.metadata.shape)) for a in plan.arrays)
    notes = tuple(note for a in plan.arrays if (note := past_the_extent(a)) is not None)
    return ConvertSummary(
        len(plan.arrays),
        total,
        len(copied),
        total - len(copied),
        sum(_copy(t).nbytes for t in copied),
        sum(isinstance(t, ShardResume) for t in copied),
        notes,
    )


def _copy(task: ShardCopy | ShardResume) -> ShardCopy:
    return task.copy if isinstance(task, ShardResume) else task


def _manifest(plan: Plan, tasks: list[ShardCopy | ShardResume], entries: dict[str, Done | None]) -> Manifest:
    """The checksum of every shard by array path, from the record; every shard must be recorded by now."""
    manifest: Manifest = {a.path: {} for a in plan.arrays}
    for task in tasks:
        copy = _copy(task)
        entry = entries.get(copy.key)
        if entry is None:
            raise WriteError(
                f"{copy.key}: no verified record of this shard after its task finished (something deleted "
                f"{CONVERT_DONE_PREFIX}{copy.key} meanwhile); run the convert again"
            )
        manifest[copy.target.path][copy.key] = entry.checksum
    return manifest


def _start(record: Record, plan: Plan, overwrite: bool) -> dict[str, Done | None]:
    """Refuse, clear or resume DST; returns the entries of the shards recorded by an earlier run."""
    store = record.store
    if overwrite:
        try:
            running = record.running()
        except MetadataError:
            running = None  # a broken mark is deleted with everything else
        if running is not None:
            raise ConcurrentWriteError(
                f"{store!r}: a zarr3 convert into this DST is running ({running}); overwrite refused, "
                "nothing was deleted"
            )
        store.delete_prefix("")
    record.acquire()
    try:
        recorded = record.plan()
        if recorded is None:
            if any(not key.startswith(CONVERT_PREFIX) for key in store.list_prefix("")):
                raise NodeExistsError(
                    f"{store!r} is not empty; convert writes only into an empty DST (pass "
                    f"{OVERWRITE_OPTION.get()} to delete what is there)"
                )
            if record.start(plan.to_json()):
                return {}
            recorded = record.plan()
        difference = plan.difference(recorded)
        if difference is not None:
            raise ArgumentError(
                f"{store!r} holds an unfinished convert with another plan ({difference}); run the same convert "
                f"again (same SRC and settings) to finish it, or pass {OVERWRITE_OPTION.get()} to start again"
            )
        return record.done()
    except BaseException:
        record.release()
        raise


def _finish(store: Store, plan: Plan, manifest: Manifest) -> None:
    """Write the manifest, then every node's ``zarr.json``; the root's last, with consolidated metadata if a group."""
    store.set(MANIFEST_KEY, encode_manifest(manifest))
    documents: dict[str, NodeMetadata] = {a.path: a.metadata for a in plan.arrays}
    documents.update({path: GroupMetadata(attributes=attributes) for path, attributes in plan.groups.items()})
    root = documents.pop("")
    store.set_many({metadata_key(path): encode_metadata(node) for path, node in documents.items()})
    if isinstance(root, GroupMetadata):
        root = root.with_consolidated(
            {p: consolidated_entry(n.to_json()) for p, n in sorted(documents.items())}
        )
    store.set(metadata_key(""), encode_metadata(root))


def _check_readable(executor: Executor, store: Store) -> None:
    """Refuse a process-local SRC when the tasks run in other processes (they would read fill values)."""
    try:
        executor.check_reachable(store)
    except WriteError as exc:
        raise ArgumentError(
            f"SRC {store!r} lives in this process's memory, which the dask workers (other processes) "
            "cannot read; convert from a path or an object store instead"
        ) from exc


def _check_apart(src: StoreLike, dst: StoreLike) -> None:
    """Refuse a DST that is SRC, or inside it, or contains it (an overwrite would delete the source)."""
    if not isinstance(src, str | os.PathLike) or not isinstance(dst, str | os.PathLike):
        return
    a, b = (
        os.path.realpath(p) if "://" not in p else p.rstrip("/") for p in (os.fspath(src), os.fspath(dst))
    )
    if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
        raise ArgumentError(
            f"SRC {os.fspath(src)!r} and DST {os.fspath(dst)!r} overlap; convert into another location"
        )
