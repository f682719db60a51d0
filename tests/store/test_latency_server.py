"""The loopback S3 server with injected latency: S3 semantics for real clients, counters, latency, open rounds."""

from __future__ import annotations

import time

import numpy as np
import pytest

import zarr3_backend
from tests.servers.latency_s3 import latency_s3_process, latency_s3_server

s3fs = pytest.importorskip("s3fs")


@pytest.fixture
def s3(settled_heap):
    with latency_s3_server() as server:
        yield server


@pytest.fixture(params=[False, True], ids=["http", "https"])
def http_or_https(request, tmp_path):
    """A server over plain http, and one over TLS."""
    from tests.servers.latency_s3 import self_signed_certificate

    if request.param:
        pytest.importorskip("cryptography")
    with latency_s3_server(tls=self_signed_certificate(tmp_path) if request.param else None) as server:
        yield server


def filesystem(server):
    return s3fs.S3FileSystem(**server.storage_options, skip_instance_cache=True)


def test_s3fs_round_trip(s3):
    fs = filesystem(s3)
    fs.mkdir("bkt")
    fs.pipe_file("bkt/a/x", b"0123456789")
    fs.pipe_file("bkt/a/y/z", b"deep")
    fs.pipe_file("bkt/b", b"")
    assert fs.cat_file("bkt/a/x") == b"0123456789"
    assert fs.cat_file("bkt/a/x", start=2, end=5) == b"234"
    assert fs.cat_file("bkt/a/x", start=-3) == b"789"
    info = fs.info("bkt/a/x")
    assert info["size"] == 10 and info["ETag"].startswith('"')
    assert sorted(fs.ls("bkt", detail=False)) == ["bkt/a", "bkt/b"]
    assert sorted(fs.find("bkt")) == ["bkt/a/x", "bkt/a/y/z", "bkt/b"]
    with pytest.raises(FileNotFoundError):
        fs.cat_file("bkt/missing")
    fs.rm("bkt/a", recursive=True)
    assert fs.find("bkt", refresh=True) == ["bkt/b"]


def test_listing_pages_with_continuation_tokens(s3):
    for i in range(25):
        s3.put("bkt", f"p/{i:02d}", b"x")
        s3.put("bkt", f"p/d{i:02d}/k", b"x")
    client = filesystem(s3)
    keys, prefixes, token = [], [], None
    while True:
        page = client.call_s3("list_objects_v2", Bucket="bkt", Prefix="p/", Delimiter="/", MaxKeys=7,
                              **({"ContinuationToken": token} if token else {}))  # fmt: skip
        keys += [c["Key"] for c in page.get("Contents", [])]
        prefixes += [c["Prefix"] for c in page.get("CommonPrefixes", [])]
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    assert keys == [f"p/{i:02d}" for i in range(25)]
    assert prefixes == [f"p/d{i:02d}/" for i in range(25)]


def test_etag_changes_with_content_and_conditions_hold(s3):
    fs = filesystem(s3)
    s3.create_bucket("bkt")
    fs.pipe_file("bkt/k", b"one")
    first = fs.info("bkt/k")["ETag"]
    fs.pipe_file("bkt/k", b"two")
    assert fs.info("bkt/k", refresh=True)["ETag"] != first
    with pytest.raises(OSError):  # 412: the object is not at the generation asked for
        fs.call_s3("get_object", Bucket="bkt", Key="k", IfMatch=first)


def test_an_uploads_checksum_is_kept_checked_and_returned_as_s3_does(http_or_https):
    """botocore sends a CRC32 with every PUT (a header over http, an ``aws-chunked`` trailer over https)."""
    import base64
    import zlib

    server, fs = http_or_https, filesystem(http_or_https)
    fs.mkdir("bkt")
    fs.pipe_file("bkt/k", b"checked bytes")
    kept = ("crc32", base64.b64encode(zlib.crc32(b"checked bytes").to_bytes(4, "big")).decode())
    assert server.buckets["bkt"]["k"].checksum == kept
    whole = fs.call_s3("get_object", Bucket="bkt", Key="k", ChecksumMode="ENABLED")
    assert whole["ChecksumCRC32"] == kept[1] and whole["ChecksumType"] == "FULL_OBJECT"
    assert "ChecksumCRC32" not in fs.call_s3(
        "get_object", Bucket="bkt", Key="k", Range="bytes=0-3", ChecksumMode="ENABLED"
    )
    # botocore retries a BadDigest, as S3 asks, with backoff: 5 attempts took 4-8 s here
    once = s3fs.S3FileSystem(
        **server.storage_options, skip_instance_cache=True, config_kwargs={"retries": {"max_attempts": 1}}
    )
    with pytest.raises(OSError, match="BadDigest|did not match"):
        once.call_s3("put_object", Bucket="bkt", Key="bad", Body=b"abc", ChecksumCRC32="AAAAAA==")
    assert "bad" not in server.buckets["bkt"]


