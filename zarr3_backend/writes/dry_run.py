"""A dry run of a publication: the store as it will be once a prefix is erased, with writes recorded, not made.

`CheckedTarget.publish_first_write()` publishes a first write against a
`DryRunStore` view first, so every read and check of the publication
(the existing root, the tree walked for consolidated metadata) runs before
the store is touched; the recorded writes are then made with `DryRunStore.replay()`.

>>> from zarr3_backend.store import make_store
>>> base = make_store("memory://doc/staged")
>>> base.set("old/zarr.json", b"{}")
>>> staged = DryRunStore(base, "old/")
>>> staged.set("new/zarr.json", b"{}")
>>> staged.list_dir(""), base.exists("new/zarr.json")
(([], ['new/']), False)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..store.base import Request, Store, Value, Versioned, join_value


@dataclass(repr=False)
class DryRunStore(Store):
    """``base`` as it will be once ``hidden`` (a prefix; ``""``: everything) is erased, writes recorded, not made.

    A dry run of a publication: reads see the recorded writes, then what
    ``base`` keeps; `replay()` makes the writes, in order.
    """

    base: Store
    hidden: str | None
    writes: dict[str, bytes | None] = field(default_factory=dict)  # None: deleted

    def __repr__(self) -> str:
        return repr(self.base)

    @property
    def io_concurrency(self) -> int:
        return self.base.io_concurrency

    def _visible(self, key: str) -> bool:
        return self.hidden is None or not key.startswith(self.hidden)

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        """The staged writes over ``base``; a staged value's generation is unknown (``None``)."""
        fetched = iter(
            self.base.get_many_versioned(
                [r for r in requests if r[0] not in self.writes and self._visible(r[0])]
            )
        )
        values = []
        for key, byte_range in requests:
            if key in self.writes:
                value = self.writes[key]
                staged = value if value is None or byte_range is None else value[byte_range.slice()]
                values.append(Versioned(staged))
            else:
                values.append(next(fetched) if self._visible(key) else Versioned(None))
        return values

    def set(self, key: str, value: Value) -> None:
        self.writes.pop(key, None)  # replayed in the order of the last writes
        self.writes[key] = join_value(value)

    def delete(self, key: str) -> None:
        self.writes.pop(key, None)
        self.writes[key] = None

    def list_prefix(self, prefix: str) -> Iterator[str]:
        kept = {k for k in self.base.list_prefix(prefix) if self._visible(k) and k not in self.writes}
        return iter(
            sorted(kept | {k for k, v in self.writes.items() if v is not None and k.startswith(prefix)})
        )

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        keys, prefixes = self.base.list_dir(prefix) if self._visible(prefix) else ([], [])
        found = {k for k in keys if self._visible(k) and k not in self.writes}
        below = {p for p in prefixes if self._visible(p)}
        for key, value in self.writes.items():
            rest = key[len(prefix) :] if key.startswith(prefix) and value is not None else None
            if rest is not None and "/" in rest:
                below.add(prefix + rest.split("/")[0] + "/")
            elif rest is not None:
                found.add(key)
        return sorted(found), sorted(below)

    def replay(self, keys: Sequence[str]) -> None:
        """Make the recorded writes of ``keys`` on ``base``, in the order given."""
        for key in keys:
            value = self.writes[key]
            if value is None:
                self.base.delete(key)
            else:
                self.base.set(key, value)
