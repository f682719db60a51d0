"""ObstoreStore: the store contract against moto and the latency server (http and https), options, TLS, fallbacks."""

from __future__ import annotations

import pickle
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("obstore")

from tests.servers.latency_s3 import LatencyS3Server, latency_s3_server, self_signed_certificate
from zarr3_backend.errors import StoreError
from zarr3_backend.store import (
    ByteRange,
    FsspecStore,
    ObstoreStore,
    Store,
    clear_store_cache,
    make_store,
    stream_reads,
)
from zarr3_backend.store.obstore_options import UnsupportedOptionError, obstore_settings
from zarr3_backend.testing.stores import SAMPLE, StoreContract


def _obstore(url: str, storage_options: dict[str, Any]) -> ObstoreStore:
    store = make_store(url, storage_options=storage_options)
    assert isinstance(store, ObstoreStore), store
    return store


class _ObstoreContract(StoreContract):
    def read_only_view(self, store: Store) -> Store:
        assert isinstance(store, ObstoreStore)
        return ObstoreStore(store.url, store.storage_options, read_only=True)


class TestObstoreOnMoto(_ObstoreContract):
    @pytest.fixture(params=["", "/nested/root.zarr"], ids=["bucket", "nested"])
    def store(self, request: pytest.FixtureRequest, s3_url: str, s3_storage_options: dict[str, Any]) -> Store:
        return _obstore(s3_url + request.param, s3_storage_options)


@pytest.fixture(scope="module", params=["http", "https"])
def latency_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LatencyS3Server]:
    tls = self_signed_certificate(tmp_path_factory.mktemp("tls")) if request.param == "https" else None
    with latency_s3_server(tls=tls) as server:
        yield server


class TestObstoreOnLatencyServer(_ObstoreContract):
    @pytest.fixture
    def store(self, latency_server: LatencyS3Server) -> Store:
        url = latency_server.create_bucket(f"b-{uuid.uuid4().hex[:12]}")
        return _obstore(f"{url}/data.zarr", latency_server.storage_options)


# -- https: verified by default ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LatencyS3Server]:
    with latency_s3_server(tls=self_signed_certificate(tmp_path_factory.mktemp("tls"))) as server:
        server.create_bucket("tls")
        server.put("tls", "data.zarr/zarr.json", SAMPLE["zarr.json"])
        yield server


def _tls_options(server: LatencyS3Server, **client_kwargs: Any) -> dict[str, Any]:
    options = server.storage_options
    return {
        **options,
        "client_kwargs": {
            **{k: v for k, v in options["client_kwargs"].items() if k != "verify"},
            **client_kwargs,
        },
    }


@pytest.fixture(autouse=True)
def _no_ca_bundle_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)


def test_a_self_signed_server_is_refused_without_its_ca(tls_server: LatencyS3Server) -> None:
    store = _obstore("s3://tls/data.zarr", _tls_options(tls_server))
    with pytest.raises(
        StoreError, match=r"could not read key 'zarr\.json' of s3://tls/data\.zarr: .*error sending request"
    ):
        store.get("zarr.json")


