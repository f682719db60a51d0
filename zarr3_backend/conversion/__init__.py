"""``convert``: rewrite a Zarr hierarchy (any format the library reads) as sharded Zarr v3, on dask.

The steps, each safe to interrupt:

1. plan every node's metadata (:mod:`~zarr3_backend.conversion.plan`) and
   record the plan in DST (:mod:`~zarr3_backend.conversion.record`);
2. copy the data, one dask task per shard, each verified against the source
   (:mod:`~zarr3_backend.conversion.shards`);
3. write every node's ``zarr.json``, the root's last with the consolidated
   metadata of the hierarchy, then delete the record.

DST holds no ``zarr.json`` before step 3, so an unfinished DST cannot be
opened as if it were complete. Run again on an unfinished DST with the
same SRC and settings, a convert skips the shards recorded as verified and
finishes; with different ones, it refuses.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api import open as open_node
from ..core.metadata import GroupMetadata, NodeMetadata, encode_metadata, metadata_key
from ..dask.compute import check_reachable, compute_writes
from ..errors import ArgumentError, NodeExistsError, WriteError
from ..nodes.array import Array
from ..nodes.consolidation import consolidated_entry
from ..nodes.creation import CodecLike
from ..store import StoreLike, make_store
from ..store.base import Store
from .plan import PerArray, Plan, default_shards, describe_source, make_plan, past_the_extent
from .record import Record
from .shards import convert_graph, shard_copies

__all__ = ["ConvertSummary", "convert", "default_shards"]


@dataclass(frozen=True)
class ConvertSummary:
    """What a :func:`convert` call did: ``shards`` in DST, of which this call ``copied`` some (``nbytes``
    decoded bytes) and found ``skipped`` already verified by an interrupted earlier run."""

    arrays: int
    shards: int
    copied: int
    skipped: int
    nbytes: int
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
    :mod:`zarr3_backend.conversion.plan` for Zarr v2 sources), so a dataset reads
    the same from ``dst`` as from ``src``; ``dst`` gets consolidated metadata.
    The shards are written by one dask task each, on the active
    ``dask.distributed`` client if there is one, else on threads. ``src`` is
    only read.

    Parameters
    ----------
    src, dst : str, os.PathLike or Store
        Paths or fsspec URLs (see :func:`~zarr3_backend.store.make_store`).
    chunks, shards : tuple of int, or dict of array path to tuple of int, optional
        Inner chunk and shard shapes: one shape for every array with as many
        dimensions (others keep the default), or one per array path. Default:
        the source chunks, and :func:`default_shards` (~64-128 MiB slabs of
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

    Examples
    --------
    >>> import numpy as np, zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/convert/src", "x", shape=(100,), dtype="int32", chunks=(10,))
    >>> a[:] = np.arange(100)
    >>> zarr3_backend.convert("memory://doc/convert/src", "memory://doc/convert/dst", shards=(50,))
    ConvertSummary(arrays=1, shards=2, copied=2, skipped=0, nbytes=400)
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
    record = Record(target)
    done = _start(record, plan, overwrite)
    copies = [
        c
        for a in plan.arrays
        for c in shard_copies(a.source, Array(target, a.path, a.metadata), record, done)
    ]
    if copies:
        _check_readable(source_store)
        check_reachable(target)
        compute_writes(convert_graph(copies), progress, label="convert")
    _finish(target, plan)
    record.clear()
    total = sum(math.prod(a.metadata.chunk_grid.grid_shape(a.metadata.shape)) for a in plan.arrays)
    notes = tuple(note for a in plan.arrays if (note := past_the_extent(a)) is not None)
    return ConvertSummary(
        len(plan.arrays), total, len(copies), total - len(copies), sum(c.nbytes for c in copies), notes
    )


def _start(record: Record, plan: Plan, overwrite: bool) -> set[str]:
    """Refuse, clear or resume DST; returns the shards verified by an earlier run."""
    store = record.store
    if overwrite:
        store.delete_prefix("")
    recorded = record.plan()
    if recorded is None:
        if next(iter(store.list_prefix("")), None) is not None:
            raise NodeExistsError(
                f"{store!r} is not empty; convert writes only into an empty DST (pass overwrite=True "
                "to delete what is there)"
            )
        if record.start(plan.to_json()):
            return set()
        recorded = record.plan()  # another convert started meanwhile: join it if it has the same plan
    difference = plan.difference(recorded)
    if difference is not None:
        raise ArgumentError(
            f"{store!r} holds an unfinished convert with another plan ({difference}); run the same convert again "
            "(same SRC and settings) to finish it, or pass overwrite=True to start again"
        )
    return record.done()


def _finish(store: Store, plan: Plan) -> None:
    """Write every node's ``zarr.json``; the root's last, with the consolidated metadata if it is a group."""
    documents: dict[str, NodeMetadata] = {a.path: a.metadata for a in plan.arrays}
    documents.update({path: GroupMetadata(attributes=attributes) for path, attributes in plan.groups.items()})
    root = documents.pop("")
    store.set_many({metadata_key(path): encode_metadata(node) for path, node in documents.items()})
    if isinstance(root, GroupMetadata):
        root = root.with_consolidated(
            {p: consolidated_entry(n.to_json()) for p, n in sorted(documents.items())}
        )
    store.set(metadata_key(""), encode_metadata(root))


def _check_readable(store: Store) -> None:
    """Refuse a process-local SRC when the tasks run in other processes (they would read fill values)."""
    try:
        check_reachable(store)
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
