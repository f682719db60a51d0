"""A write whose lazy data reads what the write replaces: read it first, or refuse before anything changes.

``mode="w"`` deletes the group before writing, and ``mode="a"``/``"r+"``
overwrite stored chunks while tasks may still read them. Before any change:

- lazy variables without dask (opened with ``chunks=None``) are read into
  memory (`load_lazy_variables`): the write holds them in memory anyway;
- a dask (or Cubed) variable whose graph reads a stored array where this write deletes
  or overwrites data raises `WriteError` (`check_self_reads`), naming the
  variables and the two fixes: ``.load()`` first, or write elsewhere and move;
- a ``mode="w"`` replacing a group that holds something also refuses a dask
  graph whose reads cannot be seen (`opaque`): a function of other code, an
  unknown array-like. Refused rather than written beside and swapped in:
  object stores have no rename, so a swap would copy the whole group.

The reads come from the dask graph or the Cubed plan (`graph_reads`);
stores are compared by `Store.location`, whatever their spelling. Appends
read stored rows freely: they write only new rows. See docs/guide/guarantees.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ...api import WriteMode
from ...errors import WriteError
from ...store.base import Store
from ...writes.plan import DataWrite, WritePlan

if TYPE_CHECKING:
    from .graph_reads import Box, GraphReads, StoredRead


def read_own_target_first(
    store: Store, path: str, mode: WriteMode, plan: WritePlan, *, replaces: bool = False
) -> WritePlan:
    """``plan`` ready to change the store: `check_self_reads`, then for ``mode="w"`` `load_lazy_variables`."""
    check_self_reads(store, path, mode, plan, replaces=replaces)
    return load_lazy_variables(plan) if mode == "w" else plan


def load_lazy_variables(plan: WritePlan) -> WritePlan:
    """``plan`` with every variable that is neither dask nor in memory read now, before the store changes."""
    data = tuple(
        replace(w, variable=w.variable.load()) if w.variable.chunks is None else w for w in plan.data
    )
    return replace(plan, data=data)


def check_self_reads(
    store: Store, path: str, mode: WriteMode, plan: WritePlan, *, replaces: bool = False
) -> None:
    """Raise `WriteError` if a dask variable of ``plan`` reads data this write deletes or overwrites.

    The stored arrays a graph holds are found without expanding it; only
    when one of them is overwritten (``mode="a"``, ``"r+"``) do the
    variable's blocks tell which rows it reads. A ``mode="w"`` that
    ``replaces`` a group holding something also refuses graphs whose reads
    cannot be seen (`opaque.first_opaque`): a function of other code or an
    unknown array-like, which may read the group once it is deleted.
    """
    lazy = [w for w in plan.data if w.variable.chunks is not None]
    if not lazy:
        return
    from dask.base import is_dask_collection

    from .graph_reads import GraphReads, plan_reads

    finder = GraphReads()
    target = _Target(mode, finder.where(store, path), _replaced(finder, plan))
    dask_data = [w for w in lazy if is_dask_collection(w.variable.data)]
    touching = [w for w in dask_data if any(map(target.meets, finder.held([w.variable.data])))]
    if mode != "w":  # what the blocks read, not the whole arrays: they may read other rows
        touching = [w for w in touching if any(map(target.meets, finder.reads(w.variable.data)))]
    others = [w for w in lazy if w not in dask_data]  # Cubed: its plan's inputs, each read whole
    touching += [w for w in others if any(map(target.meets, plan_reads(finder, w.variable.data)))]
    if touching:
        raise WriteError(_message(sorted({w.array.path for w in touching}), store, path, mode))
    if mode == "w" and replaces:
        _refuse_opaque(finder, store, path, lazy)


def _refuse_opaque(finder: GraphReads, store: Store, path: str, lazy: list[DataWrite]) -> None:
    from .opaque import first_opaque

    for write in lazy:
        found = first_opaque([write.variable.data], finder)
        if found is not None:
            where = f"group {path!r} of {store!r}" if path else repr(store)
            raise WriteError(
                f"to_zarr3 (mode='w'): the dask data of {write.array.path!r} calls {found}, and this write "
                f"cannot see what that reads; {where} holds data that this write deletes before any task runs, "
                "so a task reading it would find it gone. Nothing was written. Load the data first "
                "(ds = ds.load()), write to another location and move it in place afterwards, or delete the "
                "old group yourself first if nothing reads it"
            )


@dataclass(frozen=True)
class _Target:
    """What a write changes: ``mode="w"`` all below ``group``, other modes the ``replaced`` parts of arrays."""

    mode: WriteMode
    group: str
    replaced: Mapping[str, list[Box]]

    def meets(self, read: StoredRead) -> bool:
        if self.mode == "w":
            return read.where == self.group or read.where.startswith(self.group + "/")
        return any(_overlap(read.box, box) for box in self.replaced.get(read.where, ()))


def _replaced(finder: GraphReads, plan: WritePlan) -> dict[str, list[Box]]:
    """Per stored array: the parts of it ``plan`` writes (an append's new rows included)."""
    created = set(plan.created)
    out: dict[str, list[Box]] = {}
    for write in plan.data:
        if write.array.path not in created:
            out.setdefault(finder.where(write.array.store, write.array.path), []).append(_written(write))
    return out


def _written(write: DataWrite) -> Box:
    return tuple((o, o + n) for o, n in zip(write.origin, write.variable.shape))


def _overlap(a: Box, b: Box) -> bool:
    return all(s1 < e2 and s2 < e1 for (s1, e1), (s2, e2) in zip(a, b))


def _message(names: list[str], store: Store, path: str, mode: WriteMode) -> str:
    where = f"group {path!r} of {store!r}" if path else repr(store)
    what = "deletes" if mode == "w" else "overwrites"
    return (
        f"to_zarr3 (mode={mode!r}): the dask data of {names} reads from {where}, which this write {what} "
        "before the reading tasks run, so they would read fill values or values already replaced. Nothing "
        "was written. Load the data first (ds = ds.load()), or write to another location and move it in "
        "place afterwards"
    )
