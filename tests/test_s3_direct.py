"""GetObject without botocore's per-request work: SigV4 as botocore signs, the same bytes, botocore for the rest."""

from __future__ import annotations

import asyncio
import base64
import datetime
import gc
import weakref
import zlib
from typing import Any
from unittest import mock
from urllib.parse import quote

import crc32c
import pytest
from fsspec.asyn import sync
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr3_backend.errors import InvalidKeyError, StoreError
from zarr3_backend.keys import validate_key
from zarr3_backend.store import ByteRange, FsspecStore
from zarr3_backend.store import s3_direct
from zarr3_backend.store.http_gets import HttpPool
from zarr3_backend.store.s3_direct import DirectGets, Unhandled, direct_gets, sigv4_headers
from zarr3_backend.testing.latency_s3 import latency_s3_server, self_signed_certificate

s3fs = pytest.importorskip("s3fs")
botocore_auth = pytest.importorskip("botocore.auth")

BUCKET = "bkt"
KEYS = {"zarr.json": b"{}", "c/0/1": bytes(range(200)), "dir/a b+c=\u00fc~.json": b"odd name", "empty": b""}


@pytest.fixture(autouse=True, params=["own", "aiohttp"])
def connections(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on our own connections and on the client's aiohttp session."""
    monkeypatch.setenv("ZARR3_BACKEND_S3_CONNECTIONS", request.param)
    return str(request.param)


@pytest.fixture(scope="module")
def s3():
    with latency_s3_server() as server:
        server.create_bucket(BUCKET)
        for key, value in KEYS.items():
            server.put(BUCKET, f"root/{key}", value)
        yield server


def make_store(server: Any, **options: Any) -> FsspecStore:
    fs = s3fs.S3FileSystem(**{**server.storage_options, **options}, skip_instance_cache=True)
    return FsspecStore(fs, f"{BUCKET}/root")


def botocore_gets(monkeypatch: pytest.MonkeyPatch, store: FsspecStore) -> list[dict[str, Any]]:
    """The GetObject calls that go through botocore from now on."""
    calls: list[dict[str, Any]] = []
    original = store.fs._call_s3

    async def spy(method: str, *args: Any, **kwargs: Any) -> Any:
        if method == "get_object":
            calls.append(kwargs)
        return await original(method, *args, **kwargs)

    monkeypatch.setattr(store.fs, "_call_s3", spy)
    return calls


def gets_of(store: FsspecStore) -> DirectGets:
    gets = sync(store.fs.loop, direct_gets, store.fs, BUCKET)
    assert gets is not None
    return gets


# -- the signature ----------------------------------------------------------------------

_KEY_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    key=_KEY_TEXT,
    byte_range=st.none() | st.builds(lambda a, n: f"bytes={a}-{a + n}", st.integers(0, 10**12), st.integers(0, 10**9))
    | st.builds(lambda n: f"bytes=-{n}", st.integers(1, 10**9)),
    version=st.none() | st.text("abcXYZ019._-+/=", min_size=1, max_size=20),
    token=st.none() | st.text("abcdefXYZ0123456789+/=", min_size=1, max_size=60),
    region=st.sampled_from(["us-east-1", "eu-central-1", "ap-southeast-2"]),
    host=st.sampled_from(["127.0.0.1:9000", "s3.eu-central-1.amazonaws.com", "bkt.s3.amazonaws.com"]),
    when=st.datetimes(datetime.datetime(2000, 1, 1), datetime.datetime(2099, 12, 31)),
)
def test_the_signature_is_the_one_botocore_computes(key, byte_range, version, token, region, host, when) -> None:
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    url = f"http://{host}/bkt/{quote(key, safe='/~')}" + (f"?versionId={quote(version, safe='-_.~')}" if version else "")
    headers = {"accept-encoding": "identity", **({"range": byte_range} if byte_range else {})}
    ours = sigv4_headers(
        url, headers, access_key="AKIDEXAMPLE", secret_key="secret/key+", token=token, region=region, when=when
    )

    request = AWSRequest(method="GET", url=url, headers=dict(headers))
    with mock.patch.object(botocore_auth, "get_current_datetime", return_value=when):
        botocore_auth.S3SigV4Auth(Credentials("AKIDEXAMPLE", "secret/key+", token), "s3", region).add_auth(request)
    assert ours["authorization"] == request.headers["Authorization"]
    assert ours["x-amz-date"] == request.headers["X-Amz-Date"]
    assert ours.get("x-amz-security-token") == request.headers.get("X-Amz-Security-Token")


