"""First-hour snags: what a new user sees in the first writes and reads."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (adds ds.to_zarr3)
from zarr3_backend import StoreError
from zarr3_backend.store import make_store
from zarr3_backend.store.credentials import CREDENTIAL_VARIABLES, missing_credentials
from zarr3_backend.store.obstore_options import NO_CREDENTIALS_RETRY, obstore_settings


def final_line(output: str) -> str:
    """The progress line as the terminal shows it last (it is rewritten in place with "\\r")."""
    return output.strip().split("\r")[-1]


def test_progress_on_numpy_data_reports_its_real_shards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = xr.Dataset({"a": (("t", "x"), np.ones((10, 4)))}, coords={"t": np.arange(10)})
    ds.to_zarr3(tmp_path / "a.zarr", encoding={"a": {"chunks": (2, 4), "shards": (4, 4)}}, progress=True)
    line = final_line(capsys.readouterr().out)
    assert line.startswith("to_zarr3: 4/4 shards (100%)"), line  # 3 shards of "a", one of "t"


def test_progress_says_nothing_when_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xr.Dataset(attrs={"title": "empty"}).to_zarr3(tmp_path / "e.zarr", progress=True)
    assert "shards" not in capsys.readouterr().out


@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["obstore", "fsspec"])
def test_s3_without_credentials_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    for name in [*CREDENTIAL_VARIABLES, "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws files
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_TIMEOUT", "1")
    monkeypatch.setenv("AWS_METADATA_SERVICE_NUM_ATTEMPTS", "1")
    with pytest.raises(StoreError) as info:
        xr.open_dataset("s3://no-such-bucket-46/x.zarr", engine="zarr3", storage_options={"backend": backend})
    message = str(info.value)
    assert message.startswith("no credentials found for s3://no-such-bucket-46/x.zarr"), message
    for tried in ("storage_options", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "169.254.169.254", "'anon': True"):
        assert tried in message, tried


class _FailingMetadataService(BaseHTTPRequestHandler):
    """A stand-in for the EC2 instance metadata service off EC2: every request fails (503), and is counted."""

    requests: list[str] = []

    def _fail(self) -> None:
        type(self).requests.append(f"{self.command} {self.path}")
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = _fail

    def log_message(self, format: str, *args: object) -> None:
        """Silent."""


@pytest.mark.timeout(60)
def test_s3_without_credentials_fails_without_retrying_the_metadata_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no credentials configured, obstore's last source (instance metadata) is asked about once, not
    retried ten times with backoff (seconds) before the clear error; configured stores keep obstore's retries."""
    for name in [*CREDENTIAL_VARIABLES, "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FailingMetadataService)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    _FailingMetadataService.requests.clear()
    zarr3_backend.clear_store_cache()  # a client made before would not know the metadata endpoint
    try:
        with pytest.raises(StoreError, match="^no credentials found"):
            make_store("s3://no-such-bucket-57/x.zarr").get("zarr.json")  # one request
        asked = list(_FailingMetadataService.requests)
        with pytest.raises(StoreError, match="^no credentials found for s3://no-such-bucket-57/x.zarr"):
            xr.open_dataset("s3://no-such-bucket-57/x.zarr", engine="zarr3")
    finally:
        server.shutdown()
    assert 1 <= len(asked) <= 1 + NO_CREDENTIALS_RETRY["max_retries"], asked
    assert obstore_settings("s3", {}).retry_config == NO_CREDENTIALS_RETRY
    assert obstore_settings("s3", {"anon": True}).retry_config is None  # obstore's own retries
    assert obstore_settings("s3", {"retry_config": {"max_retries": 5}}).retry_config == {"max_retries": 5}


def test_another_s3_failure_is_not_called_missing_credentials() -> None:
    assert (
        missing_credentials("s3://b/x", {"key": "k", "secret": "s"}, "GET http://169.254.169.254: 403", {})
        is None
    )
    assert missing_credentials("s3://b/x", {}, "403 Forbidden: AccessDenied", {}) is None
    assert missing_credentials("gs://b/x", {}, "169.254.169.254", {}) is None
