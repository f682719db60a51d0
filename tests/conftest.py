"""Shared fixtures: loopback S3 (moto) and HTTP servers, fresh per-test locations on them.

Use ``s3_url`` + ``s3_storage_options`` for a fresh empty bucket, and
``http_dir`` for a fresh directory that is also served over HTTP. Only
127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from zarr3_backend.testing.servers import S3Endpoint

# Before any zarr3_backend.testing module is imported: rewrite the contract's asserts.
pytest.register_assert_rewrite("zarr3_backend.testing")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Endpoint]:
    """A moto S3 server for the whole session (``.endpoint_url``, ``.storage_options``, ``.make_bucket()``)."""
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    from zarr3_backend.testing.servers import moto_s3_server

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
    from zarr3_backend.testing.servers import http_server as serve_directory

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