def test_a_checksum_is_returned_only_when_asked_for(s3):
    """botocore always asks (``x-amz-checksum-mode: ENABLED``); a plain GET does not."""
    import urllib.request

    s3.put("bkt", "k", b"checked bytes", checksum="crc32")
    with urllib.request.urlopen(f"{s3.endpoint_url}/bkt/k") as plain:
        assert plain.read() == b"checked bytes" and plain.headers["x-amz-checksum-crc32"] is None
    asked = urllib.request.Request(f"{s3.endpoint_url}/bkt/k", headers={"x-amz-checksum-mode": "ENABLED"})
    with urllib.request.urlopen(asked) as answer:
        assert answer.headers["x-amz-checksum-crc32"] == s3.buckets["bkt"]["k"].checksum[1]


def test_an_object_put_directly_can_keep_a_checksum(s3):
    s3.put("bkt", "k", b"abc", checksum="sha256")
    assert s3.buckets["bkt"]["k"].checksum[0] == "sha256" and s3.buckets["bkt"]["k"].checksum[1].endswith("=")
    with pytest.raises(ValueError, match="crc64nvme"):
        s3.put("bkt", "k", b"abc", checksum="crc64nvme")


def test_counters_count_requests_and_concurrency(s3):
    s3.create_bucket("bkt")
    for i in range(8):
        s3.put("bkt", f"k{i}", b"v")
    s3.latency = 0.3  # long enough that all 8 are in flight together, also on a busy machine
    store = zarr3_backend.store.make_store(
        "s3://bkt", storage_options={**s3.storage_options, "skip_instance_cache": True}
    )
    store.get_many_versioned([(f"k{i}", None) for i in range(8)])  # one concurrent batch
    stats = s3.stats
    assert stats.requests == 8 and stats.requests_by_kind["GET"] == 8
    assert stats.max_in_flight == 8 and stats.rounds == 1 and stats.waves == 1
    s3.reset_stats()
    store.get("k0")
    store.get_many_versioned([("k1", None), ("k2", None)])
    assert s3.stats.requests == 3 and s3.stats.rounds == 2 and s3.stats.max_in_flight == 2


def test_latency_and_bandwidth_are_observed(s3):
    s3.create_bucket("bkt")
    s3.put("bkt", "big", bytes(2_000_000))
    fs = filesystem(s3)
    fs.cat_file("bkt/big", start=0, end=1)  # connect outside the timing
    s3.latency, s3.bandwidth = 0.1, 10e6
    start = time.perf_counter()
    fs.cat_file("bkt/big", start=0, end=10)
    small = time.perf_counter() - start
    start = time.perf_counter()
    assert len(fs.cat_file("bkt/big", start=0, end=2_000_000)) == 2_000_000
    large = time.perf_counter() - start
    assert small >= 0.1
    assert large >= 0.1 + 0.2  # latency + 2 MB at 10 MB/s


def test_zarr_python_and_tensorstore_read_and_write(s3):
    zarr = pytest.importorskip("zarr")
    ts = pytest.importorskip("tensorstore")
    s3.create_bucket("bkt")
    data = np.arange(120, dtype="int32").reshape(10, 12)
    store = zarr.storage.FsspecStore.from_url("s3://bkt/zp", storage_options=s3.storage_options)
    a = zarr.create_array(store, shape=data.shape, chunks=(5, 4), shards=(10, 12), dtype="int32")
    a[...] = data
    np.testing.assert_array_equal(
        zarr3_backend.open_array("s3://bkt/zp", storage_options=s3.storage_options)[...], data
    )
    spec = {"driver": "zarr3", "kvstore": s3.tensorstore_kvstore("bkt", "ts/")}
    t = ts.open(spec, create=True, dtype=ts.int32, shape=data.shape,
                chunk_layout=ts.ChunkLayout(chunk_shape=[5, 6])).result()  # fmt: skip
    t[...] = data
    np.testing.assert_array_equal(ts.open(spec).result().read().result(), data)
    np.testing.assert_array_equal(
        zarr3_backend.open_array("s3://bkt/ts", storage_options=s3.storage_options)[...], data
    )
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], data)


