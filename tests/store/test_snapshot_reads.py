"""Reads are consistent snapshots of each shard, even while other handles or processes rewrite it.

Every version ``v`` of the test array stores, in each shard, inner chunks of
distinct constants; which inner chunk is empty (the fill value, not stored)
alternates between versions, so the byte layout of a shard changes while its
size stays the same. A stale index then points at valid bytes of the wrong
inner chunk: crc32c passes, and only the values show the mix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend import ConcurrentModificationError
from zarr3_backend.store import LocalStore, ObstoreStore, Store, Versioned, make_store
from zarr3_backend.store.base import ByteRange, Request
from zarr3_backend.testing.stores import CountingStore

SHAPE, SHARDS, CHUNKS = (4, 16), (4, 8), (4, 2)  # 2 shards of 4 inner chunks each
INDEX_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]


def version(v: int) -> np.ndarray:
    """Version ``v``: inner chunk ``c`` of shard ``s`` holds ``1000 v + 10 s + c + 1``; one chunk per shard is empty."""
    data = np.zeros(SHAPE, dtype="int32")
    empty = 3 if v % 2 == 0 else 0
    for s in range(2):
        for c in range(4):
            if c != empty:
                start = s * 8 + c * 2
                data[:, start : start + 2] = 1000 * v + 10 * s + c + 1
    return data


def create(store: Any, **kwargs: Any) -> zarr3_backend.Array:
    a = zarr3_backend.create_array(
        store,
        "v",
        shape=SHAPE,
        dtype="int32",
        chunks=CHUNKS,
        shards=SHARDS,
        fill_value=0,
        compressors=None,
        index_codecs=INDEX_CODECS,
        dimension_names=("y", "x"),
        **kwargs,
    )
    a[...] = version(0)
    return a


def matching_versions(got: np.ndarray, columns: slice, versions: range) -> list[int] | None:
    """Per shard the selection touches, the version its values equal; ``None`` if some shard matches none."""
    found = []
    for s in range(2):
        lo, hi = max(columns.start, s * 8), min(columns.stop, (s + 1) * 8)
        if lo >= hi:
            continue
        part = got[:, lo - columns.start : hi - columns.start]
        match = [v for v in versions if np.array_equal(part, version(v)[:, lo:hi])]
        if not match:
            return None
        found.append(match[0])
    return found


def test_stale_layout_really_moves_inner_chunks():
    """The fixture's premise: versions 0 and 1 have the same shard sizes but different layouts."""
    a = create(zarr3_backend.store.make_store("memory://snapshot-premise"), overwrite=True)
    raw0 = a.store.get("v/c/0/0")
    a[...] = version(1)
    raw1 = a.store.get("v/c/0/0")
    assert len(raw0) == len(raw1) and raw0[-68:-4] != raw1[-68:-4]  # same size, different index


# -- (a) a long-lived handle sees another handle's rewrite ---------------------------------


@pytest.mark.parametrize(
    "columns", [slice(2, 6), slice(3, 13), slice(0, 16)], ids=["partial", "both-shards", "all"]
)
def test_long_lived_array_reads_the_rewritten_shard(tmp_path, columns):
    create(str(tmp_path))
    reader = zarr3_backend.open_array(str(tmp_path), "v")
    np.testing.assert_array_equal(reader[:, 2:6], version(0)[:, 2:6])  # caches the shard index
    writer = zarr3_backend.open_array(str(tmp_path), "v", mode="r+")
    for v in (1, 2, 3):
        writer[...] = version(v)
        np.testing.assert_array_equal(reader[:, columns], version(v)[:, columns])


@pytest.mark.parametrize("columns", [slice(2, 6), slice(0, 16)], ids=["partial", "all"])
def test_in_place_same_size_rewrite_with_mtime_set_back_is_not_read_through_a_stale_index(tmp_path, columns):
    """As ``cp -p`` or ``rsync --inplace -t`` leave a shard: same inode, same size, same mtime, new bytes."""
    create(str(tmp_path / "old"))
    new = create(str(tmp_path / "new"))
    new[...] = version(1)
    shard, replacement = (
        tmp_path / "old" / "v" / "c" / "0" / "0",
        (tmp_path / "new" / "v" / "c" / "0" / "0").read_bytes(),
    )
    reader = zarr3_backend.open_array(str(tmp_path / "old"), "v")
    np.testing.assert_array_equal(reader[:, 2:6], version(0)[:, 2:6])  # caches the index of shard (0, 0)
    before = os.stat(shard)
    time.sleep(0.05)  # past the file system's timestamp granularity, so the rewrite gets a later ctime
    with open(shard, "r+b") as file:
        file.write(replacement)
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(shard)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    expected = version(0)
    expected[:, :8] = version(1)[:, :8]  # shard (0, 0) rewritten, shard (0, 1) as it was
    np.testing.assert_array_equal(reader[:, columns], expected[:, columns])


