"""``zarr3_backend.convert`` and ``zarr3 convert``: v2 and v3 stores written by xarray + zarr-python become
sharded v3 stores that read as identical, verified, resumable after an interruption, and never touch SRC."""

from __future__ import annotations

import hashlib
import math
import re
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from command import zarr3
from hypothesis import given
from hypothesis import strategies as st

import zarr3_backend
from zarr3_backend import ConvertSummary, convert
from zarr3_backend.cli import main
from zarr3_backend.conversion import default_shards
from zarr3_backend.conversion import shards as shard_tasks
from zarr3_backend.conversion.progress_record import DONE, Done, checksum
from zarr3_backend.errors import (
    ArgumentError,
    ChecksumError,
    MetadataError,
    NodeExistsError,
    NodeNotFoundError,
    WriteError,
)
from zarr3_backend.store import make_store
from zarr3_backend.validate import validate_store

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings(
        "ignore::UserWarning"
    ),  # zarr-python's warnings about v3 string and time types
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated metadata:RuntimeWarning"),
]
SHARDS = (6, 4, 10)  # for every 3-D array: 2 x 2 x 1 shards of 3 x 4 x 5 source chunks


def dataset() -> xr.Dataset:
    """CF encodings of every common kind: packed integers with a _FillValue, NaNs, times, strings, flags."""
    rng = np.random.default_rng(0)
    temperature = rng.normal(280, 10, (12, 8, 10)).astype("float32")
    temperature[0, 0, :3] = np.nan
    packed = rng.uniform(0, 100, (12, 8, 10))
    packed[1, 2, 3] = np.nan
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), temperature, {"units": "K", "long_name": "2 m temperature"}),
            "precip": (("time", "lat", "lon"), packed, {"units": "mm"}),
            "station": (("lat",), np.array(["a", "bb", "ccc", "d", "e", "f", "g", "hh"])),
            "land": (("lon",), np.arange(10) % 3 == 0),
        },
        coords={
            "time": pd.date_range("2001-01-01", periods=12, freq="6h"),
            "lat": np.linspace(-80, 80, 8),
            "lon": np.arange(10) * 36.0,
        },
        attrs={"title": "convert test", "history": "written by xarray"},
    )
    ds.precip.encoding = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 50.0, "_FillValue": -32767}
    return ds.chunk({"time": 3, "lat": 4, "lon": 5})


@pytest.fixture(scope="module", params=[2, 3], ids=["v2", "v3"])
def source(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset written by xarray + zarr-python as Zarr v2 or v3 (consolidated)."""
    path = tmp_path_factory.mktemp(f"v{request.param}") / "src.zarr"
    dataset().to_zarr(path, zarr_format=request.param, consolidated=True)
    return path


def opened(path: Path, engine: str = "zarr") -> xr.Dataset:
    return xr.open_dataset(path, engine=engine).load()


def fingerprint(path: Path) -> dict[str, str]:
    """Every file below ``path`` with a hash of its bytes."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in path.rglob("*")
        if p.is_file()
    }


def test_converted_store_reads_identical_and_validates(source: Path, tmp_path: Path) -> None:
    before = fingerprint(source)
    summary = convert(source, tmp_path / "dst.zarr", shards=SHARDS)
    assert fingerprint(source) == before
    assert summary == ConvertSummary(arrays=7, shards=4 * 2 + 5, copied=13, skipped=0, nbytes=summary.nbytes)
    expected = opened(source)
    xr.testing.assert_identical(opened(tmp_path / "dst.zarr"), expected)
    xr.testing.assert_identical(opened(tmp_path / "dst.zarr", "zarr3"), expected)
    t2m = zarr3_backend.open_array(tmp_path / "dst.zarr", "t2m")
    assert (t2m.chunks, t2m.shards, t2m.dimension_names) == ((3, 4, 5), SHARDS, ("time", "lat", "lon"))
    assert "_ARRAY_DIMENSIONS" not in t2m.attrs
    root = zarr3_backend.open_group(tmp_path / "dst.zarr")
    assert sorted(root.metadata.consolidated or {}) == [
        "land",
        "lat",
        "lon",
        "precip",
        "station",
        "t2m",
        "time",
    ]
    assert [
        p for p in validate_store(make_store(tmp_path / "dst.zarr"), deep=True) if p.severity == "error"
    ] == []
    assert not any(key.startswith("__zarr3_convert") for key in fingerprint(tmp_path / "dst.zarr"))


