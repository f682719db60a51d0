"""Stores: the shared contract for every backend, plus backend-specific behaviour."""

from __future__ import annotations

import os
import pickle
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from zarr3_backend.errors import InvalidKeyError, StoreError
from zarr3_backend.store import (
    TMP_PREFIX,
    ByteRange,
    FsspecStore,
    LocalStore,
    Store,
    make_store,
    plain_values,
)
from zarr3_backend.store.fsspec_store import _is_missing
from zarr3_backend.testing.stores import SAMPLE, CountingStore, ReadOnlyStoreContract, StoreContract


def _fsspec_store(url: str, storage_options: dict[str, Any] | None = None) -> FsspecStore:
    """The fsspec store of ``url``, also where obstore would serve it (``"backend": "fsspec"``)."""
    options = (
        {**(storage_options or {}), "backend": "fsspec"}
        if url.startswith(("s3:", "http"))
        else storage_options
    )
    store = make_store(url, storage_options=options)
    assert isinstance(store, FsspecStore)
    return store


def _zip_sample(path: Path, inner: str = "") -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for key, value in SAMPLE.items():
            archive.writestr(inner + key, value)
    return path


# -- the contract, once per backend ---------------------------------------------------


class TestLocalStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Store:
        return LocalStore(tmp_path / "store")

    def read_only_view(self, store: Store) -> Store:
        assert isinstance(store, LocalStore)
        return LocalStore(store.root, read_only=True)


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[FsspecStore]:
        store = _fsspec_store(f"memory://contract-{uuid.uuid4().hex}")
        yield store
        if store.fs.exists(store.root):
            store.fs.rm(store.root, recursive=True)

    def read_only_view(self, store: Store) -> Store:
        assert isinstance(store, FsspecStore)
        return FsspecStore(store.fs, store.root, read_only=True)


class TestS3Store(StoreContract):
    @pytest.fixture(params=["", "/nested/root.zarr"], ids=["bucket", "nested"])
    def store(self, request: pytest.FixtureRequest, s3_url: str, s3_storage_options: dict[str, Any]) -> Store:
        return _fsspec_store(s3_url + request.param, storage_options=s3_storage_options)

    def read_only_view(self, store: Store) -> Store:
        assert isinstance(store, FsspecStore)
        return FsspecStore(store.fs, store.root, read_only=True)


class TestHttpStore(ReadOnlyStoreContract):
    """http(s) URLs: obstore's store by default."""

    supports_listing = False
    reports_generations = False

    @pytest.fixture
    def store(self, http_dir: Any) -> Store:
        LocalStore(http_dir.path).set_many(SAMPLE)
        return make_store(http_dir.url)


class TestFsspecHttpStore(TestHttpStore):
    @pytest.fixture
    def store(self, http_dir: Any) -> Store:
        LocalStore(http_dir.path).set_many(SAMPLE)
        return _fsspec_store(http_dir.url)


class TestZipStore(ReadOnlyStoreContract):
    @pytest.fixture(params=["", "data.zarr/"], ids=["top", "nested"])
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Store:
        path = _zip_sample(tmp_path / "sample.zip", inner=request.param)
        return make_store(f"zip://{request.param}::{path}")


# -- make_store ------------------------------------------------------------------------


def test_make_store_dispatch(tmp_path: Path, http_server: Any) -> None:
    assert make_store(tmp_path) == LocalStore(tmp_path)
    assert make_store(str(tmp_path), read_only=True) == LocalStore(tmp_path, read_only=True)
    assert make_store(f"file://{tmp_path}") == LocalStore(tmp_path)
    memory = make_store("memory://dispatch")
    assert isinstance(memory, FsspecStore) and not memory.read_only
    assert make_store(memory) is memory
    assert make_store(http_server.url).read_only
    zipped = _fsspec_store(f"zip://data::{_zip_sample(tmp_path / 'a.zip')}")
    assert zipped.read_only and zipped.url == f"zip://data::file://{tmp_path}/a.zip"
    assert make_store(zipped.url) == zipped