def test_warm_point_read_stays_one_request_per_shard(tmp_path):
    create(str(tmp_path))
    counting = CountingStore(LocalStore(tmp_path))
    reader = zarr3_backend.open_array(counting, "v")
    reader[1, 3:12]
    counting.reset()
    np.testing.assert_array_equal(reader[1, 3:12], version(0)[1, 3:12])
    # one round: a range per shard, and its index read again beside it (a file's generation proves nothing)
    assert counting.counts["get_many"] == 1 and len(counting.requests) == 4
    zarr3_backend.open_array(str(tmp_path), "v", mode="r+")[...] = version(1)
    counting.reset()
    np.testing.assert_array_equal(reader[1, 3:12], version(1)[1, 3:12])
    assert counting.counts["get_many"] == 2  # stale ranges with the new indexes, then new ranges


def test_cached_index_finding_nothing_stored_still_checks_the_shard(tmp_path):
    create(str(tmp_path))
    reader = zarr3_backend.open_array(str(tmp_path), "v")
    assert (reader[:, 6:8] == 0).all()  # inner chunk 3 of shard 0 is empty in even versions
    zarr3_backend.open_array(str(tmp_path), "v", mode="r+")[...] = version(1)
    np.testing.assert_array_equal(reader[:, 6:8], version(1)[:, 6:8])


def test_deleted_shard_reads_as_fill_through_a_cached_index(tmp_path):
    create(str(tmp_path))
    reader = zarr3_backend.open_array(str(tmp_path), "v")
    reader[:, 2:4]
    zarr3_backend.open_array(str(tmp_path), "v", mode="r+")[:, :8] = 0
    assert not LocalStore(tmp_path).exists("v/c/0/0")
    assert (reader[:, 2:4] == 0).all()


class _AlwaysChanging(Store):
    """Reports a new generation on every read, as if a writer replaced the shard each time."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.read_only, self.rounds = inner, True, 0

    def get_many_versioned(self, requests: list[Request]) -> list[Versioned]:
        self.rounds += 1
        return [Versioned(read.value, object()) for read in self.inner.get_many_versioned(requests)]

    def set(self, key: str, value: Any) -> None:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def list_prefix(self, prefix: str) -> Any:
        return self.inner.list_prefix(prefix)

    def list_dir(self, prefix: str) -> Any:
        return self.inner.list_dir(prefix)


def test_retries_are_bounded_then_a_clear_error(tmp_path):
    create(str(tmp_path))
    store = _AlwaysChanging(LocalStore(tmp_path))
    reader = zarr3_backend.open_array(store, "v")
    rounds = store.rounds
    with pytest.raises(ConcurrentModificationError, match=r"v/c/0/0: the shard changed .* 8 attempts"):
        reader[:, 2:4]
    assert store.rounds - rounds == 2 * 8
    np.testing.assert_array_equal(reader[...], version(0))  # whole shards: one request, always consistent


class _NoGenerations(Store):
    """A store that cannot tell generations (``None`` with every value)."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.read_only = inner, True

    def get_many_versioned(self, requests: list[Request]) -> list[Versioned]:
        return [Versioned(read.value) for read in self.inner.get_many_versioned(requests)]

    set = _AlwaysChanging.set
    delete = _AlwaysChanging.delete
    list_prefix = _AlwaysChanging.list_prefix
    list_dir = _AlwaysChanging.list_dir


def test_unknown_generations_are_never_cached(tmp_path):
    create(str(tmp_path))
    counting = CountingStore(_NoGenerations(LocalStore(tmp_path)))
    reader = zarr3_backend.open_array(counting, "v")
    reader[:, 2:4]
    zarr3_backend.open_array(str(tmp_path), "v", mode="r+")[...] = version(1)
    counting.reset()
    np.testing.assert_array_equal(reader[:, 2:4], version(1)[:, 2:4])
    assert counting.counts["get_many"] == 2  # the index is read again every time


# -- (b) a writer process rewrites shards while readers read ----------------------------

_WRITER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[2])
    import zarr3_backend
    from tests.store.test_snapshot_reads import version
    a = zarr3_backend.open_array(sys.argv[1], "v", mode="r+")
    stop, deadline, v = os.path.join(sys.argv[1], "stop"), time.monotonic() + 120, 0
    while not os.path.exists(stop) and time.monotonic() < deadline:
        v = v % 6 + 1
        a[...] = version(v)
        if v == 1:
            open(os.path.join(sys.argv[1], "started"), "w").close()
