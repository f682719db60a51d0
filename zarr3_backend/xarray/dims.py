"""Dimension names of a group's arrays, and the check that they agree on sizes.

Zarr v3 ``dimension_names`` come first. Arrays without them (or with null
entries) fall back to xarray's legacy ``_ARRAY_DIMENSIONS`` attribute, and
otherwise to ``dim_0``, ``dim_1``, ... by axis.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import MetadataError
from ..nodes.array import Array

DIMENSION_KEY = "_ARRAY_DIMENSIONS"


@dataclass(frozen=True)
class ArrayDims:
    """The dimension names of one array and whether they came from ``_ARRAY_DIMENSIONS``."""

    names: tuple[str, ...]
    from_attribute: bool = False


def array_dims(array: Array) -> ArrayDims:
    """The dimension names xarray should use for ``array``.

    >>> import zarr3_backend
    >>> a = zarr3_backend.create_array("memory://doc/dims", shape=(2, 3), dtype="int8", dimension_names=["y", None])
    >>> array_dims(a).names
    ('y', 'dim_1')
    """
    names = array.dimension_names
    if names is not None and None not in names:
        return ArrayDims(tuple(n for n in names if n is not None))  # all set; the filter narrows the type
    legacy = array.metadata.attributes.get(DIMENSION_KEY)
    if isinstance(legacy, list) and len(legacy) == array.ndim and all(isinstance(n, str) for n in legacy):
        return ArrayDims(tuple(legacy), from_attribute=True)
    names = names or (None,) * array.ndim
    return ArrayDims(tuple(n if n is not None else f"dim_{axis}" for axis, n in enumerate(names)))


def group_dims(arrays: Mapping[str, Array], where: str) -> dict[str, ArrayDims]:
    """Dimension names for every array of a group; raise if one name gets two sizes."""
    dims = {name: array_dims(array) for name, array in arrays.items()}
    sizes: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, array in arrays.items():
        for dim, size in zip(dims[name].names, array.shape):
            sizes[dim][size].append(name)
    for dim, by_size in sizes.items():
        if len(by_size) > 1:
            raise _conflict(dim, by_size, where)
    return dims


def _conflict(dim: str, by_size: Mapping[int, list[str]], where: str) -> MetadataError:
    found = "; ".join(f"size {size} in {sorted(names)}" for size, names in sorted(by_size.items()))
    arrays = sorted(n for names in by_size.values() for n in names)
    return MetadataError(
        f"{where}: dimension {dim!r} has conflicting sizes: {found}. Give these arrays distinct "
        f"dimension_names in their zarr.json (or a '{DIMENSION_KEY}' attribute), or leave some out "
        f"with drop_variables=[...] (arrays involved: {arrays})"
    )