def test_make_store_refuses_misuse(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="storage_options"):
        make_store(LocalStore(tmp_path), storage_options={"anon": True})
    with pytest.raises(TypeError, match="storage_options"):
        make_store(tmp_path, storage_options={"anon": True})
    with pytest.raises(TypeError, match="int"):
        make_store(3)  # type: ignore[arg-type]


# -- LocalStore ------------------------------------------------------------------------


def _visible_files(root: str) -> list[str]:
    return sorted(name for _, _, files in os.walk(root) for name in files)


def test_local_failed_replace_keeps_old_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path)
    store.set("a/k", b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(StoreError, match="'a/k'") as info:
        store.set("a/k", b"new")
    assert isinstance(info.value.__cause__, OSError)
    monkeypatch.undo()
    assert store.get("a/k") == b"old"
    assert _visible_files(store.root) == ["k"] and list(store.list()) == ["a/k"]


def test_local_failed_write_keeps_old_value(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.set("k", b"old")
    released = memoryview(b"new")
    released.release()
    with pytest.raises(ValueError):
        store.set("k", released)
    assert store.get("k") == b"old" and os.listdir(store.root) == ["k"]


def test_local_temp_files_are_invisible(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.set("a/k", b"v")
    (tmp_path / "a" / f"{TMP_PREFIX}crashed").write_bytes(b"partial")
    (tmp_path / f"{TMP_PREFIX}crashed").write_bytes(b"partial")
    assert list(store.list()) == ["a/k"]
    assert store.list_dir("a/") == (["a/k"], []) and store.list_dir("") == ([], ["a/"])
    with pytest.raises(InvalidKeyError, match="reserved"):
        store.set(f"a/{TMP_PREFIX}x", b"")


def test_local_delete_prunes_empty_directories(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root")
    store.set_many({"a/b/c/k": b"1", "a/x": b"2"})
    store.delete("a/b/c/k")
    assert sorted(os.listdir(tmp_path / "root" / "a")) == ["x"]
    store.delete_prefix("a/")
    assert os.listdir(tmp_path / "root") == []


def test_local_large_values_read_in_threads(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    values = {f"c/{i}": os.urandom(1 << 20) + bytes([i]) for i in range(4)}
    store.set_many(values)
    requests = [
        ("c/0", None),
        ("missing", None),
        ("c/1", ByteRange.suffix(1)),
        ("c/3", None),
        ("c/2", ByteRange(5, 9)),
    ]
    expected = [values["c/0"], None, b"\x01", values["c/3"], values["c/2"][5:9]]
    assert plain_values(store.get_many_versioned(requests)) == expected


def test_local_requests_of_one_key_are_read_through_one_open_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    store.set_many({"c/0": bytes(range(100)), "c/1": b"other"})
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *args: (opened.append(path), real_open(path, *args))[1])
    got = store.get_many_versioned(
        [("c/0", ByteRange.suffix(4)), ("c/1", None), ("c/0", ByteRange(0, 2)), ("c/0", None)]
    )
    assert plain_values(got) == [bytes(range(96, 100)), b"other", b"\x00\x01", bytes(range(100))]
    assert sorted(opened) == [os.path.join(store.root, "c", "0"), os.path.join(store.root, "c", "1")]
    assert got[0].generation == got[2].generation == got[3].generation != got[1].generation


def test_local_key_under_a_missing_directory_is_missing_without_an_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    store.set("c/0/0", b"v")
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *args: (opened.append(path), real_open(path, *args))[1])
    assert plain_values(store.get_many_versioned([("c/7/0", None), ("c/0/1", None), ("c/0/0", None)])) == [
        None,
        None,
        b"v",
    ]
    assert opened == [os.path.join(store.root, "c", "0", "1"), os.path.join(store.root, "c", "0", "0")]
    store.set("c/7/0", b"new")  # a directory made later is read: nothing remembers it missing
    assert store.get("c/7/0") == b"new"


def test_local_concurrent_writes_and_deletes(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)

    def churn(worker: int) -> None:
        for i in range(30):
            store.set(f"a/b/{worker}", bytes([i]) * 1000)
            assert store.get(f"a/b/{worker}") == bytes([i]) * 1000
            store.delete(f"a/b/{worker}")

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(churn, range(6)))
    assert list(store.list()) == [] and _visible_files(store.root) == []


def test_local_unreadable_file_is_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path)
    store.set("a/k", b"v")

    def denied(*args: Any, **kwargs: Any) -> int:
        raise PermissionError("denied")

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(StoreError, match=r"a/k.*denied"):
        store.get("a/k")


def test_local_pickle_and_identity(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, read_only=True)
    assert pickle.loads(pickle.dumps(store)) == store and hash(store) == hash(
        LocalStore(tmp_path, read_only=True)
    )
    assert store != LocalStore(tmp_path) and repr(store) == f"LocalStore({str(tmp_path)!r}, read_only=True)"
    assert store.url == f"file://{tmp_path}" and LocalStore(store.url, read_only=True) == store


# -- FsspecStore -----------------------------------------------------------------------


def test_memory_pickle_shares_the_process_file_system() -> None:
    store = _fsspec_store(f"memory://pickle-{uuid.uuid4().hex}")
    clone = pickle.loads(pickle.dumps(store))
    clone.set("k", b"v")
    assert store.get("k") == b"v" and clone == store and hash(clone) == hash(store)
    assert store.url.startswith("memory:///pickle-") and repr(store) == f"FsspecStore({store.url!r})"
    assert store != FsspecStore(store.fs, store.root, read_only=True)


def test_fsspec_errors_become_store_error(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _fsspec_store(f"memory://errors-{uuid.uuid4().hex}")
    store.set("k", b"v")

    def broken(*args: Any, **kwargs: Any) -> bytes:
        raise PermissionError("denied")

    monkeypatch.setattr(store.fs, "cat_file", broken)
    with pytest.raises(StoreError, match="'k'"):
        store.get("k")


def test_raw_s3_missing_codes_count_as_missing() -> None:
    botocore = pytest.importorskip("botocore.exceptions")
    error = botocore.ClientError({"Error": {"Code": "NoSuchKey", "Message": "gone"}}, "GetObject")
    assert _is_missing(error) and not _is_missing(OSError("other"))


def test_s3_pickle_round_trip(s3_url: str, s3_storage_options: dict[str, Any]) -> None:
    store = _fsspec_store(s3_url + "/p", storage_options=s3_storage_options)
    store.set("k", b"v")
    clone = pickle.loads(pickle.dumps(CountingStore(store)))
    assert clone.inner == store and clone.get("k") == b"v" and clone.counts["get"] == 1


def _spy_calls(monkeypatch: pytest.MonkeyPatch, fs: Any) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    original = fs._call_s3

    async def spy(method: str, *args: Any, **kwargs: Any) -> Any:
        calls.append((method, kwargs))
        result: Any = await original(method, *args, **kwargs)
        return result

    monkeypatch.setattr(fs, "_call_s3", spy)
    return calls


def test_s3_requests_are_single_gets(
    s3_url: str, s3_storage_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _fsspec_store(s3_url, storage_options=s3_storage_options)
    store.set("k", bytes(100))
    calls = _spy_calls(monkeypatch, store.fs)
    assert store.get("k") == bytes(100) and store.get("k", ByteRange.suffix(4)) == bytes(4)
    assert store.get("k", ByteRange(10, 20)) == bytes(10)
    assert [method for method, _ in calls] == ["get_object"] * 3
    assert [kwargs.get("Range") for _, kwargs in calls] == [None, "bytes=-4", "bytes=10-19"]


def test_s3_get_many_is_one_concurrent_batch(
    s3_url: str, s3_storage_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    store = _fsspec_store(s3_url, storage_options=s3_storage_options)
    store.set_many({f"c/{i}": bytes([i]) * 10 for i in range(30)})
    in_flight = peak = 0
    original = store.fs._call_s3

    async def tracking(*args: Any, **kwargs: Any) -> Any:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            await asyncio.sleep(0.01)
            return await original(*args, **kwargs)
        finally:
            in_flight -= 1

    monkeypatch.setattr(store.fs, "_call_s3", tracking)
    requests = [(f"c/{i}", ByteRange(0, 2) if i % 2 else None) for i in range(40)]
    expected = [None if i >= 30 else bytes([i]) * (2 if i % 2 else 10) for i in range(40)]
    assert plain_values(store.get_many_versioned(requests)) == expected
    assert peak > 10


def test_s3_other_errors_become_store_error(
    s3_url: str, s3_storage_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _fsspec_store(s3_url, storage_options=s3_storage_options)

    async def broken(*args: Any, **kwargs: Any) -> bytes:
        raise RuntimeError("connection reset")

    monkeypatch.setattr(store.fs, "_call_s3", broken)
    with pytest.raises(StoreError, match=r"'chunk/0'.*connection reset"):
        store.get_many_versioned([("chunk/0", None)])


# -- CountingStore ----------------------------------------------------------------------


def test_counting_store_counts_and_records(tmp_path: Path) -> None:
    store = CountingStore(LocalStore(tmp_path))
    store.set_many({"a": b"1", "b": b"22"})
    assert plain_values(store.get_many_versioned([("a", None), ("b", ByteRange.suffix(1))])) == [b"1", b"2"]
    assert store.get("zz") is None and store.exists("a") and list(store.list()) == ["a", "b"]
    assert store.counts == {"set_many": 1, "get_many": 1, "get": 1, "exists": 1, "list": 1}
    assert store.requests == [("a", None), ("b", ByteRange.suffix(1)), ("zz", None)]
    clone = pickle.loads(pickle.dumps(store))
    assert clone.counts == store.counts and clone.get("a") == b"1"
    store.reset()
    assert not store.counts and not store.requests and clone.counts["get"] == 2


# -- the HTTP test server ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "status", "body"),
    [("bytes=2-4", 206, b"234"), ("bytes=-3", 206, b"789"), ("bytes=-30", 206, b"0123456789"),
     ("bytes=8-", 206, b"89"), ("bytes=10-", 416, b""), ("bytes=-0", 416, b""), ("", 200, b"0123456789")],
)  # fmt: skip
def test_http_server_ranges(http_dir: Any, header: str, status: int, body: bytes) -> None:
    (http_dir.path / "f").write_bytes(b"0123456789")
    request = urllib.request.Request(f"{http_dir.url}/f", headers={"Range": header} if header else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            got = (response.status, response.read())
    except urllib.error.HTTPError as error:
        got = (error.code, b"")
    assert got == (status, body)


def test_s3_large_values_go_up_as_one_multipart_upload(
    s3_url: str, s3_storage_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # s3fs switches to a multipart upload at 100 MiB: a large shard must arrive whole, as one object.
    store = _fsspec_store(s3_url, storage_options=s3_storage_options)
    data = np.random.default_rng(0).integers(0, 256, (100 << 20) + 12345, dtype=np.uint8).tobytes()
    calls = _spy_calls(monkeypatch, store.fs)
    store.set("big", (memoryview(data)[:7], memoryview(data)[7:]))  # pieces, as shards are written
    methods = [method for method, _ in calls]
    assert methods[0] == "create_multipart_upload" and methods[-1] == "complete_multipart_upload"
    assert methods.count("upload_part") >= 2 and "put_object" not in methods
    boundary = 50 << 20
    assert store.get("big", ByteRange(boundary - 3, boundary + 3)) == data[boundary - 3 : boundary + 3]
    assert store.get("big") == data