def test_a_server_process_over_tls_serves_and_counts():
    """``latency_s3_process(tls=True)``: https with its own certificate, which its storage options trust."""
    pytest.importorskip("cryptography")
    data = np.arange(60, dtype="float32").reshape(6, 10)
    with latency_s3_process(tls=True) as server:
        assert server.endpoint_url.startswith("https://") and server.ca_file
        fs = filesystem(server)
        fs.mkdir("bkt")
        array = zarr3_backend.create_array(
            "s3://bkt/a",
            shape=data.shape,
            dtype=data.dtype,
            chunks=(3, 5),
            storage_options=server.storage_options,
        )
        array[...] = data
        server.reset_stats()
        np.testing.assert_array_equal(
            zarr3_backend.open_array("s3://bkt/a", storage_options=server.storage_options)[...], data
        )
        assert server.stats()["by_kind"]["GET"] >= 1


def test_dropping_connections_ends_the_idle_ones_only(http_or_https):
    """Benchmarks start every client cold: tensorstore would otherwise reuse its connections from the last run."""
    import http.client
    import ssl

    server = http_or_https
    server.create_bucket("bkt")
    server.put("bkt", "k", b"value")
    port = server.server_address[1]

    def connect() -> http.client.HTTPConnection:
        if server.ca_file is None:
            return http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        return http.client.HTTPSConnection("127.0.0.1", port, timeout=10,
                                           context=ssl.create_default_context(cafile=server.ca_file))  # fmt: skip

    idle, busy = connect(), connect()
    for connection in (idle, busy):
        connection.request("GET", "/bkt/k")
        assert connection.getresponse().read() == b"value"
    server.latency = 0.3
    busy.request("GET", "/bkt/k")  # in flight while the idle ones are dropped
    time.sleep(0.1)
    assert server.drop_connections() == 1
    assert busy.getresponse().read() == b"value"
    idle.request("GET", "/bkt/k")
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        idle.getresponse()
    idle.close()
    busy.close()


def _open_stats(s3, bucket: str, **kwargs):
    xr = pytest.importorskip("xarray")
    s3.reset_stats()
    xr.open_dataset(f"s3://{bucket}/g", engine="zarr3",
                    storage_options={**s3.storage_options, "skip_instance_cache": True}, **kwargs).close()  # fmt: skip
    return s3.stats


@pytest.mark.parametrize(("consolidated", "open_kwargs", "expected"), [
    (True, {}, 2),  # the document (holding every member's), then the coordinates
    (False, {"consolidated": False}, 3),  # the document and the listing at once, child documents, coordinates
    (False, {}, 3),  # the same: on object storage the default lists the group while fetching its document
    (True, {"consolidated": False}, 3),  # consolidated metadata ignored: the same three rounds, one listing
])  # fmt: skip
def test_open_rounds_do_not_grow_with_the_number_of_variables(
    s3, monkeypatch, consolidated, open_kwargs, expected
):
    xr = pytest.importorskip("xarray")
    monkeypatch.setenv("ZARR3_BACKEND_IO_CONCURRENCY", "32")  # fewer variables than the default 64 exceed it
    sizes = (5, 28, 50)
    for n in sizes:
        coords = {"t": np.arange(4), "x": np.arange(3)}
        ds = xr.Dataset({f"v{i}": (("t", "x"), np.zeros((4, 3), "f4")) for i in range(n)}, coords=coords)
        ds.to_zarr3(
            s3.create_bucket(f"vars{n}") + "/g", storage_options=s3.storage_options, consolidated=consolidated
        )
    s3.latency = 0.3  # well above the client's own stagger, also on a busy machine; rounds do not depend on it otherwise
    few, fitting, many = (_open_stats(s3, f"vars{n}", **open_kwargs) for n in sizes)
    assert few.rounds == expected
    assert few.requests_by_kind["LIST"] == 1
    documents = open_kwargs.get("consolidated") is False or not consolidated
    assert fitting.rounds <= expected + documents  # 30 documents: all in flight at once (32 connections)
    assert many.rounds <= expected + 2 * documents  # 52 documents: 20 wait for a connection