def test_packed_variable_keeps_its_raw_values_and_encoding(source: Path, tmp_path: Path) -> None:
    convert(source, tmp_path / "dst.zarr", shards=SHARDS)
    raw = xr.open_dataset(tmp_path / "dst.zarr", engine="zarr", mask_and_scale=False).precip
    assert raw.dtype == np.int16 and raw.attrs["scale_factor"] == 0.01 and raw.attrs["_FillValue"] == -32767
    source_raw = xr.open_dataset(source, engine="zarr", mask_and_scale=False).precip
    np.testing.assert_array_equal(raw.values, source_raw.values)


def test_interrupted_convert_finishes_on_a_second_run(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dst = tmp_path / "dst.zarr"
    fail_after(monkeypatch, 5)
    with pytest.raises(RuntimeError, match="simulated interruption"):
        convert(source, dst, shards=SHARDS)
    with pytest.raises(NodeNotFoundError):  # nothing to open before every shard is verified
        zarr3_backend.open_group(dst)
    verified = len(list(make_store(dst).list_prefix(DONE)))
    assert 5 <= verified < 13
    with pytest.raises(
        ArgumentError,
        match=r"unfinished convert with another plan "
        r"\(arrays/precip/chunk_grid/configuration/chunk_shape: \[6, 4, 10\] then, \[12, 8, 10\] now\)",
    ):
        convert(source, dst, shards=(12, 8, 10))
    monkeypatch.undo()
    summary = convert(source, dst, shards=SHARDS)
    assert (summary.skipped, summary.copied, summary.shards) == (verified, 13 - verified, 13)
    xr.testing.assert_identical(opened(dst), opened(source))


def fail_after(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """Make shard tasks raise once ``count`` of them have finished."""
    original, finished, lock = shard_tasks.ShardCopy.__call__, [0], threading.Lock()

    def interrupted(self: shard_tasks.ShardCopy) -> int:
        with lock:
            if finished[0] >= count:
                raise RuntimeError("simulated interruption")
        result = original(self)
        with lock:
            finished[0] += 1
        return result

    monkeypatch.setattr(shard_tasks.ShardCopy, "__call__", interrupted)


def test_to_object_storage_resumes_and_reads_identical(
    tmp_path: Path,
    s3_url: str,
    s3_storage_options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source, dst = tmp_path / "v2.zarr", f"{s3_url}/dst.zarr"
    dataset().to_zarr(source, zarr_format=2, consolidated=True)
    fail_after(monkeypatch, 4)
    with pytest.raises(RuntimeError, match="simulated interruption"):
        convert(source, dst, shards=SHARDS, dst_storage_options=s3_storage_options)
    monkeypatch.undo()
    summary = convert(source, dst, shards=SHARDS, dst_storage_options=s3_storage_options)
    assert summary.skipped >= 4 and summary.skipped + summary.copied == 13
    converted = xr.open_dataset(dst, engine="zarr3", storage_options=s3_storage_options).load()
    xr.testing.assert_identical(converted, opened(source))
    assert not list(make_store(dst, storage_options=s3_storage_options).list_prefix("__zarr3_convert/"))


def test_a_shard_that_reads_back_differently_is_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = zarr3_backend.create_array(tmp_path / "src.zarr", "x", shape=(20,), dtype="int32", chunks=(5,))
    src[:] = np.arange(20)
    real_write = shard_tasks.write_block
    monkeypatch.setattr(
        shard_tasks,
        "write_block",
        lambda array, start, values: real_write(array, start, values + (start[0] == 10)),
    )
    with pytest.raises(
        ChecksumError, match=r"x/c/1: the shard read back has checksum crc32c:\w+, but the source"
    ):
        convert(tmp_path / "src.zarr", tmp_path / "dst.zarr", shards=(10,))
    record = make_store(tmp_path / "dst.zarr")
    assert sorted(record.list_prefix(DONE)) == [DONE + "x/c/0"]
    entry = Done.parse(record.get(DONE + "x/c/0"))
    assert entry is not None and entry.checksum == checksum(np.arange(10, dtype="int32"))


def test_existing_dst_is_refused_unless_overwrite(source: Path, tmp_path: Path) -> None:
    dst = tmp_path / "dst.zarr"
    zarr3_backend.create_array(dst, "keep", shape=(3,), dtype="int8")[:] = 7
    before = fingerprint(dst)
    with pytest.raises(
        NodeExistsError, match=r"not empty; convert writes only into an empty DST \(pass overwrite=True"
    ):
        convert(source, dst)
    assert fingerprint(dst) == before
    convert(source, dst, overwrite=True, shards=SHARDS)
    assert "keep" not in zarr3_backend.open_group(dst)
    with pytest.raises(NodeExistsError):  # a finished convert is not run again
        convert(source, dst, shards=SHARDS)


@pytest.mark.parametrize("inside", ["", "sub/dst.zarr"])
def test_dst_overlapping_src_is_refused(source: Path, inside: str) -> None:
    before = fingerprint(source)
    with pytest.raises(ArgumentError, match="overlap"):
        convert(source, source / inside if inside else source, overwrite=True)
    assert fingerprint(source) == before


def test_a_v2_data_type_without_a_v3_equivalent_is_refused_before_writing(tmp_path: Path) -> None:
    import zarr

    group = zarr.open_group(tmp_path / "src.zarr", mode="w", zarr_format=2)
    group.create_array("ok", shape=(2,), dtype="int8")[:] = 1
    group.create_array("pairs", shape=(2,), dtype=[("a", "<i4"), ("b", "<f8")])
    with pytest.raises(
        MetadataError,
        match=r"array 'pairs': its data type 'structured' \(numpy \[\('a', '<i4'\), "
        r"\('b', '<f8'\)\]\) has no Zarr v3 equivalent, so it cannot be converted",
    ):
        convert(tmp_path / "src.zarr", tmp_path / "dst.zarr")
    assert not (tmp_path / "dst.zarr").exists() or not any((tmp_path / "dst.zarr").iterdir())


def test_v2_times_with_a_fill_value_read_the_same_after_converting(tmp_path: Path) -> None:
    """datetime64/timedelta64 v2 arrays with a fill value: as xarray can neither write nor read their ``_FillValue``
    attribute in v3, it is not written; xarray does not mask them with it either, so every value reads the same."""
    import zarr

    group = zarr.open_group(tmp_path / "src.zarr", mode="w", zarr_format=2)
    fills = {
        "when": ("M8[s]", np.datetime64(5, "s")),
        "nat": ("M8[ns]", np.datetime64("NaT", "ns")),
        "lag": ("m8[s]", np.timedelta64(7, "s")),
        "count": ("int16", -1),
    }
    for name, (dtype, fill) in fills.items():
        array = group.create_array(
            name,
            shape=(5,),
            chunks=(2,),
            dtype=dtype,
            fill_value=fill,
            attributes={"_ARRAY_DIMENSIONS": ["x"]},
        )
        array[:3] = np.array([1, 2, 3]).astype(
            dtype
        )  # the last chunk stays missing: it reads as the fill value
    group["when"][1] = np.datetime64("NaT")
    zarr.consolidate_metadata(tmp_path / "src.zarr")
    convert(tmp_path / "src.zarr", tmp_path / "dst.zarr")
    source = opened(tmp_path / "src.zarr")
    assert source.when.values[4] == np.datetime64(5, "s") and source.lag.values[4] == np.timedelta64(
        7, "s"
    )  # unmasked
    for name, (dtype, fill) in fills.items():
        written = zarr3_backend.open_array(tmp_path / "dst.zarr", name)
        assert (
            written.dtype == np.dtype(dtype)
            and written.fill_value.astype(dtype) == np.array(fill).astype(dtype)
            or (np.isnat(fill) and np.isnat(written.fill_value))
        )
        assert ("_FillValue" in written.attrs) == (name == "count")
    converted = opened(tmp_path / "dst.zarr")
    xr.testing.assert_identical(opened(tmp_path / "dst.zarr", "zarr3"), converted)
    for name in ("when", "nat", "lag"):
        assert source[name].attrs.pop("_FillValue") is not None  # the only difference
    xr.testing.assert_identical(converted, source)
    xr.testing.assert_identical(opened(tmp_path / "src.zarr", "zarr3"), opened(tmp_path / "src.zarr"))


def test_settings_per_array(tmp_path: Path) -> None:
    group = zarr3_backend.create_group(tmp_path / "src.zarr", attributes={"a": 1})
    group.create_array("x", shape=(40, 6), dtype="float64", chunks=(10, 6))[:] = np.arange(240).reshape(40, 6)
    group.create_array("g/y", shape=(30,), dtype="uint8", chunks=(10,), attributes={"k": "v"})[:] = 3
    convert(
        tmp_path / "src.zarr",
        tmp_path / "dst.zarr",
        chunks={"x": (5, 3)},
        shards={"x": (20, 6), "g/y": (30,)},
        codecs={"g/y": ["bytes", {"name": "gzip", "configuration": {"level": 1}}]},
    )
    x, y = (zarr3_backend.open_array(tmp_path / "dst.zarr", p) for p in ("x", "g/y"))
    assert (x.chunks, x.shards, y.chunks, y.shards) == ((5, 3), (20, 6), (10,), (30,))
    assert y.metadata.codecs[0]["configuration"]["codecs"][1] == {
        "name": "gzip",
        "configuration": {"level": 1},
    }
    assert y.attrs["k"] == "v" and zarr3_backend.open_group(tmp_path / "dst.zarr").attrs["a"] == 1
    np.testing.assert_array_equal(x[:], np.arange(240).reshape(40, 6))
    with pytest.raises(ArgumentError, match="shards: no array 'z'"):
        convert(tmp_path / "src.zarr", tmp_path / "other.zarr", shards={"z": (1,)})


def test_cli_convert_resumes_after_a_killed_run_and_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, dst = tmp_path / "v2.zarr", tmp_path / "dst.zarr"
    dataset().to_zarr(source, zarr_format=2, consolidated=True)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_3.format(src=str(source), dst=str(dst))], timeout=120
    )
    assert killed.returncode == 9
    result = zarr3("convert", source, dst, "--shards", "6,4,10", "--codecs", '["bytes", "zstd", "crc32c"]')
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"converting {source} -> {dst}\n")
    copied, earlier = map(
        int,
        re.search(
            r"13 shards, (\d+) written and verified .*, (\d+) verified by an earlier run", result.stdout
        ).groups(),
    )
    assert copied + earlier == 13 and earlier >= 3
    assert (
        "convert: 13/13 shards (100%)" in result.stdout
    )  # the earlier run's shards checked, the rest copied
    xr.testing.assert_identical(opened(dst), opened(source))
    assert main(["validate", "--deep", str(dst)]) == 0 and "valid: 0 errors" in capsys.readouterr().out
    assert main(["convert", str(source), str(dst)]) == 1
    refused = capsys.readouterr().err
    assert (
        "not empty" in refused and "pass --overwrite to delete" in refused and "overwrite=True" not in refused
    )