def _is_valid_key(key: str) -> bool:
    try:
        return validate_key(key) == key
    except InvalidKeyError:
        return False


@settings(max_examples=200, deadline=None)
@given(
    root=st.sampled_from(["bkt", "bkt/root", "bkt/a/b", "s3://bkt/root", "arn:aws:s3:us-east-1:123456789012:accesspoint/ap/root",
                          "arn:aws:s3:us-east-1:123456789012:accesspoint:ap/root"]),
    key=st.text("ab/?=.~+ \u00fc", min_size=1, max_size=20).filter(_is_valid_key),
    version_aware=st.booleans(),
)
def test_the_store_splits_paths_as_s3fs_does(root: str, key: str, version_aware: bool) -> None:
    """The store splits its own paths into bucket and key without s3fs's work, to the same result."""
    fs = s3fs.S3FileSystem(anon=True, version_aware=version_aware, skip_instance_cache=True)
    store = FsspecStore(fs, root, read_only=True)
    path = store._path(key)
    assert store._split(path) == tuple(fs.split_path(path))


# -- reads through the store ---------------------------------------------------------------


def test_reads_skip_botocore_and_return_what_botocore_returns(s3, monkeypatch: pytest.MonkeyPatch) -> None:
    requests = [
        (key, byte_range)
        for key in [*KEYS, "missing"]
        for byte_range in (None, ByteRange(2, 9), ByteRange.suffix(3), ByteRange(150, 400), ByteRange(5000))
    ]
    monkeypatch.setenv("ZARR3_BACKEND_S3_DIRECT", "0")
    through_botocore = make_store(s3)
    expected = through_botocore.get_many(requests)
    expected_versions = [v.generation for v in through_botocore.get_many_versioned(requests)]
    monkeypatch.delenv("ZARR3_BACKEND_S3_DIRECT")

    direct = make_store(s3)
    calls = botocore_gets(monkeypatch, direct)
    assert direct.get_many(requests) == expected
    assert [v.generation for v in direct.get_many_versioned(requests)] == expected_versions
    assert expected[0] == b"{}" and expected_versions[0] is not None
    # botocore sees only the ranges that start past the end of a value (HTTP 416), which it answers as before
    for call in calls:
        value = KEYS[call["Key"].removeprefix("root/")]
        start = call["Range"].removeprefix("bytes=").split("-")[0]
        assert not value or (start and int(start) >= len(value)), call
    assert 0 < len(calls) < len(requests)  # of 2 * len(requests) reads


