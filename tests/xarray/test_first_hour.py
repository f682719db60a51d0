"""First-hour snags: what a new user sees in the first writes and reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (adds ds.to_zarr3)
from zarr3_backend import StoreError
from zarr3_backend.store.credentials import CREDENTIAL_VARIABLES, missing_credentials


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


def test_another_s3_failure_is_not_called_missing_credentials() -> None:
    assert (
        missing_credentials("s3://b/x", {"key": "k", "secret": "s"}, "GET http://169.254.169.254: 403", {})
        is None
    )
    assert missing_credentials("s3://b/x", {}, "403 Forbidden: AccessDenied", {}) is None
    assert missing_credentials("gs://b/x", {}, "169.254.169.254", {}) is None
