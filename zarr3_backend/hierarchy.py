"""Groups and the hierarchy: open, create, list, walk and erase nodes.

Child discovery lists the group's prefix once and fetches every child's
``zarr.json`` in one batched store call; a group carrying consolidated
metadata answers from that instead, so :func:`open_node_consolidated` opens
such a group and all its members with one request. :func:`open_node_listed`
lists the prefix while it fetches the node's own ``zarr.json``, so opening a
group without consolidated metadata and discovering its children takes two
rounds of requests, not three (at the price of a listing nobody uses when
the group turns out to carry consolidated metadata). A prefix that
holds nodes further down but no ``zarr.json`` of its own is an implicit group
(opened directly, only if it holds an array itself: see :func:`open_node`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Unpack

import numpy as np

from .array import Array, ReadResult
from .attributes import Attributes
from .consolidation import Change, consolidated_entry, refresh_consolidated, stale_hint
from .creation import ArrayDefinition, ArrayOptions, build_array_metadata, normalize_shape
from .errors import (
    CodecError, GroupNotFoundError, NodeExistsError, NodeNameError, NodeNotFoundError, ReadOnlyError, Zarr3Error,
)
from .metadata import ArrayMetadata, GroupMetadata, NodeMetadata, encode_metadata, node_metadata_from_json, metadata_key, parse_node_metadata
from .executor import submit_io
from .indexing import SelectionLike
from .dtypes import DataTypeLike, data_type_from_numpy
from .store import StoreLike, make_store
from .keys import segment_problem
from .store.base import Store


def validate_node_name(name: str) -> str:
    """Return ``name`` if the spec allows it as a node name, else raise :class:`NodeNameError`.

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
    """A hierarchy path without leading/trailing '/', each segment a valid node name."""
    path = (path or "").strip("/")
    if path:
        for name in path.split("/"):
            validate_node_name(name)
    return path


