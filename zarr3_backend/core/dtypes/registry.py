"""Data type names -> builders, and numpy dtypes numpy's own kinds do not describe -> data types.

Like the codec registry (`zarr3_backend.codecs.registry`), a data type is
found, in order, among

1. builders registered with `register_data_type()` (each family module in
   ``zarr3_backend.core.dtypes`` registers its names on import: ``integers``,
   ``floats``, ``complex``, ``strings``, ``times``, ``ml``);
2. third-party builders advertised in the entry-point group
   ``zarr3_backend.data_types`` under the data type's name, loaded on first use.

A builder takes the name and the ``configuration`` object and returns the
`DataType`, raising `MetadataError` for a bad configuration.

A numpy dtype from another package (ml_dtypes' ``bfloat16``, ``int4`` ...)
is numpy kind ``V`` whatever it holds; a family registers it with
``numpy_type=(module, name)`` so that `registered_for_numpy()` finds its data
type, and `zarr3_backend.core.dtypes.kinds` its kind.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeAlias, cast

import numpy as np

from ..extension import load_entry_point
from .base import DataType

ENTRY_POINT_GROUP = "zarr3_backend.data_types"

#: Builds a data type from its name and ``configuration`` (``{}`` when absent).
Builder: TypeAlias = Callable[[str, dict[str, Any]], DataType]

_builders: dict[str, Builder] = {}
_by_numpy_type: dict[tuple[str, str], str] = {}


def register_data_type(name: str, builder: Builder, *, numpy_type: tuple[str, str] | None = None) -> None:
    """Register ``builder`` for the data type ``name``; the last registration of a name wins.

    ``numpy_type`` is ``(module, dtype name)`` of a numpy dtype this type
    is held in that numpy's kind does not describe (e.g.
    ``("ml_dtypes", "bfloat16")``).

    >>> from zarr3_backend.core.dtypes.registry import get_builder
    >>> get_builder("float32")("float32", {}).numpy
    dtype('float32')
    """
    _builders[name] = builder
    if numpy_type is not None:
        _by_numpy_type[numpy_type] = name
    _registered_for_numpy.cache_clear()


def get_builder(name: str) -> Builder | None:
    """The builder registered (or advertised by an entry point) for ``name``, else ``None``."""
    return _builders.get(name) or _load_entry_point(name)


def registered_names() -> list[str]:
    """Every registered data type name, sorted (entry points not yet loaded are not listed)."""
    return sorted(_builders)


def registered_for_numpy(dtype: np.dtype) -> DataType | None:
    """The data type of a numpy dtype registered with ``numpy_type``, else ``None`` (numpy's own dtypes).

    >>> registered_for_numpy(np.dtype("float32")) is None
    True
    """
    return _registered_for_numpy(dtype)


@cache
def _registered_for_numpy(dtype: np.dtype) -> DataType | None:
    name = _by_numpy_type.get((dtype.type.__module__, dtype.name))
    return None if name is None else _builders[name](name, {})


@cache
def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _load_entry_point(name: str) -> Builder | None:
    ep = _entry_points().get(name)
    if ep is None:
        return None
    loaded = load_entry_point(ep, "data_type")
    if callable(loaded):
        _builders[name] = cast(Builder, loaded)
    return _builders.get(name)