KILLED_AFTER_3 = textwrap.dedent("""
    import os, threading
    from zarr3_backend.conversion import convert, shards
    original, lock, done = shards.ShardCopy.__call__, threading.Lock(), []
    def killed(self):
        result = original(self)
        with lock:
            done.append(self.key)
            if len(done) == 3:
                os._exit(9)  # no cleanup, like a kill
        return result
    shards.ShardCopy.__call__ = killed
    convert({src!r}, {dst!r}, shards=(6, 4, 10), codecs=["bytes", "zstd", "crc32c"])
""")


def test_cli_settings_are_parsed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = str(tmp_path / "src.zarr")
    zarr3_backend.create_array(src, "v", shape=(8, 4), dtype="int16", chunks=(2, 4))[:] = 1
    assert (
        main(
            ["convert", src, str(tmp_path / "dst.zarr"), "--quiet", "--shards", "v=4,4", "--chunks", "v=1,4"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        out.splitlines()[-1]
        == "converted 1 array: 2 shards, 2 written and verified (0 MB); consolidated metadata written"
    )
    v = zarr3_backend.open_array(tmp_path / "dst.zarr", "v")
    assert (v.chunks, v.shards) == ((1, 4), (4, 4))
    assert main(["convert", src, str(tmp_path / "x.zarr"), "--shards", "4,4", "--shards", "v=4,4"]) == 1
    assert "give one value for every array, or PATH=VALUE entries, not both" in capsys.readouterr().err
    assert main(["convert", src, str(tmp_path / "x.zarr"), "--codecs", '{"name": "zstd"}']) == 1
    assert "expected a JSON list of codecs" in capsys.readouterr().err


def test_on_a_distributed_cluster(client: Any, tmp_path: Path) -> None:
    src = tmp_path / "src.zarr"
    dataset().to_zarr(src, zarr_format=3, consolidated=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = convert(src, tmp_path / "dst.zarr", shards=SHARDS, progress=True)
    assert summary.copied == 13
    xr.testing.assert_identical(opened(tmp_path / "dst.zarr"), opened(src))
    with pytest.raises(WriteError, match="lives in this process's memory"):  # the tasks run in the workers
        convert(src, "memory://convert/dst.zarr")
    zarr3_backend.create_array("memory://convert/src.zarr", "x", shape=(4,), dtype="int8")[:] = 1
    with pytest.raises(ArgumentError, match="lives in this process's memory, which the dask workers"):
        convert("memory://convert/src.zarr", tmp_path / "from_memory.zarr")


@given(
    st.lists(st.tuples(st.integers(1, 5000), st.integers(1, 400)), min_size=1, max_size=4),
    st.sampled_from([1, 4, 8]),
)
def test_default_shards_hold_whole_chunks_of_half_to_all_of_the_target(
    dims: list[tuple[int, int]], item_size: int
) -> None:
    shape, chunks = tuple(n for n, _ in dims), tuple(min(c, n) for n, c in dims)
    target = 1 << 20
    shards = default_shards(shape, chunks, item_size, target=target)
    assert all(s % c == 0 for s, c in zip(shards, chunks))
    size = math.prod(shards) * item_size
    whole = all(s >= n for s, n in zip(shards, shape))
    assert size <= max(target, math.prod(chunks) * item_size)
    assert size > target // 2 or whole or shards == chunks
    leading = next((d for d, (s, c) in enumerate(zip(shards, chunks)) if s > c), None)  # grown dims come last
    assert leading is None or all(s >= n for s, n in zip(shards[leading + 1 :], shape[leading + 1 :]))


@given(
    st.lists(st.tuples(st.integers(1, 3000), st.integers(1, 300)), min_size=1, max_size=3),
    st.sampled_from([1, 4, 8]),
)
def test_a_small_array_gets_enough_shards_for_dask_and_none_smaller_than_the_floor(
    dims: list[tuple[int, int]], item_size: int
) -> None:
    """Fewer than MIN_SHARDS default-size shards: at least MIN_SHARDS shards where the floor allows it."""
    from zarr3_backend.conversion.plan import MIN_SHARD_BYTES, MIN_SHARDS

    shape, chunks = tuple(n for n, _ in dims), tuple(min(c, n) for n, c in dims)
    shards = default_shards(shape, chunks, item_size)
    count = math.prod(-(-n // s) for n, s in zip(shape, shards))
    size, chunk = math.prod(shards) * item_size, math.prod(chunks) * item_size
    assert size <= max(MIN_SHARD_BYTES, math.prod(shape) * item_size // MIN_SHARDS, chunk)
    if math.prod(shape) * item_size >= 2 * MIN_SHARDS * MIN_SHARD_BYTES and chunk <= MIN_SHARD_BYTES:
        assert count >= MIN_SHARDS // 2  # each shard holds half to all of its budget: at least half as many


def test_a_small_ensemble_converts_to_a_shard_per_member_for_dask(tmp_path: Path) -> None:
    """153 MB of 10 members: one shard each (10 dask tasks), where 128 MiB shards made one task for all."""
    assert default_shards((10, 365, 73, 144), (1, 365, 73, 144), 4) == (1, 365, 73, 144)
    assert default_shards((8, 1000, 1000), (1, 100, 1000), 8) == (1, 1000, 1000)  # 64 MB: 8 of 8 MB
    assert default_shards((4, 100, 100), (1, 100, 100), 8) == (4, 100, 100)  # 320 kB: one shard, as before