""")


def test_reads_racing_a_writer_process_are_consistent_per_shard(tmp_path):
    create(str(tmp_path))
    root = str(Path(__file__).resolve().parents[2])
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), root], cwd=root)
    try:
        while not (tmp_path / "started").exists():  # start reading once the writer writes
            assert writer.poll() is None, "the writer process died"
            time.sleep(0.01)
        long_lived = zarr3_backend.open_array(str(tmp_path), "v")
        selections = [slice(2, 6), slice(1, 15), slice(5, 12), slice(9, 11)]
        wrong, seen, reads, refused, deadline = [], set(), 0, 0, time.monotonic() + 3
        while time.monotonic() < deadline:
            for columns in selections:
                for reader in (long_lived, zarr3_backend.open_array(str(tmp_path), "v")):
                    try:
                        got = reader[:, columns]
                    except ConcurrentModificationError:  # rewritten at every retry: refused, never mixed
                        refused += 1
                        continue
                    reads += 1
                    found = matching_versions(got, columns, range(7))
                    if found is None:
                        wrong.append((columns, got[0].tolist()))
                    else:
                        seen.update(found)
    finally:
        (tmp_path / "stop").touch()
        writer.wait(timeout=60)
    assert writer.returncode == 0
    assert reads > 200 and len(seen) >= 4  # the reads really raced the writer's versions
    assert refused <= reads // 20, f"{refused} reads gave up against {reads} that succeeded"
    assert not wrong, f"{len(wrong)} of {reads} reads mixed versions, e.g. {wrong[:3]}"


# -- (c) the same through xarray, long-lived, with dask ---------------------------------


def test_long_lived_xarray_dataset_reads_the_rewritten_shard(tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("dask")
    zarr3_backend.create_group(str(tmp_path))
    create(str(tmp_path))
    ds = xr.open_dataset(str(tmp_path), engine="zarr3", chunks={})
    np.testing.assert_array_equal(ds["v"][:, 2:6].values, version(0)[:, 2:6])
    writer = zarr3_backend.open_array(str(tmp_path), "v", mode="r+")
    for v in (1, 2):
        writer[...] = version(v)
        np.testing.assert_array_equal(ds["v"][:, 2:6].values, version(v)[:, 2:6])
        np.testing.assert_array_equal(ds["v"][:, 3:13].values, version(v)[:, 3:13])
        expected = xr.open_dataset(
            str(tmp_path), engine="zarr", chunks={}, consolidated=False
        )  # the oracle, freshly opened
        np.testing.assert_array_equal(ds["v"].values, expected["v"].values)


# -- (d) object stores: the ETag of the ranged GET is the generation -----------------------


def _etag(store, key):
    obstore = pytest.importorskip("obstore")
    """The ETag of ``key`` asked of the server, and the generation a read of it reports."""
    if isinstance(store, ObstoreStore):
        etag = obstore.head(store.client, key)["e_tag"]
    else:
        etag = store.fs.info(store._path(key), refresh=True)["ETag"]
    generation = store.get_many_versioned([(key, ByteRange(0, 0))])[0].generation
    assert etag in generation  # the ETag, with the object's size and last-modified time
    return etag, generation


@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_s3_long_lived_array_uses_the_etag(s3_url, s3_storage_options, backend):
    options = {**s3_storage_options, "backend": backend}
    store = make_store(s3_url + "/snap.zarr", storage_options=options)
    create(store)
    counting = CountingStore(make_store(s3_url + "/snap.zarr", storage_options=options))
    reader = zarr3_backend.open_array(counting, "v")
    reader[:, 2:6]
    etag, generation = _etag(store, "v/c/0/0")
    assert reader._index_cache["v/c/0/0"].generation == generation
    counting.reset()
    np.testing.assert_array_equal(reader[:, 2:6], version(0)[:, 2:6])
    # one round: the ranged GET, and the index beside it (an ETag does not prove the object unchanged)
    assert counting.counts["get_many"] == 1 and len(counting.requests) == 2
    zarr3_backend.open_array(store, "v", mode="r+")[...] = version(1)
    np.testing.assert_array_equal(reader[:, 2:6], version(1)[:, 2:6])
    new_etag, new_generation = _etag(store, "v/c/0/0")
    assert new_etag != etag and reader._index_cache["v/c/0/0"].generation == new_generation


def test_memory_store_long_lived_array_reads_the_rewritten_shard():
    store = make_store(f"memory://snapshot-{os.getpid()}-{time.monotonic_ns()}")
    create(store)
    reader = zarr3_backend.open_array(store, "v")
    reader[:, 2:6]
    for v in (1, 2):
        zarr3_backend.open_array(store, "v", mode="r+")[...] = version(v)
        np.testing.assert_array_equal(reader[:, 2:6], version(v)[:, 2:6])
