"""Node names and hierarchy paths: which names the spec (and a store) allows, and how paths are normalized and joined.

A path is the node names from the root down, joined by ``/`` without a
leading or trailing ``/`` (``""`` is the root). Everything that takes a path
from a caller normalizes it here before any key is built from it.
"""

from __future__ import annotations

import os

from ..core.key_checks import segment_problem
from ..errors import NodeNameError
from ..store.base import TMP_PREFIX, Store, is_temporary
from ..store.local import LocalStore


def validate_node_name(name: str) -> str:
    """Return ``name`` if the spec allows it as a node name, else raise `NodeNameError`.

    >>> validate_node_name("t2m")
    't2m'
    """
    if not isinstance(name, str) or name == "":
        raise NodeNameError(f"node name must be a non-empty string, got {name!r}")
    if "/" in name:
        raise NodeNameError(f"node name {name!r} must not contain '/'")
    if set(name) == {"."}:
        raise NodeNameError(f"node name {name!r} must not consist only of periods")
    if name.startswith("__"):
        raise NodeNameError(f"node name {name!r} must not start with the reserved prefix '__'")
    problem = segment_problem(name)
    if problem is not None:
        raise NodeNameError(f"node name {name!r} {problem}; it could escape the store root")
    return name


#: Names of metadata documents a node's directory holds (Zarr v3, and v2 which readers also look for).
DOCUMENT_NAMES = frozenset({"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"})


def unstorable_name(name: str, store: Store | None) -> str | None:
    """Why ``store`` cannot hold a node named ``name`` (beyond the spec's rules), or ``None``.

    >>> unstorable_name("zarr.json", None)
    "is the name of a metadata document, which the node's parent keeps beside its children"
    """
    if name in DOCUMENT_NAMES:
        return "is the name of a metadata document, which the node's parent keeps beside its children"
    if is_temporary(name):
        return (
            f"starts with {TMP_PREFIX!r}, the prefix of this library's temporary files, which listings skip"
        )
    limit = _name_max(store.root) if isinstance(store, LocalStore) else None
    if limit is not None and len(os.fsencode(name)) > limit:
        return f"is {len(os.fsencode(name))} bytes long, and this file system allows {limit} per name"
    return None


def _name_max(root: str) -> int | None:
    """The longest file name (bytes) the file system under ``root`` allows, or ``None`` if unknown."""
    directory = os.path.abspath(root)
    while not os.path.isdir(directory) and os.path.dirname(directory) != directory:
        directory = os.path.dirname(directory)
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return None


def normalize_path(path: str | None) -> str:
    """A hierarchy path without leading/trailing '/', each segment a valid node name.

    >>> normalize_path("/era5/t2m/"), normalize_path(None)
    ('era5/t2m', '')
    """
    path = (path or "").strip("/")
    if path:
        for name in path.split("/"):
            validate_node_name(name)
    return path


def join_path(parent: str, name: str) -> str:
    """The path of ``name`` inside the node at ``parent``.

    >>> join_path("", "era5"), join_path("era5", "t2m")
    ('era5', 'era5/t2m')
    """
    return f"{parent}/{name}" if parent else name
