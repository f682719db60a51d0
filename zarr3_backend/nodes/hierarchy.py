"""Groups: list, walk, create and erase their children, and open the node at a path.

Child discovery lists the group's prefix once and fetches every child's
``zarr.json`` in one batched store call; a read-only group carrying
consolidated metadata answers from that instead. A prefix that holds nodes
further down but no ``zarr.json`` of its own is an implicit group (opened
directly, only if it holds an array itself: see `open_node()`).
`node_from_metadata()` picks the class a node opens as (a Zarr v2 group
or array, an array described by consolidated metadata, or a plain v3 node).
Opening in fewer rounds of requests is `zarr3_backend.nodes.opening`'s job;
writing a new node is `zarr3_backend.nodes.placement`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Unpack

import numpy as np

from ..core.buffers import as_bytes
from ..core.dtypes import DataTypeLike, data_type_from_numpy
from ..core.metadata import (
    ArrayMetadata,
    GroupMetadata,
    NodeMetadata,
    encode_metadata,
    metadata_key,
    node_metadata_from_json,
    parse_node_metadata,
)
from ..core.metadata.v2 import READ_ONLY_HINT, V2ArrayMetadata, V2GroupMetadata
from ..errors import NodeExistsError, NodeNameError, NodeNotFoundError, ReadOnlyError
from ..store import make_store
from ..store.base import Store
from ..store.streamed_reads import stream_reads
from .array import Array
from .array_kinds import ConsolidatedArray, V2Array
from .attributes import Attributes
from .consolidation import Change, refresh_consolidated
from .creation import ArrayDefinition, ArrayOptions, build_array_metadata, normalize_shape
from .lookup import (
    has_child_array,
    is_implicit_group,
    read_node_metadata,
    read_v2_children,
    read_v2_node,
    stores_below,
    v2_node,
)
from .paths import join_path, normalize_path
from .placement import create_array_at, write_group_at


def node_from_metadata(
    store: Store, path: str, metadata: NodeMetadata, read_only: bool, consolidated: bool = False
) -> Array | Group:
    """The node ``metadata`` describes, as the class it opens as (``consolidated``: taken from consolidated metadata)."""
    if isinstance(metadata, V2GroupMetadata):
        return V2Group(store, path, metadata, read_only=True)
    if not isinstance(metadata, ArrayMetadata):
        return Group(store, path, metadata, read_only=read_only)
    if isinstance(metadata, V2ArrayMetadata):
        array: Array = V2Array(store, path, metadata, read_only=True)
    else:
        array = (ConsolidatedArray if consolidated else Array)(store, path, metadata, read_only=read_only)
    array.check_codecs()  # opening refuses a chain it cannot read
    return array


class Group:
    """A Zarr v3 group: attributes plus named children (arrays and groups)."""

    def __init__(self, store: Store, path: str, metadata: GroupMetadata, *, read_only: bool = False) -> None:
        self.store = store
        self.path = path
        self.metadata = metadata
        self.read_only = read_only or store.read_only
        self._listing: tuple[list[str], list[str]] | None = None  # taken by the first members() call

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_group, (self.store, self.path, self.metadata, self.read_only))

    def __repr__(self) -> str:
        return f"<zarr3_backend.Group {self.name!r} store={self.store!r}>"

    @property
    def name(self) -> str:
        return "/" + self.path

    @property
    def attrs(self) -> Attributes:
        return Attributes(self)

    def replace_attributes(self, attributes: dict[str, Any]) -> None:
        """Replace all user attributes with one metadata write (keeping the stored consolidated metadata)."""
        self._check_writable()
        stored = read_node_metadata(self.store, self.path)  # its consolidated copy may be newer than ours
        current = stored if isinstance(stored, GroupMetadata) else self.metadata
        self.metadata = current.with_attributes(attributes)
        self.store.set(metadata_key(self.path), encode_metadata(self.metadata))
        refresh_consolidated(self.store, [Change(self.path, self.metadata.to_json())])

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"group {self.name!r} is open read-only; open it with mode='r+' or 'a' to write"
            )

    # -- children ----------------------------------------------------------
    def _child_path(self, name: str) -> str:
        relative = normalize_path(name)
        if not relative:
            raise NodeNameError(f"a child of group {self.name!r} needs a non-empty name, got {name!r}")
        return join_path(self.path, relative)

    def members(
        self, arrived: Callable[[str, Array | Group], None] | None = None
    ) -> dict[str, Array | Group]:
        """Direct children by name, discovered with one listing and one batched fetch.

        A read-only group with consolidated metadata answers from it; a writable
        one lists the store, so it sees what was written through it since it was opened.
        Documents are parsed as they arrive, and ``arrived(name, node)`` sees each
        child built from one. Children named like a dimension of an array that has
        arrived are fetched next: they are the coordinates readers want first.
        """
        if self.read_only and self.metadata.consolidated is not None:
            return self._consolidated_members()
        prefix = f"{self.path}/" if self.path else ""
        listing, self._listing = self._listing, None
        _, prefixes = listing or self.store.list_dir(prefix)
        names = sorted(p[len(prefix) : -1] for p in prefixes)
        names = [n for n in names if not n.startswith("__")]
        paths = [join_path(self.path, n) for n in names]
        unasked = {name: i for i, name in enumerate(names)}
        documents = stream_reads(self.store, [(metadata_key(p), None) for p in paths])
        children: dict[str, Array | Group] = {}
        for index, read in documents:
            raw = as_bytes(read.value)
            name, path = names[index], paths[index]
            unasked.pop(name, None)
            if raw is None:
                continue
            node = node_from_metadata(
                self.store, path, parse_node_metadata(raw, metadata_key(path)), self.read_only
            )
            if isinstance(node, Array) and node.dimension_names:
                documents.send_first(unasked.pop(d) for d in node.dimension_names if d in unasked)
            children[name] = node
            if arrived is not None:
                arrived(name, node)
        for name, path in zip(names, paths):
            if name not in children and is_implicit_group(self.store, path):
                children[name] = Group(self.store, path, GroupMetadata(), read_only=self.read_only)
        return {name: children[name] for name in names if name in children}

    def _consolidated_members(self) -> dict[str, Array | Group]:
        consolidated = self.metadata.consolidated or {}
        return {name: self._consolidated_node(name) for name in sorted(consolidated) if "/" not in name}

    def _consolidated_node(self, relative: str) -> Array | Group:
        """The node at ``relative`` built from this group's consolidated metadata (nested groups keep theirs)."""
        consolidated = self.metadata.consolidated or {}
        path = join_path(self.path, relative)
        if isinstance(self.metadata, V2GroupMetadata):
            metadata = v2_node(consolidated[relative], path)
        else:
            metadata = node_metadata_from_json(consolidated[relative], metadata_key(path))
        if isinstance(metadata, GroupMetadata):
            prefix = relative + "/"
            metadata = metadata.with_consolidated(
                {k[len(prefix) :]: v for k, v in consolidated.items() if k.startswith(prefix)}
            )
        return node_from_metadata(self.store, path, metadata, self.read_only, consolidated=True)

    def arrays(self) -> dict[str, Array]:
        return {n: m for n, m in self.members().items() if isinstance(m, Array)}

    def groups(self) -> dict[str, Group]:
        return {n: m for n, m in self.members().items() if isinstance(m, Group)}

    def walk(self) -> Iterator[tuple[str, Array | Group]]:
        """Every node below this group, depth first, as ``(relative path, node)``."""
        for name, node in self.members().items():
            yield name, node
            if isinstance(node, Group):
                for sub, child in node.walk():
                    yield f"{name}/{sub}", child

    def __getitem__(self, name: str) -> Array | Group:
        """The child ``name``; a writable group reads its own ``zarr.json`` (its consolidated copy may predate our writes)."""
        path = self._child_path(name)
        relative = path[len(self.path) + 1 :] if self.path else path
        if (
            self.read_only
            and self.metadata.consolidated is not None
            and relative in self.metadata.consolidated
        ):
            return self._consolidated_node(relative)
        return open_node(self.store, path, read_only=self.read_only)

    def __contains__(self, name: str) -> bool:
        try:
            self[name]
        except NodeNotFoundError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.members())

    def __delitem__(self, name: str) -> None:
        """Erase the child ``name`` and everything below it (consolidated ancestors forget it)."""
        self._check_writable()
        path = self._child_path(name)
        if name not in self:
            raise NodeNotFoundError(f"no node {name!r} in group {self.name!r}")
        self.store.delete_prefix(path + "/")
        refresh_consolidated(self.store, [Change(path, None)])
        if self.metadata.consolidated is not None:
            relative = path[len(self.path) + 1 :] if self.path else path
            kept = {
                k: v
                for k, v in self.metadata.consolidated.items()
                if k != relative and not k.startswith(relative + "/")
            }
            self.metadata = self.metadata.with_consolidated(kept)

    def create_array(
        self,
        name: str,
        *,
        overwrite: bool = False,
        storage_options: dict[str, Any] | None = None,
        **options: Unpack[ArrayDefinition],
    ) -> Array:
        """Create an array child; keyword arguments as `zarr3_backend.create_array()`."""
        self._check_writable()
        store = make_store(self.store, storage_options=storage_options)
        path = self._child_path(name)
        return create_array_at(store, path, build_array_metadata(path, **options), overwrite)

    def create_group(
        self,
        name: str,
        *,
        attributes: dict[str, Any] | None = None,
        overwrite: bool = False,
        storage_options: dict[str, Any] | None = None,
    ) -> Group:
        """Create a group child; keyword arguments as `zarr3_backend.create_group()`."""
        self._check_writable()
        return create_group_at(
            make_store(self.store, storage_options=storage_options),
            self._child_path(name),
            attributes,
            overwrite,
        )

    def require_group(self, name: str, *, overwrite: bool = False) -> Group:
        """The child group ``name``: the existing one, else a new one (zarr-python's ``require_group``).

        ``overwrite=True`` always creates a new, empty group, erasing what was
        there. Raises `NodeExistsError` if an array is at ``name``.

        >>> import zarr3_backend
        >>> root = zarr3_backend.create_group("memory://doc/require_group", overwrite=True)
        >>> root.require_group("a").attrs.update({"k": 1})
        >>> dict(root.require_group("a").attrs)
        {'k': 1}
        """
        if overwrite:
            return self.create_group(name, overwrite=True)
        node = self._require(name, lambda: self.create_group(name))
        if not isinstance(node, Group):
            raise NodeExistsError(
                f"{join_path(self.path, name)!r} is an array, not a group; delete it first (del group[name])"
            )
        return node

    def require_array(
        self,
        name: str,
        *,
        shape: Sequence[int] | int,
        dtype: DataTypeLike,
        exact: bool = False,
        **options: Unpack[ArrayOptions],
    ) -> Array:
        """The child array ``name``: the existing one if it fits, else a new one (zarr-python's ``require_array``).

        An existing array must have ``shape`` and a data type that casts safely
        to ``dtype`` (equal to it with ``exact=True``), else
        `NodeExistsError`; a new one is made with ``shape``, ``dtype``
        and ``options`` as in `create_array()`.

        >>> import zarr3_backend
        >>> root = zarr3_backend.create_group("memory://doc/require_array", overwrite=True)
        >>> root.require_array("x", shape=(3,), dtype="int16").dtype
        dtype('int16')
        >>> root.require_array("x", shape=3, dtype="int32").dtype  # int16 casts safely to int32
        dtype('int16')
        """
        node = self._require(name, lambda: self.create_array(name, shape=shape, dtype=dtype, **options))
        where = join_path(self.path, name)
        if not isinstance(node, Array):
            raise NodeExistsError(f"{where!r} is a group, not an array; delete it first (del group[name])")
        wanted_shape = normalize_shape(shape)
        wanted_dtype = data_type_from_numpy(dtype).numpy
        if node.shape != wanted_shape:
            raise NodeExistsError(f"array {where!r} exists with shape {node.shape}, not {wanted_shape}")
        fits = node.dtype == wanted_dtype if exact else np.can_cast(node.dtype, wanted_dtype)
        if not fits:
            relation = "is not" if exact else "does not cast safely to"
            raise NodeExistsError(
                f"array {where!r} exists with dtype {node.dtype}, which {relation} {wanted_dtype}"
            )
        return node

    def _require(self, name: str, create: Callable[[], Array | Group]) -> Array | Group:
        try:
            return self[name]
        except NodeNotFoundError:
            return create()


