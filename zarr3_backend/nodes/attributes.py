"""``node.attrs``: a node's user attributes as a mutable mapping that writes every change back."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol

from ..core.metadata import ArrayMetadata, GroupMetadata

if TYPE_CHECKING:
    from _typeshed import SupportsKeysAndGetItem


class _AttributeOwner(Protocol):
    """A node whose attributes `Attributes` reads and replaces (an array or a group)."""

    @property
    def metadata(self) -> ArrayMetadata | GroupMetadata: ...

    def replace_attributes(self, attributes: dict[str, Any]) -> None: ...


class Attributes(MutableMapping[str, Any]):
    """User attributes of a node; every change is written back to its ``zarr.json``."""

    def __init__(self, node: _AttributeOwner) -> None:
        self._node = node

    def _data(self) -> dict[str, Any]:
        return self._node.metadata.attributes

    def __getitem__(self, key: str) -> Any:
        return self._data()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        attributes = dict(self._data())
        del attributes[key]
        self._node.replace_attributes(attributes)

    def update(
        self, other: SupportsKeysAndGetItem[str, Any] | Iterable[tuple[str, Any]] = (), /, **kwargs: Any
    ) -> None:
        """Change several attributes with one metadata write (arguments as for `dict.update()`)."""
        self._node.replace_attributes({**self._data(), **dict(other), **kwargs})

    def asdict(self) -> dict[str, Any]:
        return dict(self._data())

    def __repr__(self) -> str:
        return repr(self._data())