@pytest.mark.parametrize("how", ["verify", "AWS_CA_BUNDLE", "verify=False"])
def test_a_self_signed_server_is_trusted_with_its_ca_or_without_checks(
    tls_server: LatencyS3Server, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tls_server.ca_file is not None
    if how == "verify":
        options = _tls_options(tls_server, verify=tls_server.ca_file)
    elif how == "AWS_CA_BUNDLE":
        monkeypatch.setenv("AWS_CA_BUNDLE", tls_server.ca_file)
        options = _tls_options(tls_server)
    else:
        options = _tls_options(tls_server, verify=False)
    assert _obstore("s3://tls/data.zarr", options).get("zarr.json") == SAMPLE["zarr.json"]


# -- storage options --------------------------------------------------------------------------------------------------


def test_s3fs_options_are_translated() -> None:
    settings = obstore_settings("s3", {
        "key": "k", "secret": "s", "token": "t", "anon": False, "requester_pays": True, "profile": "p",
        "client_kwargs": {"region_name": "eu-west-1", "endpoint_url": "http://127.0.0.1:9"},
        "config_kwargs": {"max_pool_connections": 64},
    })  # fmt: skip
    assert settings.config == {
        "access_key_id": "k", "secret_access_key": "s", "session_token": "t", "request_payer": True,
        "region": "eu-west-1", "endpoint": "http://127.0.0.1:9",
    }  # fmt: skip
    assert settings.profile == "p" and settings.client_options == {"allow_http": True}
    assert obstore_settings("s3", {"anon": True}).config == {"skip_signature": True}
    assert obstore_settings("gs", {"token": "anon"}).config == {"skip_signature": True}
    assert obstore_settings("gs", {"token": {"type": "service_account"}}).config == {
        "service_account_key": '{"type": "service_account"}'
    }
    assert obstore_settings("az", {"account_name": "a", "sas_token": "x"}).config == {
        "account_name": "a",
        "sas_key": "x",
    }


@pytest.mark.parametrize("options, name", [
    ({"use_ssl": False}, "use_ssl"), ({"client_kwargs": {"proxies": {}}}, "client_kwargs.proxies"),
    ({"config_kwargs": {"retries": {}}}, "config_kwargs.retries"),
])  # fmt: skip
def test_an_option_obstore_lacks_falls_back_to_fsspec_with_a_warning_naming_it(
    options: dict[str, Any], name: str
) -> None:
    with pytest.warns(
        UserWarning, match=rf"storage option '{name}' has no obstore equivalent.*through fsspec"
    ):
        store = make_store("s3://bucket/x", storage_options={"anon": True, **options})
    assert isinstance(store, FsspecStore)
    with pytest.raises(UnsupportedOptionError, match=name):
        make_store("s3://bucket/x", storage_options={"backend": "obstore", **options})


def test_the_fallback_warning_names_the_users_line(s3_url: str, s3_storage_options: dict[str, Any]) -> None:
    import zarr3_backend

    zarr3_backend.create_group(f"{s3_url}/g", storage_options=s3_storage_options)
    with pytest.warns(UserWarning, match="'use_ssl' has no obstore equivalent") as caught:
        zarr3_backend.open_group(f"{s3_url}/g", storage_options={**s3_storage_options, "use_ssl": False})
    assert [w.filename for w in caught] == [__file__]


def test_backend_fsspec_forces_fsspec() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(
            make_store("s3://bucket/x", storage_options={"anon": True, "backend": "fsspec"}), FsspecStore
        )
        assert isinstance(make_store("gs://bucket/x", storage_options={"token": "anon"}), ObstoreStore)
    assert isinstance(make_store("memory://x"), FsspecStore)


def test_pickles_as_its_description_and_shares_its_client_until_the_cache_is_cleared(
    s3_url: str, s3_storage_options: dict[str, Any]
) -> None:
    store = _obstore(s3_url, s3_storage_options)
    store.set("a", b"1")
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store and clone.client is store.client and clone.get("a") == b"1"
    client = store.client
    clear_store_cache()
    assert store.client is not client and store.get("a") == b"1"


def test_large_values_go_up_whole(s3_url: str, s3_storage_options: dict[str, Any]) -> None:
    from zarr3_backend.store.obstore_store import PUT_PART_BYTES

    store = _obstore(s3_url, s3_storage_options)
    value = np.random.default_rng(0).integers(0, 255, PUT_PART_BYTES * 2 + 12345, dtype=np.uint8).tobytes()
    store.set("big", (value[:100], value[100:]))
    assert (
        store.get("big") == value
        and store.get("big", ByteRange(PUT_PART_BYTES - 3, PUT_PART_BYTES + 5))
        == value[PUT_PART_BYTES - 3 : PUT_PART_BYTES + 5]
    )


def test_a_value_in_pieces_goes_up_as_its_pieces_in_one_put(
    s3_url: str, s3_storage_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import obstore

    calls: list[tuple[object, object]] = []
    put = obstore.put

    def spy(store: Any, key: str, payload: Any, **options: Any) -> Any:
        calls.append((payload, options.get("use_multipart")))
        return put(store, key, payload, **options)

    monkeypatch.setattr(obstore, "put", spy)
    store = _obstore(s3_url, s3_storage_options)
    floats = np.arange(6, dtype="float32")
    pieces = (b"head", floats.data, bytearray(b"tail"))
    store.set("pieces", pieces)
    ((payload, multipart),) = calls
    assert multipart is False and isinstance(payload, list) and len(payload) == 3  # never joined
    assert payload[0] is pieces[0] and payload[2] is pieces[2] and bytes(payload[1]) == floats.tobytes()
    assert store.get("pieces") == b"head" + floats.tobytes() + b"tail"
    assert store.create("created", pieces) and store.get("created") == store.get("pieces")


# -- end to end: the same data as fsspec reads ------------------------------------------------------------------------


def test_an_s3_dataset_reads_bit_identical_through_obstore_and_fsspec(
    s3_url: str, s3_storage_options: dict[str, Any]
) -> None:
    xr = pytest.importorskip("xarray")
    from zarr3_backend import to_zarr3

    rng = np.random.default_rng(7)
    ds = xr.Dataset(
        {
            "t": (("time", "y"), rng.standard_normal((6, 5)).astype("float32")),
            "n": ("y", np.arange(5, dtype="int64")),
        },
        coords={"time": np.arange(6), "y": np.linspace(0, 1, 5)},
    )
    url = f"{s3_url}/ds.zarr"
    to_zarr3(
        ds,
        make_store(url, storage_options=s3_storage_options),
        encoding={"t": {"chunks": (3, 5), "shards": (6, 5)}},
    )
    assert isinstance(make_store(url, storage_options=s3_storage_options), ObstoreStore)
    via_obstore = xr.open_dataset(url, engine="zarr3", storage_options=s3_storage_options).load()
    via_fsspec = xr.open_dataset(
        url, engine="zarr3", storage_options={**s3_storage_options, "backend": "fsspec"}
    ).load()
    xr.testing.assert_identical(via_obstore, via_fsspec)
    xr.testing.assert_identical(via_obstore, ds)
    for name in ds.variables:
        assert (
            via_obstore[name].values.tobytes()
            == via_fsspec[name].values.tobytes()
            == ds[name].values.tobytes()
        )


def test_sizes_are_asked_for_not_read(s3_url: str, s3_storage_options: dict[str, Any]) -> None:
    store = _obstore(s3_url, s3_storage_options)
    store.set_many({"a": b"123", "b/c": b""})
    assert store.sizes(["a", "b/c", "missing"]) == [3, 0, None]


def test_stream_reads_sends_requests_asked_first_next(
    s3_url: str, s3_storage_options: dict[str, Any]
) -> None:
    store = ObstoreStore(s3_url, s3_storage_options, io_concurrency=2)
    store.set_many({f"k{i}": bytes([i]) for i in range(10)})
    stream = stream_reads(store, [(f"k{i}", None) for i in range(10)])
    order = []
    for index, read in stream:
        assert read.value == bytes([index])
        if not order:
            stream.send_first([9, 5, 0])  # answered already: unaffected
        order.append(index)
    # up to 4 requests may have been sent before the first answer was seen: 9 and 5 (sent together, answered
    # in either order) come before 6
    assert max(order.index(9), order.index(5)) < order.index(6) and sorted(order) == list(range(10))
    streamed = [read.value for _, read in stream_reads(store, [("k1", None), ("missing", None)])]
    assert streamed in ([b"\x01", None], [None, b"\x01"])


def test_a_child_forked_after_obstore_was_used_is_refused_instead_of_hanging(
    s3_url: str, s3_storage_options: dict[str, Any]
) -> None:
    from forking import in_forked_child

    store = _obstore(s3_url, s3_storage_options)
    store.set("a", b"1")

    def refused() -> bool:
        try:
            store.get("a")
        except StoreError as exc:
            return "forked" in str(exc) and "spawn" in str(exc)
        return False

    assert in_forked_child(refused)
    assert store.get("a") == b"1"  # the parent goes on
