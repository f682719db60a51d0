"""Array: metadata + store + codec chain; numpy-like reads and writes.

Reads plan at the granularity of the chain's read unit (inner chunks for
sharded arrays) and group the pieces by stored chunk, one sans-I/O read plan
each; `reads` fetches and decodes them, batched
with other arrays' reads, straight into one output array.
Writes plan per stored chunk: complete chunks are encoded without reading,
partial ones are read, merged and rewritten; chunks that end up all fill
value are deleted instead of stored. An array builds its codec chain on
first use and its read unit and read-ahead on first read, so a write never
builds the read machinery.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast, overload

import numpy as np
import numpy.typing as npt

from ..codecs.base import ChunkSpec
from ..codecs.chain import CodecChain, array_chain
from ..codecs.read_plan import ReadPlan, decode_chunk
from ..core.buffers import Value, one_buffer
from ..core.dtypes import Scalar, is_fill
from ..core.indexing import ChunkSelection, DimGrid, Selection, SelectionLike, plan_selection
from ..core.metadata import ArrayMetadata, encode_metadata, metadata_key
from ..errors import ArgumentError, ReadOnlyError, Zarr3Error, with_location
from ..runtime import memory_limit
from ..runtime.memory_limit import check_allocation, out_of_memory
from ..store.base import Store, plain_values
from ..store.storage_transformers import apply_storage_transformers
from .attributes import Attributes
from .consolidation import Change, refresh_consolidated
from .oindex import OrthogonalIndexer
from .read_ahead import ReadAhead
from .read_windows import shard_windows, stored_chunk_count
from .reads import PlannedRead, ReadResult, read_context, read_many, splits_shards
from .shape_changes import resized
from .transcode import transcode_chunk
from .writes import ArraySource, is_array_source, write_from_source, write_value


class Array:
    """A Zarr v3 array in a store.

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/a", shape=(4, 4), dtype="int32", chunks=(2, 2))
    >>> a[1:3, 1:3] = 7
    >>> int(a[...].sum())
    28
    """

    def __init__(self, store: Store, path: str, metadata: ArrayMetadata, *, read_only: bool = False) -> None:
        self.store = store
        self.path = path
        self.metadata = metadata
        self.read_only = read_only or store.read_only
        self._spec_of: tuple[ArrayMetadata, ChunkSpec] | None = None  # the chunk spec of these metadata
        self._chunk_store = apply_storage_transformers(store, metadata.storage_transformers)
        self._index_cache: dict[str, Any] = {}

    @functools.cached_property
    def _chain(self) -> CodecChain:
        """The codec chain, built on first use: an array planned, viewed or unpickled builds none until it codes."""
        return array_chain(self.metadata, f"array {self.name!r} ({metadata_key(self.path)})")

    @functools.cached_property
    def _read_unit(self) -> tuple[int, ...] | None:
        """The shape of independently readable pieces of a chunk (``None``: only whole chunks), found on first read."""
        return self._chain.read_unit(self.chunk_spec)

    @functools.cached_property
    def _read_ahead(self) -> ReadAhead:
        """The read-ahead of whole-shard scans, built on the first read (writes never build it)."""
        return ReadAhead(self._chunk_store, math.prod(self.metadata.chunk_shape) * self.dtype.itemsize)

    def check_codecs(self) -> None:
        """Build the codec chain now, raising what building it raises (an unknown or unsafe codec).

        Opening an array calls this, so a chain it cannot read is refused at
        open, naming its ``zarr.json``; otherwise the chain is built on first use.
        """
        _ = self._chain

    def __reduce__(self) -> tuple[Any, ...]:
        return (Array, (self.store, self.path, self.metadata), {"read_only": self.read_only})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.read_only = state["read_only"]

    def __repr__(self) -> str:
        return (
            f"<zarr3_backend.Array {self.name!r} shape={self.shape} dtype={self.dtype} store={self.store!r}>"
        )

    # -- description -----------------------------------------------------
    @property
    def name(self) -> str:
        return "/" + self.path

    @property
    def shape(self) -> tuple[int, ...]:
        return self.metadata.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> np.dtype:
        return self.metadata.data_type.numpy

    @property
    def fill_value(self) -> Scalar:
        return self.metadata.fill_value

    @property
    def chunks(self) -> tuple[int, ...]:
        """The inner chunk shape: the unit of reading (the chunk shape when unsharded); see ``chunk_sizes``."""
        if self._read_unit is None and not self.metadata.chunk_grid.is_regular:
            raise ArgumentError(
                f"array {self.name!r} has a rectilinear chunk grid; read its Array.chunk_sizes"
            )
        return tuple(self._read_unit or self.metadata.chunk_shape)

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shard shape (the stored chunk shape) of a sharded array, else ``None`` (see ``chunks``)."""
        if self._read_unit is not None and not self.metadata.chunk_grid.is_regular:
            raise ArgumentError(f"array {self.name!r} has rectilinear shards; read its Array.chunk_sizes")
        return self.metadata.chunk_shape if self._read_unit is not None else None

    @property
    def sharded(self) -> bool:
        return self._read_unit is not None

    @property
    def chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """Per dimension, the lengths of the stored chunks (shards, when sharded) cut at the array's edge."""
        return self.metadata.chunk_grid.sizes(self.shape)

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        return self.metadata.dimension_names

    @property
    def attrs(self) -> Attributes:
        return Attributes(self)

    @property
    def codecs(self) -> CodecChain:
        return self._chain

    @property
    def chunk_spec(self) -> ChunkSpec:
        """Shape, data type and fill value of one stored chunk (a shard, when sharded); the largest, if rectilinear.

        The same object while the metadata stay the same (codecs cache what they derive from it).
        """
        if self._spec_of is None or self._spec_of[0] is not self.metadata:
            metadata = self.metadata
            self._spec_of = (
                metadata,
                ChunkSpec(metadata.chunk_shape, metadata.data_type, metadata.fill_value),
            )
        return self._spec_of[1]

    def chunk_spec_at(self, coords: Sequence[int]) -> ChunkSpec:
        """The spec of the stored chunk at grid ``coords`` (its declared shape)."""
        return self.chunk_spec.with_shape(self.metadata.chunk_grid.chunk_shape_at(coords))

    def chunk_key(self, coords: tuple[int, ...]) -> str:
        """The store key of the stored chunk (shard) at grid ``coords``."""
        key = self.metadata.chunk_key_encoding.encode_chunk_key(tuple(coords))
        return f"{self.path}/{key}" if self.path else key

    def write_metadata(self, metadata: ArrayMetadata) -> None:
        """Publish ``metadata`` (e.g. a grown shape) as this array's ``zarr.json``.

        Ancestors carrying consolidated metadata are patched to match.
        """
        self._check_writable()
        self.store.set(metadata_key(self.path), encode_metadata(metadata))
        self.metadata = metadata
        refresh_consolidated(self.store, [Change(self.path, metadata.to_json())])

    def replace_attributes(self, attributes: dict[str, Any]) -> None:
        """Replace all user attributes with one metadata write."""
        self.write_metadata(self.metadata.with_attributes(attributes))

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"array {self.name!r} is open read-only; open it with mode='r+' or 'a' to write"
            )

    # -- reading ---------------------------------------------------------
    def __getitem__(self, selection: SelectionLike) -> ReadResult:
        return self.get(selection)

    @property
    def oindex(self) -> OrthogonalIndexer:
        """Orthogonal indexing: integer and boolean arrays select along each axis independently."""
        return OrthogonalIndexer(self)

    def get(self, selection: SelectionLike = Ellipsis, *, orthogonal: bool = False) -> ReadResult:
        """Read a selection: ints, slices with steps, Ellipsis; with ``orthogonal=True`` also
        integer/boolean arrays on any axes, each applied independently (``a.oindex[...]``)."""
        return read_many([(self, selection, orthogonal)])[0]

    def planned_read(self, selection: SelectionLike, orthogonal: bool = False) -> PlannedRead:
        """``selection`` planned for a batched read (`read_many()`)."""
        plan, out, chunk_plans, count = self._read_plans(selection, orthogonal)
        store = self._read_ahead.store_for(
            plan, self.metadata.chunk_grid.dim_grids, self.chunk_key
        )  # a scan's chunk fetched ahead
        return PlannedRead(plan, out, store, chunk_plans, count)

    def _read_plans(
        self, selection: SelectionLike, orthogonal: bool
    ) -> tuple[Selection, np.ndarray, Iterator[tuple[str, ReadPlan]], int]:
        """The plan and output array for ``selection``, one read plan per stored chunk it touches (made
        as they are taken) and their number."""
        plan = plan_selection(selection, self.shape, self._read_grid, orthogonal=orthogonal, where=self.name)
        self.check_memory(plan.out_shape)
        with out_of_memory(f"array {self.name!r}: reading a selection of shape {plan.out_shape}"):
            out = np.empty(plan.out_shape, self.dtype)
        count = stored_chunk_count(plan, self._locate)
        return plan, out, self._chunk_plans(plan, splits_shards(self._chunk_store, count)), count

    def _locate(self, coords: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return self.metadata.chunk_grid.locate_inner(coords, self._read_unit)

    def _chunk_plans(self, plan: Selection, split: bool) -> Iterator[tuple[str, ReadPlan]]:
        for window in shard_windows(plan.chunks(), self._locate):
            for outer, reads in window.items():
                key = self.chunk_key(outer)
                yield (
                    key,
                    self._chain.plan_read(
                        self.chunk_spec_at(outer), reads, read_context(key, self._index_cache, split)
                    ),
                )

    @property
    def _read_grid(self) -> tuple[DimGrid, ...]:
        """The grid reads plan on: the inner chunks when sharded (always regular), else the chunk grid."""
        return self._read_unit or self.metadata.chunk_grid.dim_grids

    def check_memory(self, out_shape: tuple[int, ...] | None = None) -> None:
        """Raise `MemoryLimitError` before allocating what no read or write of this array
        could hold: a selection of ``out_shape``, one chunk (inner chunk, when sharded) or a shard index.

        The limit is this machine's physical memory (see `zarr3_backend.runtime.memory_limit`).
        """
        item, largest = self.dtype.itemsize, self.metadata.chunk_shape
        needs = (math.prod(out_shape or ()), 2 * math.prod(largest))  # an inner chunk lies inside its shard
        if max(needs) * max(item, 8) <= memory_limit.physical_memory():  # every call: no message built
            return
        where, unit = f"array {self.name!r}", self._read_unit
        if out_shape is not None:
            check_allocation(
                math.prod(out_shape) * item, f"{where}: a selection of shape {out_shape} ({self.dtype})"
            )
        field = (
            "sharding_indexed.configuration.chunk_shape" if unit else "chunk_grid.configuration.chunk_shape"
        )
        check_allocation(
            math.prod(unit or largest) * item,
            f"{where}: a chunk of shape {unit or largest} ({field}) of {self.dtype}",
        )
        if unit is not None:
            inner = math.prod(s // c for s, c in zip(largest, unit))
            check_allocation(
                16 * inner, f"{where}: the index of a shard of shape {largest} ({inner} inner chunks)"
            )

    # -- writing ---------------------------------------------------------
    def __setitem__(self, selection: SelectionLike, value: npt.ArrayLike | ArraySource) -> None:
        self.set(selection, value)

    def set(
        self,
        selection: SelectionLike,
        value: npt.ArrayLike | ArraySource,
        *,
        orthogonal: bool = False,
        write_empty_chunks: bool = False,
    ) -> None:
        """Write ``value`` (broadcast to the selection) into a selection (see `get()`).

        Chunks that end up entirely the fill value are deleted, unless
        ``write_empty_chunks`` asks to store them anyway. A ``value`` that is
        an array not in memory (another `Array`, a dask or zarr-python array:
        see `zarr3_backend.nodes.writes.ArraySource`) is read one stored chunk
        of this array at a time, never whole (see `zarr3_backend.copy_array`).
        """
        self._check_writable()
        plan = plan_selection(
            selection, self.shape, self.metadata.chunk_grid.dim_grids, orthogonal=orthogonal, where=self.name
        )
        self.check_memory()
        if is_array_source(value):
            write_from_source(self, plan, cast(ArraySource, value), write_empty_chunks)
        else:
            write_value(self, plan, cast(npt.ArrayLike, value), write_empty_chunks)

    def write_piece(
        self, piece: ChunkSelection, block: np.ndarray, existing: bytes | None, write_empty: bool
    ) -> None:
        """Write ``block`` (the value of ``piece``, one stored chunk's part of a selection) with one atomic ``set``.

        ``existing``: the stored chunk's bytes, which a partial ``piece`` merges into.
        """
        key = self.chunk_key(piece.coords)
        self._index_cache.pop(key, None)
        spec = self.chunk_spec_at(piece.coords)
        try:
            encoded = self._chain.update(existing, spec, piece, block)
        except Zarr3Error as exc:
            raise with_location(exc, key) from exc
        self._put(key, encoded, write_empty, spec)

    def copy_stored_chunk(self, piece: ChunkSelection, source: object, write_empty: bool) -> bool:
        """Write ``piece`` as ``source``'s stored chunk at the same place, re-encoded, if the layouts allow it
        (see `zarr3_backend.nodes.transcode`); ``False``, writing nothing, when they do not."""
        transcoded = transcode_chunk(self, source, piece)
        if transcoded is None:
            return False
        key = self.chunk_key(piece.coords)
        self._index_cache.pop(key, None)
        self._put(key, transcoded.value, write_empty, transcoded.spec)
        return True

    def update_chunk(
        self,
        coords: tuple[int, ...],
        pieces: Sequence[tuple[tuple[slice, ...], npt.ArrayLike]],
        *,
        write_empty_chunks: bool = False,
    ) -> None:
        """Write ``pieces`` into the stored chunk (shard) at ``coords``: one read of it, then one atomic write.

        Each ``(box, value)`` writes ``value`` (broadcast) into ``box``, slices
        of the whole stored chunk that may reach past the array's edge; later
        pieces overwrite earlier ones. Every piece goes through the codec
        chain's ``update``: a sharded array decodes and re-encodes only the
        inner chunks the boxes touch and keeps the other inner chunks' encoded
        bytes as stored. A chunk left all fill is deleted instead, unless
        ``write_empty_chunks``. Callers serialise concurrent updates of one
        chunk themselves (see `zarr3_backend.runtime.locks.KeyLocks`).

        >>> import zarr3_backend
        >>> a = zarr3_backend.create_array("memory://doc/update_chunk", shape=(6,), dtype="int8", chunks=(2,), shards=(4,))
        >>> a.update_chunk((1,), [((slice(0, 1),), 5), ((slice(2, 4),), 0)])  # the second box lies past the edge
        >>> a[:].tolist()
        [0, 0, 0, 0, 5, 0]
        """
        self._check_writable()
        self.check_memory()
        key = self.chunk_key(coords)
        spec = self.chunk_spec_at(coords)
        self._index_cache.pop(key, None)
        encoded: Value | None = self._chunk_store.get(key)
        try:
            for box, value in pieces:
                plan = plan_selection(box, spec.shape, spec.shape, where=self.name)
                data = np.broadcast_to(np.asarray(value, dtype=self.dtype), plan.out_shape)
                for piece in plan.chunks():
                    existing = None if encoded is None else one_buffer(encoded)
                    encoded = self._chain.update(
                        existing, spec, piece, data[(*piece.out_selection, Ellipsis)]
                    )
        except Zarr3Error as exc:
            raise with_location(exc, key) from exc
        self._put(key, encoded, write_empty_chunks, spec)

    def _put(self, key: str, encoded: Value | None, write_empty: bool, spec: ChunkSpec) -> None:
        """Store ``encoded`` at ``key``; ``None`` (all fill) deletes it, or stores a fill chunk with ``write_empty``."""
        if encoded is None and write_empty:
            encoded = self._chain.encode_pieces(np.full(spec.shape, spec.fill_value, dtype=spec.dtype), spec)
        if encoded is None:
            self._chunk_store.delete(key)
        else:
            self._chunk_store.set(key, encoded)

    def stored_bytes(self, coords: Sequence[tuple[int, ...]]) -> list[bytes | None]:
        """The stored chunks (shards) at grid ``coords``, undecoded (``None`` where absent): one batched read."""
        requests = [(self.chunk_key(c), None) for c in coords]
        return plain_values(self._chunk_store.get_many_versioned(requests)) if requests else []

    def read_chunk(self, coords: tuple[int, ...]) -> np.ndarray:
        """The whole stored chunk (a shard, when sharded) at grid ``coords``, decoded; fill value if absent."""
        key, spec = self.chunk_key(coords), self.chunk_spec_at(coords)
        self.check_memory(spec.shape)
        raw = self._chunk_store.get(key)
        if raw is None:
            return np.full(spec.shape, self.fill_value, dtype=self.dtype)
        return np.array(decode_chunk(self._chain, raw, spec, key))

    def store_chunk(
        self, coords: tuple[int, ...], chunk: np.ndarray, *, write_empty_chunks: bool = False
    ) -> None:
        """Encode and store one whole chunk (a shard, when sharded) with one atomic write.

        An all-fill chunk is deleted instead, unless ``write_empty_chunks``.
        """
        key = self.chunk_key(coords)
        self._index_cache.pop(key, None)
        if is_fill(chunk, self.fill_value) and not write_empty_chunks:
            self._chunk_store.delete(key)
        else:
            self._chunk_store.set(key, self._chain.encode_pieces(chunk, self.chunk_spec_at(coords)))

    # -- shape changes ---------------------------------------------------
    @overload
    def resize(self, shape: Iterable[int], /) -> None: ...
    @overload
    def resize(self, *shape: int) -> None: ...

    def resize(self, *shape: int | Iterable[int]) -> None:
        """Change the shape; data outside the new shape is dropped, and what a grow exposes reads as fill.

        Stored chunks wholly outside the new shape are deleted; chunks cut by
        the new edge keep only their in-bounds part (the rest is reset to the
        fill value). A grow resets what lies beyond the old shape along the
        grown axes (left there by an interrupted append), so it shows the
        fill value. Writes never reset beyond the edge themselves.
        """
        self._check_writable()
        sizes = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        new_shape = tuple(int(n) for n in cast("Iterable[int]", sizes))  # the overloads: one iterable or ints
        self.write_metadata(resized(self, self._chunk_store, new_shape))

    def nchunks_stored(self) -> int:
        """How many stored chunk (shard) values exist."""
        prefix = f"{self.path}/" if self.path else ""
        return sum(1 for key in self._chunk_store.list_prefix(prefix) if not key.endswith("zarr.json"))
