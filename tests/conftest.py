"""Shared fixtures: a fresh local store, a LocalCluster, loopback S3 (moto) and HTTP servers, fresh per-test
locations on them.

Use ``s3_url`` + ``s3_storage_options`` for a fresh empty bucket, and
``http_dir`` for a fresh directory that is also served over HTTP. Only
127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.clusters import local_cluster
from zarr3_backend.store import Store, make_store

if TYPE_CHECKING:
    from tests.servers.servers import S3Endpoint

# Conftests hold no doctests: collected as doctest modules, the area conftests (tests/cli/conftest.py is
# met before this file) would be imported under one module name, "conftest", and clash.
collect_ignore_glob = ["*conftest.py"]

# Before any zarr3_backend.testing module is imported: rewrite the contract's asserts.
pytest.register_assert_rewrite("zarr3_backend.testing")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """An empty local store under the test's ``tmp_path`` (modules that need another kind define their own)."""
    return make_store(str(tmp_path / "data.zarr"))


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A ``distributed.Client`` on a LocalCluster of 2 worker processes x 1 thread, one per test module."""
    with local_cluster(2) as (_, client):
        yield client


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Endpoint]:
    """A moto S3 server for the whole session (``.endpoint_url``, ``.storage_options``, ``.make_bucket()``)."""
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    from tests.servers.servers import moto_s3_server

    with moto_s3_server() as endpoint:
        yield endpoint


@pytest.fixture
def s3_storage_options(s3_server: S3Endpoint) -> dict[str, Any]:
    """s3fs ``storage_options`` for :func:`s3_server`."""
    return s3_server.storage_options


@pytest.fixture
def s3_url(s3_server: S3Endpoint) -> str:
    """``s3://<fresh bucket>`` on the moto server; pair it with ``s3_storage_options``."""
    return s3_server.make_bucket()


@dataclass(frozen=True)
class HttpDir:
    """A local directory (write here) and the URL serving it (read there)."""

    path: Path
    url: str


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpDir]:
    """A Range-capable HTTP server on 127.0.0.1 serving one session directory."""
    pytest.importorskip("aiohttp")
    from tests.servers.servers import http_server as serve_directory

    root = tmp_path_factory.mktemp("http-root")
    with serve_directory(root) as url:
        yield HttpDir(root, url)


@pytest.fixture
def http_dir(http_server: HttpDir) -> HttpDir:
    """A fresh empty directory below the served root, with its URL."""
    name = uuid.uuid4().hex[:12]
    path = http_server.path / name
    path.mkdir()
    return HttpDir(path, f"{http_server.url}/{name}")


@pytest.fixture(autouse=True)
def _s3_filesystems_end_with_their_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Empty s3fs's instance cache after each test that does not use the session's moto server.

    A server a test starts has its own port, so a filesystem cached for it is used by that test only,
    and each holds a botocore client with its own copy of the S3 service model (~35k objects). Kept
    for the whole run, they made each full garbage collection longer than the injected latency the
    rounds tests measure (1.2 s in test_latency_server.py). The session server's tests share one
    filesystem instead (the same options, so one cache entry): building its client again for each of
    them took about 0.2 s a test, most of the store contract's time.
    """
    yield
    s3fs = sys.modules.get("s3fs")
    if s3fs is not None and "s3_server" not in request.fixturenames:
        s3fs.S3FileSystem.clear_instance_cache()


def _store_roots(directory: Path) -> list[Path]:
    """Directories holding a ``zarr.json`` whose parent holds none (stores, not their nodes)."""
    return sorted(
        p.parent for p in directory.rglob("zarr.json") if not (p.parent.parent / "zarr.json").exists()
    )


@pytest.fixture(autouse=True)
def _written_stores_validate(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test marked ``validate_stores``, each store under its ``tmp_path`` passes the deep validator.

    Modules of writing tests mark themselves (``pytestmark``); a test that damages a store on purpose
    opts out with ``@pytest.mark.invalid_store``.
    """
    yield
    if not request.node.get_closest_marker("validate_stores") or request.node.get_closest_marker(
        "invalid_store"
    ):
        return
    tmp_path = getattr(request.node, "funcargs", {}).get("tmp_path")
    if tmp_path is None:
        return
    from zarr3_backend.validate import validate_store

    for root in _store_roots(tmp_path):
        errors = [p for p in validate_store(root, deep=True) if p.severity == "error"]
        assert not errors, f"{root.relative_to(tmp_path)} written by this test does not validate: {errors}"
