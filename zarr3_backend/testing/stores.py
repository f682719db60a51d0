"""Store test helpers: a request-counting wrapper and the shared `StoreContract`.

To test a new store, subclass the contract and provide a ``store`` fixture::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path)             # empty and writable

        def read_only_view(self, store):
            return MyStore(store.root, read_only=True)

Read-only stores (http, zip) use `ReadOnlyStoreContract`, whose
``store`` fixture must already hold `SAMPLE`.
"""

from __future__ import annotations

import builtins
import pickle
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from ..core.buffers import as_bytes
from ..errors import InvalidKeyError, ReadOnlyError
from ..store.base import ByteRange, Request, Store, Value, Versioned, plain_values
from ..store.streamed_reads import stream_reads

__all__ = ["BAD_KEYS", "BAD_PREFIXES", "SAMPLE", "CountingStore", "ReadOnlyStoreContract", "StoreContract"]

#: Keys and values every contract check starts from.
SAMPLE: dict[str, bytes] = {
    "zarr.json": b'{"zarr_format": 3, "node_type": "group"}',
    "a/zarr.json": b"{}",
    "a/c/0": bytes(range(100)),
    "a/c/1": b"",
    "b/x/y/z": b"deep",
}
BAD_KEYS = [
    "",
    "/a",
    "a/",
    "a//b",
    "..",
    "../x",
    "a/../b",
    ".",
    "a/./b",
    "a\\b",
    "%2e%2e/x",
    "a/..%2Fb",
    "%2E%2e",
    "a%5cb",
    "a\0b",
    "%252e%252e/x",
]
BAD_PREFIXES = ["a", "/", "/a/", "../", "a//", "./"]

_VALUE = SAMPLE["a/c/0"]
_RANGES = [
    ByteRange(0, 4), ByteRange(10), ByteRange(95, 200), ByteRange(200), ByteRange(200, 300),
    ByteRange(5, 5), ByteRange(7, 3), ByteRange(0), ByteRange.suffix(1), ByteRange.suffix(10),
    ByteRange.suffix(1000), ByteRange(-10, -5), ByteRange(3, -3), ByteRange(-5, 100),
]  # fmt: skip
_MISSING_RANGES = [None, ByteRange(0, 0), ByteRange(0, 4), ByteRange.suffix(4), ByteRange(-3, -1)]
_EMPTY_VALUE_RANGES = [None, ByteRange(0, 0), ByteRange(0, 1), ByteRange(0), ByteRange.suffix(4)]