def test_anonymous_clients_send_unsigned_gets(s3, monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store(s3, anon=True)
    calls = botocore_gets(monkeypatch, store)
    assert store.get("c/0/1", ByteRange(10, 12)) == bytes([10, 11]) and store.get("zarr.json") == b"{}"
    assert not calls and gets_of(store)._credentials is None


def test_requester_pays_stays_with_botocore(s3, monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store(s3, requester_pays=True)
    calls = botocore_gets(monkeypatch, store)
    assert store.get("zarr.json") == b"{}"
    assert sync(store.fs.loop, direct_gets, store.fs, BUCKET) is None
    assert [call["Key"] for call in calls] == ["root/zarr.json"]  # s3fs adds RequestPayer in there


def test_a_connection_failure_is_retried_through_botocore(s3, monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store(s3)
    gets = gets_of(store)
    assert store.get("zarr.json") == b"{}"
    route = gets._routes[BUCKET]
    assert route is not None
    pool = route.pool and HttpPool("127.0.0.1", 9, None, limit=2, connect_timeout=5, read_timeout=5)
    monkeypatch.setitem(gets._routes, BUCKET, type(route)("http://127.0.0.1:9/bkt/", None, None, pool))  # nothing listens
    calls = botocore_gets(monkeypatch, store)
    assert store.get("c/0/1", ByteRange(0, 3)) == bytes([0, 1, 2])
    assert [call["Range"] for call in calls] == ["bytes=0-2"]
    assert gets._routes[BUCKET] is not None  # a connection failure says nothing about the bucket


# -- answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 307, 400, 403])
def test_an_answer_wrong_for_the_bucket_turns_the_direct_path_off(s3, status: int) -> None:
    store = make_store(s3)  # held: a file system collected mid-test closes its client's connections
    gets = gets_of(store)
    sync_get(gets, "zarr.json")
    with pytest.raises(Unhandled, match=str(status)):
        gets._answer(BUCKET, "bkt/k", "u", None, status=status, headers={}, body=b"<Error/>")
    with pytest.raises(Unhandled, match="through botocore"):
        sync_get(gets, "zarr.json")


@pytest.mark.parametrize("status", [416, 429, 500, 503])
def test_passing_trouble_goes_to_botocore_but_keeps_the_direct_path(s3, status: int) -> None:
    store = make_store(s3)  # held: a file system collected mid-test closes its client's connections
    gets = gets_of(store)
    with pytest.raises(Unhandled):
        gets._answer(BUCKET, "bkt/k", "u", "bytes=9-", status=status, headers={}, body=b"<Error/>")
    with pytest.raises(Unhandled):
        no_bucket = b"<Error><Code>NoSuchBucket</Code></Error>"
        gets._answer(BUCKET, "bkt/k", "u", None, status=404, headers={}, body=no_bucket)
    assert sync_get(gets, "zarr.json") == b"{}"


def test_a_missing_key_is_file_not_found(s3) -> None:
    store = make_store(s3)  # held: a file system collected mid-test closes its client's connections
    gets = gets_of(store)
    with pytest.raises(FileNotFoundError, match="bkt/root/nope"):
        sync_get(gets, "nope")


def sync_get(gets: DirectGets, key: str) -> bytes:
    from fsspec.asyn import get_loop  # s3fs clients live on fsspec's loop

    return sync(get_loop(), gets.get, BUCKET, f"root/{key}", None, None)[0]


@pytest.mark.parametrize(
    ("byte_range", "content_range", "body"),
    [
        ("bytes=10-19", "bytes 11-20/100", bytes(10)),  # not where we asked
        ("bytes=10-19", "bytes 10-19/100", bytes(9)),  # short
        ("bytes=10-19", None, bytes(10)),  # no Content-Range
        ("bytes=-10", "bytes 80-89/100", bytes(10)),  # a suffix that is not the end
        ("bytes=10-19", "bytes 10-29/100", bytes(20)),  # more than asked
    ],
)
def test_a_range_answer_must_cover_the_range_asked_for(s3, byte_range, content_range, body) -> None:
    store = make_store(s3)  # held: a file system collected mid-test closes its client's connections
    gets = gets_of(store)
    headers = {} if content_range is None else {"content-range": content_range}
    with pytest.raises(StoreError, match="Content-Range"):
        gets._answer(BUCKET, "bkt/k", "http://x/k", byte_range, status=206, headers=headers, body=body)


def test_good_range_answers_pass(s3) -> None:
    store = make_store(s3)  # held: a file system collected mid-test closes its client's connections
    gets = gets_of(store)
    for byte_range, content_range, size in [
        ("bytes=10-19", "bytes 10-19/100", 10), ("bytes=90-199", "bytes 90-99/100", 10),
        ("bytes=-10", "bytes 90-99/100", 10), ("bytes=-500", "bytes 0-99/100", 100), ("bytes=5-", "bytes 5-99/100", 95),
    ]:  # fmt: skip
        body = bytes(range(size))
        headers = {"content-range": content_range, "etag": '"e"'}
        answer = gets._answer(BUCKET, "bkt/k", "u", byte_range, status=206, headers=headers, body=body)
        assert answer == (body, '"e"')


def test_a_short_whole_value_is_an_error(s3) -> None:
    store = make_store(s3)  # held: a file system collected mid-test closes its client's connections
    gets = gets_of(store)
    with pytest.raises(StoreError, match="Content-Length promised 10"):
        gets._answer(BUCKET, "bkt/k", "http://x/k", None, status=200, headers={"content-length": "10"}, body=bytes(9))


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


@pytest.mark.parametrize(
    ("header", "compute"),
    [
        ("crc32c", lambda b: crc32c.crc32c(b).to_bytes(4, "big")),
        ("crc32", lambda b: zlib.crc32(b).to_bytes(4, "big")),
        ("sha256", lambda b: __import__("hashlib").sha256(b).digest()),
    ],
)
@pytest.mark.parametrize("size", [16, s3_direct.CHECKSUM_ON_THREAD_BYTES])
def test_whole_object_checksums_are_checked(header: str, compute: Any, size: int) -> None:
    body = bytes(range(256)) * (size // 256) or b"the stored bytes"
    good = {f"x-amz-checksum-{header}": _b64(compute(body))}
    asyncio.run(s3_direct._check_checksum("u", good, body))
    with pytest.raises(StoreError, match=f"http://x/k: x-amz-checksum-{header}"):
        asyncio.run(s3_direct._check_checksum("http://x/k", good, body[:-1] + b"!"))
    composite = {f"x-amz-checksum-{header}": _b64(compute(b"other")) + "-3"}  # of the parts: cannot be checked here
    asyncio.run(s3_direct._check_checksum("u", composite, body))


def test_a_large_bodys_checksum_is_computed_off_the_event_loop_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """CRC32 of a 29 MB shard takes ~8 ms: the loop receives other answers meanwhile."""
    threads: list[int] = []

    def recording(data: bytes | bytearray) -> bytes:
        threads.append(__import__("threading").get_ident())
        return zlib.crc32(data).to_bytes(4, "big")

    monkeypatch.setitem(s3_direct._CHECKSUMS, "crc32", recording)

    async def check(size: int) -> int:
        body = bytes(size)
        await s3_direct._check_checksum("u", {"x-amz-checksum-crc32": _b64(zlib.crc32(body).to_bytes(4, "big"))}, body)
        return __import__("threading").get_ident()

    loop_thread = asyncio.run(check(s3_direct.CHECKSUM_ON_THREAD_BYTES - 1))
    assert threads == [loop_thread]  # a small one: inline, a thread hop would cost more
    loop_thread = asyncio.run(check(s3_direct.CHECKSUM_ON_THREAD_BYTES))
    assert len(threads) == 2 and threads[1] != loop_thread


def test_the_checksum_an_object_was_uploaded_with_is_checked_on_every_whole_read(s3, connections: str) -> None:
    """As S3 does, the loopback server returns the CRC32 botocore uploaded with; a corrupted object is refused by name."""
    store = make_store(s3)
    big = bytes(range(256)) * (s3_direct.CHECKSUM_ON_THREAD_BYTES // 256 + 1)
    store.set("big", big)
    assert s3.buckets[BUCKET]["root/big"].checksum[0] == "crc32"
    assert store.get("big") == big
    stored = s3.buckets[BUCKET]["root/big"]
    stored.data = big[:-1] + b"!"  # the bytes change under the checksum
    with pytest.raises(StoreError, match="x-amz-checksum-crc32") as caught:
        store.get("big")
    assert "root/big" in str(caught.value)


def test_whole_object_gets_ask_for_the_checksum(s3, monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store(s3)
    gets = gets_of(store)
    sent: list[dict[str, str]] = []
    original = sigv4_headers

    def spy(url: str, headers: dict[str, str], **kwargs: Any) -> dict[str, str]:
        sent.append(dict(headers))
        return original(url, headers, **kwargs)

    monkeypatch.setattr("zarr3_backend.store.s3_direct.sigv4_headers", spy)
    assert store.get("zarr.json") == b"{}" and store.get("c/0/1", ByteRange(0, 1)) == b"\0"
    assert [h.get("x-amz-checksum-mode") for h in sent] == ["ENABLED", None]
    assert gets._checksums


def test_the_installed_clients_take_the_direct_path(s3, connections: str) -> None:
    """If aiobotocore changes what the direct path relies on, this says so (reads stay right, only slower)."""
    store = make_store(s3)  # held: a file system collected mid-test closes its client's connections
    gets = gets_of(store)
    assert gets._credentials is not None and gets._region == "us-east-1"
    assert sync_get(gets, "zarr.json") == b"{}"
    route = gets._routes[BUCKET]
    assert route is not None and (route.pool is not None) == (connections == "own")


def test_own_connections_are_kept_alive_and_closed_with_the_client(s3, connections: str, monkeypatch) -> None:
    if connections != "own":
        pytest.skip("our own connections only")
    monkeypatch.setenv("ZARR3_BACKEND_S3_WARM_CONNECTIONS", "0")
    store = make_store(s3)
    gets = gets_of(store)
    for _ in range(5):
        assert store.get("c/0/1", ByteRange(3, 5)) == bytes([3, 4])
    route = gets._routes[BUCKET]
    assert route is not None and route.pool is not None
    assert route.pool._open == 1  # one request at a time: one connection, reused
    read = store.get_many_versioned([("c/0/1", None)])[0]
    assert type(read.value) is bytearray and read.value == KEYS["c/0/1"]  # the buffer it was received into
    assert type(store.get("c/0/1")) is bytes  # what the Store interface promises
    sync(store.fs.loop, store.fs.s3.close)
    assert route.pool._closed and not route.pool._idle


def test_a_client_is_freed_with_its_filesystem(s3) -> None:
    store = make_store(s3)
    assert store.get("c/0/1", ByteRange(3, 5)) == bytes([3, 4])  # through the direct path
    client = weakref.ref(sync(store.fs.loop, store.fs.get_s3, BUCKET))
    assert client() in s3_direct._BY_CLIENT
    del store
    gc.collect()
    assert client() is None  # the client's model alone is ~35k objects


@pytest.mark.parametrize("warm", [None, "0", "3", "50"])
def test_a_clients_first_get_warms_connections_for_the_next_wave(s3, connections: str, monkeypatch, warm) -> None:
    if connections != "own":
        pytest.skip("our own connections only")
    if warm is not None:
        monkeypatch.setenv("ZARR3_BACKEND_S3_WARM_CONNECTIONS", warm)
    store = make_store(s3, config_kwargs={"max_pool_connections": 12})
    assert store.get("zarr.json") == b"{}"
    pool = gets_of(store)._routes[BUCKET].pool  # type: ignore[union-attr]
    expected = 1 + min({None: 8, "0": 0, "3": 3, "50": 11}[warm], 11)  # the first GET's own, the warmed, the pool size

    async def warmed() -> None:
        await asyncio.gather(*pool._warming)

    sync(store.fs.loop, warmed)
    assert pool._open == len(pool._idle) == expected
    reads = store.get_many_versioned([("c/0/1", None)] * expected)
    assert all(read.value == KEYS["c/0/1"] for read in reads)
    assert pool._open == expected  # the wave found its connections open


def test_a_warm_connections_setting_that_is_no_number_is_an_error(s3, monkeypatch) -> None:
    monkeypatch.setenv("ZARR3_BACKEND_S3_WARM_CONNECTIONS", "many")
    with pytest.raises(StoreError, match="ZARR3_BACKEND_S3_WARM_CONNECTIONS must be a whole number, not 'many'"):
        make_store(s3).get("zarr.json")


def test_session_settings_our_connections_cannot_honour_keep_aiohttp(s3, connections: str) -> None:
    config = {"connector_args": {"keepalive_timeout": 5, "use_dns_cache": False}}
    store = make_store(s3, config_kwargs=config)
    gets = gets_of(store)
    assert sync_get(gets, "zarr.json") == b"{}"
    route = gets._routes[BUCKET]
    assert route is not None and route.pool is None


# -- https, as S3 speaks it ----------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_tls(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("cryptography")
    tls = self_signed_certificate(tmp_path_factory.mktemp("tls"))
    with latency_s3_server(tls=tls) as server:
        server.create_bucket(BUCKET)
        for key, value in KEYS.items():
            server.put(BUCKET, f"root/{key}", value)
        yield server


def test_reads_over_https_take_the_direct_path_with_the_clients_tls_settings(s3_tls, monkeypatch) -> None:
    assert s3_tls.endpoint_url.startswith("https://")
    store = make_store(s3_tls)  # trusts the server's certificate (storage_options' verify=)
    calls = botocore_gets(monkeypatch, store)
    assert store.get("zarr.json") == b"{}" and store.get("c/0/1", ByteRange(7, 9)) == bytes([7, 8])
    assert store.get("missing") is None
    assert not calls


def test_an_untrusted_certificate_is_refused_on_both_paths(s3_tls, monkeypatch) -> None:
    options = s3_tls.storage_options
    store = make_store(  # verify=True: the default CA bundle; one attempt (a failed handshake fails again)
        s3_tls, client_kwargs={**options["client_kwargs"], "verify": True}, config_kwargs={"retries": {"max_attempts": 1}}
    )
    monkeypatch.setattr(store.fs, "retries", 1)
    calls = botocore_gets(monkeypatch, store)
    with pytest.raises(StoreError, match="zarr.json"):
        store.get("zarr.json")
    assert calls  # the direct path failed the handshake and left the request to botocore, which failed it too
