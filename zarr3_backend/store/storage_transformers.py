"""The storage transformer extension point (spec: core, "Storage transformers").

A storage transformer sits between an array and its store and serves the
same Store interface, possibly changing keys and bytes. Register a factory
``factory(store, configuration) -> Store`` under the transformer's name;
arrays whose metadata lists it then read and write chunks through it. An
unregistered transformer is refused unless it says ``"must_understand": false``.

>>> from zarr3_backend.store.storage_transformers import is_registered
>>> is_registered("no-such-transformer")
False
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.extension import STORAGE_TRANSFORMERS
from .base import Store

TransformerFactory = Callable[[Store, dict[str, Any]], Store]
_factories: dict[str, TransformerFactory] = {}


def register_storage_transformer(name: str, factory: TransformerFactory) -> None:
    """Make the storage transformer ``name`` available to arrays that list it."""
    _factories[name] = factory
    STORAGE_TRANSFORMERS.add(name)


def is_registered(name: str) -> bool:
    return name in _factories


def apply_storage_transformers(store: Store, transformers: Sequence[dict[str, Any]]) -> Store:
    """The store an array's chunk I/O goes through: ``transformers[0]`` first, the real store last.

    Unregistered transformers (metadata parsing admits only optional ones) are skipped.
    """
    for transformer in reversed(transformers):
        if is_registered(transformer["name"]):
            store = _factories[transformer["name"]](store, transformer.get("configuration", {}))
    return store