class CountingStore(Store):
    """Wrap ``inner``, forward every call, and count them.

    ``counts`` counts public method calls by name (a `get_many_versioned`
    batch counts as ``"get_many"``: one batched read); ``requests`` lists
    every ``(key, byte_range)`` read through `get` or `get_many_versioned`,
    in order. `reset` clears both. Pickles (the counts travel along).

    >>> import fsspec
    >>> from zarr3_backend.store import FsspecStore
    >>> store = CountingStore(FsspecStore(fsspec.filesystem("memory"), "/counting-doc"))
    >>> store.get_many_versioned([("a", None), ("b", ByteRange(0, 2))])
    [Versioned(value=None, generation=None), Versioned(value=None, generation=None)]
    >>> store.counts["get_many"], store.requests
    (1, [('a', None), ('b', ByteRange(start=0, end=2))])
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.read_only = inner.read_only
        self.counts: Counter[str] = Counter()
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CountingStore({self.inner!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {name: value for name, value in self.__dict__.items() if name != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget all counts and requests."""
        with self._lock:
            self.counts.clear()
            self.requests.clear()

    def _count(self, name: str, requests: Iterable[Request] = ()) -> None:
        with self._lock:
            self.counts[name] += 1
            self.requests.extend(requests)

    def get_many_versioned(self, requests: Sequence[Request]) -> builtins.list[Versioned]:
        requests = list(requests)
        self._count("get_many", requests)
        return self.inner.get_many_versioned(requests)

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes | None:
        self._count("get", [(key, byte_range)])
        return self.inner.get(key, byte_range)

    def exists(self, key: str) -> bool:
        self._count("exists")
        return self.inner.exists(key)

    def set(self, key: str, value: Value) -> None:
        self._count("set")
        self.inner.set(key, value)

    def set_many(self, items: Mapping[str, Value]) -> None:
        self._count("set_many")
        self.inner.set_many(items)

    def delete(self, key: str) -> None:
        self._count("delete")
        self.inner.delete(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        self._count("delete_many")
        self.inner.delete_many(keys)

    def delete_prefix(self, prefix: str) -> None:
        self._count("delete_prefix")
        self.inner.delete_prefix(prefix)

    def list(self) -> Iterator[str]:
        self._count("list")
        return self.inner.list()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        self._count("list_prefix")
        return self.inner.list_prefix(prefix)

    def list_dir(self, prefix: str) -> tuple[builtins.list[str], builtins.list[str]]:
        self._count("list_dir")
        return self.inner.list_dir(prefix)


class _ReadChecks:
    """Checks that only read; ``populated(store)`` must return a store holding `SAMPLE`."""

    supports_listing = True
    #: Whether ``get_many_versioned`` reports generations (``False``: ``None`` = unknown).
    reports_generations = True

    def populated(self, store: Store) -> Store:
        raise NotImplementedError

    def test_get_whole_values(self, store: Store) -> None:
        store = self.populated(store)
        assert {key: store.get(key) for key in SAMPLE} == SAMPLE

    @pytest.mark.parametrize("byte_range", _MISSING_RANGES, ids=repr)
    def test_get_missing_is_none(self, store: Store, byte_range: ByteRange | None) -> None:
        store = self.populated(store)
        assert store.get("missing/key", byte_range) is None
        assert store.get("a", byte_range) is None  # a prefix, not a key

    @pytest.mark.parametrize("byte_range", _RANGES, ids=repr)
    def test_get_range_has_slice_semantics(self, store: Store, byte_range: ByteRange) -> None:
        assert self.populated(store).get("a/c/0", byte_range) == _VALUE[byte_range.slice()]

    @pytest.mark.parametrize("byte_range", _EMPTY_VALUE_RANGES, ids=repr)
    def test_get_range_of_empty_value(self, store: Store, byte_range: ByteRange | None) -> None:
        assert self.populated(store).get("a/c/1", byte_range) == b""

    def test_get_many_keeps_order(self, store: Store) -> None:
        store = self.populated(store)
        requests: list[Request] = []
        expected: list[bytes | None] = []
        for i in range(40):
            key = list(SAMPLE)[i % len(SAMPLE)] if i % 3 else f"missing/{i}"
            byte_range = ByteRange(i % 7, i % 7 + 5) if i % 2 else None
            requests.append((key, byte_range))
            value = SAMPLE.get(key)
            expected.append(value if value is None or byte_range is None else value[byte_range.slice()])
        assert plain_values(store.get_many_versioned(requests)) == expected
        assert store.get_many_versioned([]) == []

    @pytest.mark.parametrize("byte_range", [None, *_RANGES], ids=repr)
    def test_get_many_versioned_reads_what_get_reads(
        self, store: Store, byte_range: ByteRange | None
    ) -> None:
        store = self.populated(store)
        requests: list[Request] = [("a/c/0", byte_range), ("a/c/1", byte_range), ("missing/key", byte_range)]
        reads = store.get_many_versioned(requests)
        assert plain_values(reads) == [store.get(key, byte_range) for key, byte_range in requests]
        assert reads[2] == Versioned(None)

    def test_stream_reads_answers_every_request_once(self, store: Store) -> None:
        store = self.populated(store)
        requests: list[Request] = [(key, None) for key in [*SAMPLE, "missing/key"]]
        stream = stream_reads(store, requests)
        stream.send_first([len(requests) - 1, 0])
        answered = {index: read.value for index, read in stream}
        assert {i: as_bytes(value) for i, value in answered.items()} == dict(
            enumerate([*SAMPLE.values(), None])
        )

    def test_declares_its_capabilities(self, store: Store) -> None:
        store = self.populated(store)
        assert store.versioned_reads is self.reports_generations
        assert isinstance(store.io_concurrency, int) and store.io_concurrency >= 1

    def test_generation_is_the_same_for_every_range_of_one_version(self, store: Store) -> None:
        if not self.reports_generations:
            pytest.skip("store does not report generations")
        store = self.populated(store)
        reads = store.get_many_versioned([("a/c/0", r) for r in (None, ByteRange(0, 4), ByteRange.suffix(8))])
        generations = {read.generation for read in reads}
        assert len(generations) == 1 and None not in generations
        assert store.get_many_versioned([("a/c/0", None)])[0].generation in generations
        assert store.get_many_versioned([("a/zarr.json", None)])[0].generation not in generations

    def test_exists(self, store: Store) -> None:
        store = self.populated(store)
        assert all(store.exists(key) for key in SAMPLE)
        assert not store.exists("missing") and not store.exists("a") and not store.exists("a/c")

    def test_list(self, store: Store) -> None:
        if not self.supports_listing:
            pytest.skip("store does not support listing")
        store = self.populated(store)
        assert sorted(store.list()) == sorted(SAMPLE)
        assert sorted(store.list_prefix("a/")) == ["a/c/0", "a/c/1", "a/zarr.json"]
        assert sorted(store.list_prefix("b/x/")) == ["b/x/y/z"]
        assert list(store.list_prefix("missing/")) == []

    def test_list_dir(self, store: Store) -> None:
        if not self.supports_listing:
            pytest.skip("store does not support listing")
        store = self.populated(store)
        assert _sorted_dir(store.list_dir("")) == (["zarr.json"], ["a/", "b/"])
        assert _sorted_dir(store.list_dir("a/")) == (["a/zarr.json"], ["a/c/"])
        assert _sorted_dir(store.list_dir("a/c/")) == (["a/c/0", "a/c/1"], [])
        assert _sorted_dir(store.list_dir("b/x/")) == ([], ["b/x/y/"])
        assert store.list_dir("missing/") == ([], [])

    @pytest.mark.parametrize("key", BAD_KEYS)
    def test_bad_keys_refused_on_read(self, store: Store, key: str) -> None:
        with pytest.raises(InvalidKeyError):
            store.get(key)
        with pytest.raises(InvalidKeyError):
            store.get_many_versioned([("zarr.json", None), (key, ByteRange(0, 1))])

    @pytest.mark.parametrize("prefix", BAD_PREFIXES)
    def test_bad_prefixes_refused(self, store: Store, prefix: str) -> None:
        with pytest.raises(InvalidKeyError):
            store.list_dir(prefix)
        with pytest.raises(InvalidKeyError):
            list(store.list_prefix(prefix))

    def test_pickle_round_trip(self, store: Store) -> None:
        store = self.populated(store)
        clone = pickle.loads(pickle.dumps(store))
        assert type(clone) is type(store) and clone.read_only == store.read_only
        assert plain_values(clone.get_many_versioned([(key, None) for key in SAMPLE])) == list(
            SAMPLE.values()
        )


class StoreContract(_ReadChecks):
    """Every `Store` law; subclasses provide an empty, writable ``store`` fixture."""

    def populated(self, store: Store) -> Store:
        store.set_many(SAMPLE)
        return store

    def read_only_view(self, store: Store) -> Store:
        """A read-only store over the same data; override to run `test_read_only_view()`."""
        pytest.skip(f"{type(self).__name__} defines no read_only_view")

    @pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
    def test_set_accepts_buffers(self, store: Store, kind: type) -> None:
        store.set("k", kind(b"abc"))
        assert store.get("k") == b"abc"

    @pytest.mark.parametrize("kind", [tuple, list])
    def test_set_accepts_pieces(self, store: Store, kind: type) -> None:
        store.set("k", kind([b"ab", memoryview(b"cd"), bytearray(b"")]))
        assert store.get("k") == b"abcd"

    def test_overwrite_replaces_whole_value(self, store: Store) -> None:
        store.set("a/k", bytes(1000))
        store.set("a/k", b"xyz")
        assert store.get("a/k") == b"xyz"

    def test_create_stores_only_where_nothing_is(self, store: Store) -> None:
        assert store.create("a/new", b"first") is True
        assert store.create("a/new", b"second") is False
        assert store.get("a/new") == b"first"
        store.delete("a/new")
        assert store.create("a/new", b"third") is True and store.get("a/new") == b"third"

    def test_atomic_create_has_one_winner(self, store: Store) -> None:
        """Where `Store.atomic_create` holds, of many threads creating one key exactly one succeeds."""
        if not store.atomic_create:
            return
        import threading

        won = [False] * 16
        start = threading.Barrier(len(won))

        def create(i: int) -> None:
            start.wait()
            won[i] = store.create("a/race", b"%d" % i)

        threads = [threading.Thread(target=create, args=(i,)) for i in range(len(won))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert won.count(True) == 1
        assert store.get("a/race") == b"%d" % won.index(True)

    def test_delete(self, store: Store) -> None:
        store = self.populated(store)
        store.delete("a/c/0")
        store.delete("a/c/0")  # missing: no error
        store.delete("never/was")
        assert store.get("a/c/0") is None
        assert sorted(store.list()) == sorted(set(SAMPLE) - {"a/c/0"})

    def test_delete_many(self, store: Store) -> None:
        store = self.populated(store)
        store.delete_many(["a/c/0", "b/x/y/z", "missing"])
        assert sorted(store.list()) == ["a/c/1", "a/zarr.json", "zarr.json"]

    def test_delete_prefix(self, store: Store) -> None:
        store = self.populated(store)
        store.delete_prefix("a/")
        store.delete_prefix("missing/")
        assert sorted(store.list()) == ["b/x/y/z", "zarr.json"]
        assert store.get("zarr.json") == SAMPLE["zarr.json"]
        store.delete_prefix("")
        assert list(store.list()) == []

    def test_values_with_similar_names_stay_apart(self, store: Store) -> None:
        store.set_many({"ab": b"1", "a/b": b"2", "a.b": b"3"})
        store.delete_prefix("a/")
        assert sorted(store.list()) == ["a.b", "ab"]

    @pytest.mark.parametrize("key", BAD_KEYS)
    def test_bad_keys_refused_on_write(self, store: Store, key: str) -> None:
        calls: list[Callable[[], None]] = [
            lambda: store.set(key, b"x"),
            lambda: store.set_many({key: b"x"}),
            lambda: store.delete(key),
        ]
        for call in calls:
            with pytest.raises(InvalidKeyError):
                call()
        assert list(store.list()) == []

    def test_rewrite_changes_the_generation(self, store: Store) -> None:
        if not self.reports_generations:
            pytest.skip("store does not report generations")
        seen = set()
        for version in range(4):  # same size every time: only the generation tells them apart
            store.set("a/k", bytes([version]) * 64)
            read = store.get_many_versioned([("a/k", ByteRange(0, 8))])[0]
            assert read.value == bytes([version]) * 8 and read.generation is not None
            seen.add(read.generation)
        assert len(seen) == 4

    def test_read_only_view(self, store: Store) -> None:
        view = self.read_only_view(self.populated(store))
        assert view.read_only and view.get("a/c/0") == _VALUE
        _check_writes_refused(view)
        assert store.get("a/c/0") == _VALUE


class ReadOnlyStoreContract(_ReadChecks):
    """Laws for read-only stores; the ``store`` fixture must already hold `SAMPLE`."""

    def populated(self, store: Store) -> Store:
        return store

    def test_writes_refused(self, store: Store) -> None:
        assert store.read_only
        _check_writes_refused(store)
        assert store.get("a/c/0") == _VALUE


def _check_writes_refused(store: Store) -> None:
    calls: list[Callable[[], object]] = [
        lambda: store.set("a/c/0", b"new"),
        lambda: store.create("new", b"x"),
        lambda: store.set_many({"new": b"x"}),
        lambda: store.delete("a/c/0"),
        lambda: store.delete_many(["a/c/0"]),
        lambda: store.delete_prefix("a/"),
    ]
    for call in calls:
        with pytest.raises(ReadOnlyError):
            call()


def _sorted_dir(listing: tuple[list[str], list[str]]) -> tuple[list[str], list[str]]:
    return sorted(listing[0]), sorted(listing[1])