def test_a_coordinate_listed_last_is_fetched_and_read_while_the_other_documents_arrive(s3, monkeypatch):
    xr = pytest.importorskip("xarray")
    monkeypatch.setenv("ZARR3_BACKEND_IO_CONCURRENCY", "4")
    ds = xr.Dataset(
        {f"v{i:02d}": (("x",), np.arange(3.0) + i) for i in range(12)}, coords={"x": [10, 20, 30]}
    )
    ds.to_zarr3(s3.create_bucket("late") + "/g", storage_options=s3.storage_options, consolidated=False)
    s3.latency = 0.3
    stats = _open_stats(s3, "late")
    # the document and the listing; 13 documents on 4 lanes: x's goes out once the first has shown that the
    # variables have a dimension x, and its chunk is read alongside the last documents, not after them
    assert stats.rounds == 1 + 4
    assert stats.requests_by_kind == {
        "LIST": 1,
        "GET": 1 + 1 + 13 + 1,
    }  # the pending record's GET in the first round
    s3.latency = 0.0
    back = xr.open_dataset(
        "s3://late/g", engine="zarr3", storage_options={**s3.storage_options, "skip_instance_cache": True}
    )
    xr.testing.assert_identical(back.load(), ds)


def test_datatree_open_rounds_grow_with_the_depth_not_the_number_of_groups(s3):
    xr = pytest.importorskip("xarray")
    rounds, chains = [], []
    for n in (2, 8):
        tree = xr.DataTree.from_dict({
            **{f"/g{i}": xr.Dataset({"v": (("t",), np.arange(3.0) + i)}, coords={"t": np.arange(3)}) for i in range(n)},
            **{f"/g{i}/sub": xr.Dataset({"w": (("x",), np.arange(2.0) * i)}) for i in range(n // 2)},
        })  # fmt: skip
        tree.to_zarr3(
            s3.create_bucket(f"tree{n}") + "/t", storage_options=s3.storage_options, consolidated=False
        )
        s3.latency = 0.3
        s3.reset_stats()
        options = {**s3.storage_options, "skip_instance_cache": True}
        back = xr.open_datatree(
            f"s3://tree{n}/t", engine="zarr3", storage_options=options, consolidated=False
        )
        rounds.append(s3.stats.rounds)
        chains.append(s3.stats.chain)
        s3.latency = 0.0
        xr.testing.assert_identical(back.load(), tree)
        assert list(xr.open_groups(f"s3://tree{n}/t", engine="zarr3", storage_options=options)) == [
            "/",
            *(p for i in range(n) for p in [f"/g{i}", *([f"/g{i}/sub"] if i < n // 2 else [])]),
        ]  # depth first, as engine="zarr"
    # the root's document and listing; its children's documents; then per level: listings, documents; the
    # coordinates t of the first level are read as their documents arrive, alongside the second level's listings
    chain_lines = ["\n".join(f"{depth} {kind} {path}" for depth, kind, path in chain) for chain in chains]
    assert rounds == [1 + 1 + 2 + 2] * 2, "\n\n".join(chain_lines)  # each request's depth, kind and path


@pytest.mark.parametrize("with_coordinates", [False, True])
def test_consolidated_open_fetches_only_the_root_document_and_coordinates(s3, with_coordinates):
    xr = pytest.importorskip("xarray")
    coords = {"t": np.arange(4)} if with_coordinates else {}
    for n in (1, 50):
        ds = xr.Dataset({f"v{i}": (("t", "x"), np.zeros((4, 3), "f4")) for i in range(n)}, coords=coords)
        ds.to_zarr3(s3.create_bucket(f"c{n}") + "/g", storage_options=s3.storage_options, consolidated=True)
    s3.latency = 0.1  # requests sent together overlap on the server
    one, fifty = (_open_stats(s3, f"c{n}") for n in (1, 50))
    gets = 2 if with_coordinates else 1  # root zarr.json (+ the one chunk of t); no member documents
    # the listing and the pending-write record's GET sent alongside the root document (in case nothing is
    # consolidated) go unused, in the same round
    assert one.requests_by_kind == fifty.requests_by_kind == {"GET": gets + 1, "LIST": 1}
    assert one.rounds == fifty.rounds == gets
    s3.reset_stats()
    xr.open_dataset("s3://c50/g", engine="zarr3", consolidated=True,
                    storage_options={**s3.storage_options, "skip_instance_cache": True}).close()  # fmt: skip
    assert s3.stats.requests_by_kind == {"GET": gets}  # consolidated=True: no listing
    s3.reset_stats()
    group = zarr3_backend.open_group(
        "s3://c50/g", storage_options={**s3.storage_options, "skip_instance_cache": True}
    )
    assert len(group.members()) == 50 + len(coords)
    assert s3.stats.requests == 1


def test_a_failed_open_leaves_no_coordinate_read_in_flight(s3):
    xr = pytest.importorskip("xarray")
    url = s3.create_bucket("conflict") + "/g"
    options = {**s3.storage_options, "skip_instance_cache": True}
    group = zarr3_backend.create_group(url, storage_options=options)
    group.create_array("x", shape=(3,), dtype="i4", dimension_names=["x"])[...] = np.arange(3)
    group.create_array("w", shape=(4,), dtype="f4", dimension_names=["x"])  # x has two sizes
    s3.latency = 0.3
    with pytest.raises(zarr3_backend.errors.MetadataError, match="conflicting sizes"):
        xr.open_dataset(url, engine="zarr3", storage_options=options)
    deadline = time.monotonic() + 0.1  # the server counts a reply done just after its last byte
    while s3.stats.in_flight and time.monotonic() < deadline:
        time.sleep(0.005)
    assert s3.stats.in_flight == 0  # x's chunk, read as soon as its document came (0.3 s), was waited for


def test_object_storage_counts_as_remote_however_many_cpu_threads(s3, monkeypatch):
    xr = pytest.importorskip("xarray")
    monkeypatch.setenv(
        "ZARR3_BACKEND_THREADS", "96"
    )  # more CPU threads than the 64 lanes, as on a large node
    ds = xr.Dataset({"v": (("t",), np.arange(4.0))}, coords={"t": np.arange(4)})
    ds.to_zarr3(s3.create_bucket("big-node") + "/g", storage_options=s3.storage_options, consolidated=False)
    s3.latency = 0.3
    assert _open_stats(s3, "big-node").rounds == 3  # document and listing at once, as on any remote store


def test_a_dataset_written_and_opened_through_xarray_reads_as_engine_zarr_reads_it(
    http_or_https, monkeypatch
):
    """The public path end to end, over http and https (through obstore, which verifies the server's certificate)."""
    xr = pytest.importorskip("xarray")
    from zarr3_backend.store import ObstoreStore, make_store

    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)  # trusted: the server's CA, from its storage_options
    server = http_or_https
    rng = np.random.default_rng(0)
    ds = xr.Dataset({"t2m": (("time", "lat", "lon"), rng.normal(280, 5, (12, 9, 16)).astype("f4"))},
                    coords={"time": np.arange(12), "lat": np.linspace(-40, 40, 9), "lon": np.arange(16) * 22.5})  # fmt: skip
    url = server.create_bucket("era") + "/x.zarr"
    ds.to_zarr3(
        url,
        storage_options=server.storage_options,
        encoding={"t2m": {"chunks": (4, 9, 8), "shards": (12, 9, 16)}},
    )
    options = {**server.storage_options, "skip_instance_cache": True}
    ours = xr.open_dataset(url, engine="zarr3", chunks={}, storage_options=options)
    theirs = xr.open_dataset(url, engine="zarr", consolidated=False, zarr_format=3, storage_options=options)
    xr.testing.assert_identical(ours.load(), theirs.load())
    xr.testing.assert_identical(
        ours.t2m.sel(lat=10.0, lon=45.0, method="nearest").load(), ds.t2m.isel(lat=5, lon=2)
    )
    store = make_store(url, storage_options=options)
    https = server.endpoint_url.startswith(
        "https://"
    )  # the server speaks only https then: the reads above verified it
    assert isinstance(store, ObstoreStore) and ("root_certificate" in store.settings.client_options) == https
