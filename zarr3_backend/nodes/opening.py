"""Opening a node in as few rounds of requests as the store allows.

`open_node_consolidated()` fetches the root's and the node's
``zarr.json`` in one batch, so a node the root's consolidated metadata
describes (with all its members) opens in one round.
`open_node_listed()` also lists the node's prefix meanwhile, so that a
group without consolidated metadata opens and discovers its children in two
rounds, not three (at the price of a listing nobody uses when the group
turns out to carry consolidated metadata).
"""

from __future__ import annotations

from ..core.metadata import GroupMetadata, metadata_key, parse_node_metadata
from ..errors import Zarr3Error
from ..runtime import submit_io
from ..store.base import Store, plain_values
from .array import Array
from .hierarchy import Group, node_from_metadata, open_node


def open_node_consolidated(
    store: Store, path: str, *, read_only: bool, strict: bool = False
) -> Array | Group:
    """The node at ``path`` as the root's consolidated metadata describes it, if the root has an entry for it.

    Fetches the root's and the node's ``zarr.json`` in one batch; without a
    consolidated entry this is `open_node()`.
    Readers that open a group this way see a ``to_zarr3`` write switch at once
    (its commit writes the consolidated root first).
    """
    if not path:
        return open_node(store, path, read_only=read_only, strict=strict)
    root_raw, own_raw = plain_values(
        store.get_many_versioned([(metadata_key(""), None), (metadata_key(path), None)])
    )
    try:
        root = None if root_raw is None else parse_node_metadata(root_raw, metadata_key(""))
    except Zarr3Error:
        root = None  # an unreadable root does not stop us opening the node itself
    if isinstance(root, GroupMetadata) and root.consolidated is not None and path in root.consolidated:
        return Group(store, "", root, read_only=read_only)._consolidated_node(path)
    if own_raw is not None:
        return node_from_metadata(store, path, parse_node_metadata(own_raw, metadata_key(path)), read_only)
    return open_node(store, path, read_only=read_only, strict=strict)


def open_node_listed(
    store: Store, path: str, *, read_only: bool, strict: bool = False, consolidated: bool = True
) -> Array | Group:
    """`open_node_consolidated()`, listing the node's prefix meanwhile; a group keeps the listing for `Group.members()`.

    ``consolidated=False`` drops the group's consolidated metadata (its members
    are read from their own documents, with this listing). A listing that
    turns out unneeded (an array, or a group described by consolidated
    metadata) is still waited for, so no request outlives the call, and its
    errors are ignored: public buckets often refuse listings.
    """
    listing = submit_io(store.list_dir, f"{path}/" if path else "")
    try:
        node = open_node_consolidated(store, path, read_only=read_only, strict=strict)
    except BaseException:
        listing.cancel() or listing.exception()  # let it end; its outcome no longer matters
        raise
    if isinstance(node, Group) and not consolidated and node.metadata.consolidated is not None:
        node = Group(node.store, node.path, node.metadata.with_consolidated(None), read_only=node.read_only)
    if isinstance(node, Group) and node.metadata.consolidated is None:
        node._listing = listing.result()
    else:
        listing.exception()
    return node