def _rebuild_group(store: Store, path: str, metadata: GroupMetadata, read_only: bool) -> Group:
    return Group(store, path, metadata, read_only=read_only)


class V2Group(Group):
    """A Zarr v2 group (read-only): members from ``.zmetadata`` when it has one, else from each child's documents."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (V2Group, (self.store, self.path, self.metadata), {"read_only": True})

    def _check_writable(self) -> None:
        raise ReadOnlyError(f"group {self.name!r} is a Zarr v2 group: {READ_ONLY_HINT}")

    def members(
        self, arrived: Callable[[str, Array | Group], None] | None = None
    ) -> dict[str, Array | Group]:
        """Direct children by name: one listing and one batched fetch of their ``.zarray``/``.zgroup``/``.zattrs``."""
        if self.metadata.consolidated is not None:
            children = self._consolidated_members()
        else:
            prefix = f"{self.path}/" if self.path else ""
            listing, self._listing = self._listing, None
            _, prefixes = listing or self.store.list_dir(prefix)
            names = sorted(p[len(prefix) : -1] for p in prefixes)
            found = read_v2_children(self.store, self.path, names)
            children = {
                n: node_from_metadata(self.store, join_path(self.path, n), found[n], True)
                for n in names
                if n in found
            }
        if arrived is not None:
            for name, node in children.items():
                arrived(name, node)
        return children


def open_node(store: Store, path: str, *, read_only: bool, strict: bool = False) -> Array | Group:
    """The array or group at ``path`` (an implicit group if only descendants exist).

    ``strict`` (what the public open functions use) accepts an implicit group
    only if it holds an array directly, so that a plain directory with Zarr
    stores further down is not taken for an empty group; the error then
    names those stores (also kept as ``.stores_below``).
    """
    metadata = read_node_metadata(store, path)
    if metadata is None:
        metadata = read_v2_node(store, path)
    if metadata is not None:
        return node_from_metadata(store, path, metadata, read_only)
    if has_child_array(store, path) if strict else is_implicit_group(store, path):
        return Group(store, path, GroupMetadata(), read_only=read_only)
    prefix = f"{path}/" if path else ""
    message = (
        f"no Zarr array or group at {path or '/'!r} in {store!r}: {metadata_key(path)} not found "
        f"(nor a Zarr v2 {prefix}.zarray or {prefix}.zgroup)"
    )
    found = stores_below(store, path) if strict else []
    if found:
        message += f"; found Zarr stores further down at: {', '.join(found)}. Open one of those instead"
    error = NodeNotFoundError(message)
    error.stores_below = found
    raise error


def create_group_at(store: Store, path: str, attributes: dict[str, Any] | None, overwrite: bool) -> Group:
    """Write a new group at ``path`` (and any missing ancestor groups); consolidated ancestors are refreshed."""
    return Group(store, path, write_group_at(store, path, attributes, overwrite))
