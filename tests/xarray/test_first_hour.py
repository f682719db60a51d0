"""First-hour snags: what a new user sees in the first writes and reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import zarr3_backend  # noqa: F401  (adds ds.to_zarr3)


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
