"""Consolidating a group: write the metadata of every node below it into its own ``zarr.json``.

Readers then discover the whole hierarchy from one document (the layout
zarr-python and xarray write and read). Keeping such a copy true when nodes
change afterwards is `zarr3_backend.nodes.consolidation`'s job.
"""

from __future__ import annotations

from typing import Any

from ..core.metadata import encode_metadata, metadata_key
from ..errors import GroupNotFoundError
from ..store import StoreLike, make_store
from .consolidation import consolidated_entry
from .hierarchy import Group, open_node
from .paths import normalize_path


def consolidate_metadata(
    store: StoreLike, path: str = "", *, storage_options: dict[str, Any] | None = None
) -> Group:
    """Write the metadata of every node below the group at ``path`` into its ``zarr.json``.

    Readers then discover the whole hierarchy from one document (the layout
    zarr-python and xarray write and read): an open is one request.

    Parameters
    ----------
    store : str, os.PathLike or Store
        A local path, an fsspec URL or a store.
    path : str, default ""
        The group to consolidate (``""``: the root).
    storage_options : dict, optional
        Options for an fsspec URL's file system (credentials, endpoint).

    Returns
    -------
    Group
        The group, with its consolidated metadata.

    Raises
    ------
    GroupNotFoundError
        ``path`` is an array.

    Examples
    --------
    >>> import zarr3_backend
    >>> _ = zarr3_backend.create_array("memory://doc/consolidate", "a/x", shape=(2,), dtype="int8")
    >>> sorted(consolidate_metadata("memory://doc/consolidate").metadata.consolidated)
    ['a', 'a/x']
    """
    store = make_store(store, storage_options=storage_options)
    group = open_node(store, normalize_path(path), read_only=False)
    if not isinstance(group, Group):
        raise GroupNotFoundError(f"cannot consolidate {path or '/'!r}: it is an array, not a group")
    group.metadata = group.metadata.with_consolidated(None)
    group.metadata = group.metadata.with_consolidated(tree_documents(group))
    store.set(metadata_key(group.path), encode_metadata(group.metadata))
    return group


def tree_documents(group: Group) -> dict[str, dict[str, Any]]:
    """The metadata document of every node below ``group`` (read from each node), as consolidated stores them."""
    return {name: consolidated_entry(node.metadata.to_json()) for name, node in group.walk()}
