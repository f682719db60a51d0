"""Node names and hierarchy paths: which names the spec allows, and how paths are normalized and joined.

A path is the node names from the root down, joined by ``/`` without a
leading or trailing ``/`` (``""`` is the root). Everything that takes a path
from a caller normalizes it here before any key is built from it.
"""

from __future__ import annotations

from ..core.key_checks import segment_problem
from ..errors import NodeNameError


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
