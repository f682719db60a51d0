"""A ``to_zarr3`` write as plain data: the options every group is planned with, and the plan they give.

``zarr3_backend.xarray.write.planner`` makes a `WritePlan` (one per group, combined with
`WritePlan.then()`); `zarr3_backend.writes.run` runs it. The plan holds the variables
to write and where (`DataWrite`), the ``zarr.json`` documents to
publish, and the arrays an append grows or the call creates (what a failed
``mode="a"`` write rolls back).

>>> first = WritePlan(documents={"": {"node_type": "group"}, "g": {"node_type": "group"}}, defaults=frozenset({"g"}))
>>> later = WritePlan(documents={"g": {"node_type": "group", "attributes": {"a": 1}}})
>>> first.then(later).documents["g"], first.then(later).defaults
({'node_type': 'group', 'attributes': {'a': 1}}, frozenset())
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..api import WriteMode
from ..nodes.array import Array

if TYPE_CHECKING:  # the plan holds xarray's variables; the write layer never calls xarray
    import xarray as xr

Shape = tuple[int, ...]
Region = Mapping[Hashable, slice | Literal["auto"]] | Literal["auto"] | None  # to_zarr3's region=, unchecked


@dataclass(frozen=True)
class WriteOptions:
    """The ``to_zarr3`` arguments that shape every group's plan (``mode`` already checked)."""

    mode: WriteMode
    append_dim: Hashable | None = None
    region: Region = None
    write_empty_chunks: bool | None = None
    inherited_coords: bool = False
    repeated_index: bool = False
    replaces: bool = (
        False  # mode="w" over a group that holds something: it is deleted before the data is written
    )


@dataclass(frozen=True)
class DataWrite:
    """Write ``variable`` (CF-encoded, in the array's dimension order) into ``array`` at ``origin``.

    ``fits``: for dask-backed packed values, one bool per block, computed as
    each block is checked (`packed.check_packed`); ``gated``: the write goes
    over stored values, so no shard of the whole write may be written before
    every ``fits`` of it is computed.
    """

    name: str
    array: Array
    origin: Shape
    variable: xr.Variable
    write_empty: bool
    fits: Any = None  # a dask array (dask is optional here)
    gated: bool = False


@dataclass(frozen=True)
class WritePlan:
    """Everything one ``to_zarr3`` call writes: data, then the metadata documents to publish.

    ``defaults`` are the paths whose document is only a missing ancestor's
    empty group; ``grown`` pairs arrays an append grows with their old shape;
    ``created`` are the paths of new arrays.
    """

    data: tuple[DataWrite, ...] = ()
    documents: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    defaults: frozenset[str] = frozenset()
    grown: tuple[tuple[Array, Shape], ...] = ()
    created: tuple[str, ...] = ()

    def then(self, later: WritePlan) -> WritePlan:
        """This plan followed by ``later``: its documents replace ours, except defaults for paths we have."""
        kept = {
            p: d for p, d in later.documents.items() if p not in later.defaults or p not in self.documents
        }
        return WritePlan(
            data=self.data + later.data,
            documents={**self.documents, **kept},
            defaults=frozenset((self.defaults - kept.keys()) | (later.defaults & kept.keys())),
            grown=self.grown + later.grown,
            created=self.created + later.created,
        )