def join_path(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def node_from_metadata(store: Store, path: str, metadata: NodeMetadata, read_only: bool,
                       consolidated: bool = False) -> Array | Group:
    if isinstance(metadata, ArrayMetadata):
        return (ConsolidatedArray if consolidated else Array)(store, path, metadata, read_only=read_only)
    return Group(store, path, metadata, read_only=read_only)


class ConsolidatedArray(Array):
    """An array described by a group's consolidated metadata: decode errors say when that copy is stale."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (ConsolidatedArray, (self.store, self.path, self.metadata), {"read_only": self.read_only})

    def get(self, selection: SelectionLike = Ellipsis, *, orthogonal: bool = False) -> ReadResult:
        try:
            return super().get(selection, orthogonal=orthogonal)
        except CodecError as exc:
            explained = explain_stale(exc, [self])
            if explained is exc:
                raise
            raise explained from exc


def explain_stale(exc: CodecError, arrays: list[Array]) -> CodecError:
    """``exc`` with a note that the consolidated entry of one of ``arrays`` is stale, if one is."""
    for array in arrays:
        if isinstance(array, ConsolidatedArray):
            hint = stale_hint(array.store, array.path, array.metadata.to_json())
            if hint is not None:
                return type(exc)(f"{exc}; {hint}")
    return exc


def read_node_metadata(store: Store, path: str) -> NodeMetadata | None:
    """The metadata at ``path``; ``None`` if there is no ``zarr.json`` there."""
    key = metadata_key(path)
    raw = store.get(key)
    return None if raw is None else parse_node_metadata(raw, key)


def is_implicit_group(store: Store, path: str) -> bool:
    """Whether nodes exist below ``path`` although it has no ``zarr.json`` itself."""
    prefix = f"{path}/" if path else ""
    return any(key.endswith("zarr.json") for key in store.list_prefix(prefix))


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
            raise ReadOnlyError(f"group {self.name!r} is open read-only; open it with mode='r+' or 'a' to write")

    # -- children ----------------------------------------------------------
    def _child_path(self, name: str) -> str:
        relative = normalize_path(name)
        if not relative:
            raise NodeNameError(f"a child of group {self.name!r} needs a non-empty name, got {name!r}")
        return join_path(self.path, relative)

    def members(self, arrived: Callable[[str, Array | Group], None] | None = None) -> dict[str, Array | Group]:
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
        arrivals = self.store.fetch_each([(metadata_key(p), None) for p in paths])
        children: dict[str, Array | Group] = {}
        for index, raw in arrivals:
            name, path = names[index], paths[index]
            unasked.pop(name, None)
            if raw is None:
                continue
            node = node_from_metadata(self.store, path, parse_node_metadata(raw, metadata_key(path)), self.read_only)
            if isinstance(node, Array) and node.dimension_names:
                arrivals.prefer(unasked.pop(d) for d in node.dimension_names if d in unasked)
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
        metadata = node_metadata_from_json(consolidated[relative], metadata_key(path))
        if isinstance(metadata, GroupMetadata):
            prefix = relative + "/"
            metadata = metadata.with_consolidated({k[len(prefix) :]: v for k, v in consolidated.items() if k.startswith(prefix)})
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
        if self.read_only and self.metadata.consolidated is not None and relative in self.metadata.consolidated:
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
            kept = {k: v for k, v in self.metadata.consolidated.items() if k != relative and not k.startswith(relative + "/")}
            self.metadata = self.metadata.with_consolidated(kept)

    def create_array(
        self, name: str, *, overwrite: bool = False, storage_options: dict[str, Any] | None = None,
        **options: Unpack[ArrayDefinition],
    ) -> Array:
        """Create an array child; keyword arguments as :func:`zarr3_backend.create_array`."""
        self._check_writable()
        store = make_store(self.store, storage_options=storage_options)
        path = self._child_path(name)
        return create_array_at(store, path, build_array_metadata(path, **options), overwrite)

    def create_group(
        self, name: str, *, attributes: dict[str, Any] | None = None, overwrite: bool = False,
        storage_options: dict[str, Any] | None = None,
    ) -> Group:
        """Create a group child; keyword arguments as :func:`zarr3_backend.create_group`."""
        self._check_writable()
        return create_group_at(make_store(self.store, storage_options=storage_options), self._child_path(name), attributes, overwrite)

    def require_group(self, name: str, *, overwrite: bool = False) -> Group:
        """The child group ``name``: the existing one, else a new one (zarr-python's ``require_group``).

        ``overwrite=True`` always creates a new, empty group, erasing what was
        there. Raises :class:`NodeExistsError` if an array is at ``name``.

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
            raise NodeExistsError(f"{join_path(self.path, name)!r} is an array, not a group; delete it first (del group[name])")
        return node

    def require_array(
        self, name: str, *, shape: Sequence[int] | int, dtype: DataTypeLike, exact: bool = False, **options: Unpack[ArrayOptions]
    ) -> Array:
        """The child array ``name``: the existing one if it fits, else a new one (zarr-python's ``require_array``).

        An existing array must have ``shape`` and a data type that casts safely
        to ``dtype`` (equal to it with ``exact=True``), else
        :class:`NodeExistsError`; a new one is made with ``shape``, ``dtype``
        and ``options`` as in :meth:`create_array`.

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
            raise NodeExistsError(f"array {where!r} exists with dtype {node.dtype}, which {relation} {wanted_dtype}")
        return node

    def _require(self, name: str, create: Callable[[], Array | Group]) -> Array | Group:
        try:
            return self[name]
        except NodeNotFoundError:
            return create()


def _rebuild_group(store: Store, path: str, metadata: GroupMetadata, read_only: bool) -> Group:
    return Group(store, path, metadata, read_only=read_only)


def open_node(store: Store, path: str, *, read_only: bool, strict: bool = False) -> Array | Group:
    """The array or group at ``path`` (an implicit group if only descendants exist).

    ``strict`` (what the public open functions use) accepts an implicit group
    only if it holds an array directly, so that a plain directory with Zarr
    stores further down is not taken for an empty group; the error then
    names those stores (also kept as ``.stores_below``).
    """
    metadata = read_node_metadata(store, path)
    if metadata is not None:
        return node_from_metadata(store, path, metadata, read_only)
    if has_child_array(store, path) if strict else is_implicit_group(store, path):
        return Group(store, path, GroupMetadata(), read_only=read_only)
    message = f"no Zarr v3 array or group at {path or '/'!r} in {store!r}: {metadata_key(path)} not found"
    found = stores_below(store, path) if strict else []
    if found:
        message += f"; found Zarr stores further down at: {', '.join(found)}. Open one of those instead"
    error = NodeNotFoundError(message)
    error.stores_below = found
    raise error


def has_child_array(store: Store, path: str) -> bool:
    """Whether an array sits directly below ``path`` (one listing, one batched fetch)."""
    prefix = f"{path}/" if path else ""
    _, prefixes = store.list_dir(prefix)
    raws = store.get_many([(metadata_key(p[:-1]), None) for p in prefixes])
    return any(raw is not None and _node_type(raw) == "array" for raw in raws)


def _node_type(raw: bytes) -> Any:
    try:
        document = json.loads(raw)
    except ValueError:
        return None
    return document.get("node_type") if isinstance(document, dict) else None


def stores_below(store: Store, path: str, limit: int = 5, max_listings: int = 200) -> list[str]:
    """Up to ``limit`` top-most paths below ``path`` holding a ``zarr.json``, breadth first."""
    found: list[str] = []
    pending = [f"{path}/" if path else ""]
    listings = 0
    while pending and len(found) < limit and listings < max_listings:
        prefix = pending.pop(0)
        keys, prefixes = store.list_dir(prefix)
        listings += 1
        if prefix and prefix + "zarr.json" in keys:
            found.append(prefix[:-1])
        else:
            pending.extend(prefixes)
    return found


def open_node_consolidated(store: Store, path: str, *, read_only: bool, strict: bool = False) -> Array | Group:
    """The node at ``path`` as the root's consolidated metadata describes it, if the root has an entry for it.

    Fetches the root's and the node's ``zarr.json`` in one batch; without a
    consolidated entry this is :func:`open_node`. Readers that open a group
    this way see a ``to_zarr3`` write switch at once (its commit writes the
    consolidated root first).
    """
    if not path:
        return open_node(store, path, read_only=read_only, strict=strict)
    root_raw, own_raw = store.get_many([(metadata_key(""), None), (metadata_key(path), None)])
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
    """:func:`open_node_consolidated`, listing the node's prefix meanwhile; a group keeps the listing for :meth:`Group.members`.

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


def missing_parents(store: Store, path: str) -> list[str]:
    """The ancestors of ``path`` that have no ``zarr.json`` (root first); refuse to nest under an array."""
    parts = path.split("/")[:-1] if path else []
    ancestors = [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]
    raws = store.get_many([(metadata_key(p), None) for p in ancestors])
    missing = []
    for ancestor, raw in zip(ancestors, raws):
        if raw is None:
            missing.append(ancestor)
        elif isinstance(parse_node_metadata(raw, metadata_key(ancestor)), ArrayMetadata):
            raise NodeExistsError(f"cannot create {path!r}: its ancestor {ancestor or '/'!r} is an array")
    return missing


def ensure_parents(store: Store, path: str) -> list[Change]:
    """Write group metadata for every ancestor of ``path`` that has none; refuse to nest under an array.

    Returns the groups it created, as changes for :func:`refresh_consolidated`.
    """
    created = []
    for ancestor in missing_parents(store, path):
        store.set(metadata_key(ancestor), encode_metadata(GroupMetadata()))
        created.append(Change(ancestor, GroupMetadata().to_json()))
    return created


def consolidate_metadata(store: StoreLike, path: str = "", *, storage_options: dict[str, Any] | None = None) -> Group:
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


def create_array_at(store: Store, path: str, metadata: ArrayMetadata, overwrite: bool) -> Array:
    """Write ``metadata`` as a new array at ``path`` (and any missing ancestor groups); consolidated ancestors are refreshed."""
    created = _prepare_path(store, path, overwrite)
    store.set(metadata_key(path), encode_metadata(metadata))
    refresh_consolidated(store, [*created, Change(path, metadata.to_json(), replaces_subtree=overwrite)])
    return Array(store, path, metadata)


def create_group_at(store: Store, path: str, attributes: dict[str, Any] | None, overwrite: bool) -> Group:
    """Write a new group at ``path`` (and any missing ancestor groups); consolidated ancestors are refreshed."""
    created = _prepare_path(store, path, overwrite)
    metadata = GroupMetadata(attributes=dict(attributes or {}))
    store.set(metadata_key(path), encode_metadata(metadata))
    refresh_consolidated(store, [*created, Change(path, metadata.to_json(), replaces_subtree=overwrite)])
    return Group(store, path, metadata)


def _prepare_path(store: Store, path: str, overwrite: bool) -> list[Change]:
    """Make room for a new node at ``path``: erase (``overwrite``) or refuse an existing one.

    ``overwrite`` erases whatever is there without reading it, so a node whose
    metadata is invalid can always be replaced. Returns the ancestor groups
    it had to create.
    """
    existing = None if overwrite else read_node_metadata(store, path)
    if existing is not None:
        raise NodeExistsError(
            f"a {existing.node_type} already exists at {path or '/'!r} in {store!r}; pass overwrite=True (mode='w') "
            "to replace it (this deletes it and everything below it)"
        )
    if overwrite:
        if path:
            missing_parents(store, path)  # refuses to nest under an array before anything is erased
        store.delete_prefix(f"{path}/" if path else "")
    return ensure_parents(store, path) if path else []
