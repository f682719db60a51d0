"""The ``zarr3`` command, run as users run it (see :mod:`command`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from command import ROOT, zarr3, zarr3_command, zarr3_script

import zarr3_backend
from zarr3_backend.cli.check import Counter

# -- demo, version, help, errors ----------------------------------------------------------


def test_demo_writes_into_a_new_directory_and_says_where(tmp_path: Path) -> None:
    result = zarr3_script("demo", tmp_path / "demo.zarr")
    assert result.returncode == 0, result.stderr
    assert f"writing the demo store to {tmp_path / 'demo.zarr'}" in result.stdout
    assert f"the store stays in {tmp_path / 'demo.zarr'}" in result.stdout
    assert "identical" in result.stdout and "shards      (96, 92, 180)" in result.stdout
    t2m = zarr3_backend.open_array(tmp_path / "demo.zarr", "t2m")
    assert t2m.dimension_names == ("time", "lat", "lon") and t2m.nchunks_stored() == 4


def test_demo_refuses_an_existing_directory(tmp_path: Path, store: Path) -> None:
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    result = zarr3("demo", store)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == (
        f"zarr3: error: {store} already exists; zarr3 demo writes only into a new "
        "directory, pass one that does not exist"
    )
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    assert zarr3_backend.open_array(store, "t2m").shape == (8, 6)


def test_readme_demo_command_without_a_directory() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "zarr3_backend", "demo"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    where = result.stdout.splitlines()[0].removeprefix("writing the demo store to ")
    try:
        assert "identical" in result.stdout
        assert result.stdout.rstrip().endswith(
            f"removed the temporary store {where}; run 'zarr3 demo DIR' to keep one in DIR"
        )
        assert not Path(where).exists()  # no store left behind in the temporary directory
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_version_and_help() -> None:
    version = zarr3_script("--version")  # the installed entry point
    assert (
        version.returncode == 0
        and version.stdout.strip() == f"zarr3 (zarr3_backend) {zarr3_backend.__version__}"
    )
    usage = zarr3("--help")
    assert usage.returncode == 0
    for command in ("info", "tree", "validate", "demo"):
        assert command in usage.stdout
    assert "Thin" not in usage.stdout and "library functions" not in usage.stdout
    assert "--storage-option KEY=VALUE" in zarr3("info", "--help").stdout


def test_errors_are_one_line_unless_debug(tmp_path: Path) -> None:
    result = zarr3("info", tmp_path / "missing.zarr")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(
        "zarr3: error: no Zarr array or group at '/'"
    )
    debug = zarr3("info", tmp_path / "missing.zarr", "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "NodeNotFoundError" in debug.stderr
    usage = zarr3("info")
    assert usage.returncode == 2 and "required: STORE" in usage.stderr


def test_a_reader_that_stops_early_gives_no_error(store: Path) -> None:
    process = subprocess.Popen(
        [*zarr3_command(), "info", "--json", str(store)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # like `zarr3 info --json STORE | head -c 0`, before anything is printed
    stderr = process.stderr.read()
    process.wait(timeout=120)
    assert "error" not in stderr.lower() and "Traceback" not in stderr, stderr


# -- info and tree -------------------------------------------------------------------------


def test_info_describes_every_node(store: Path) -> None:
    result = zarr3("info", store, "--stored")
    assert result.returncode == 0, result.stderr
    assert result.stderr.endswith("counting stored chunks: /t2m 2\n")
    shard_bytes = sum(p.stat().st_size for p in (store / "t2m" / "c").rglob("*") if p.is_file())
    expected = f"""\
/t2m  array float32 (8, 6)
  dimensions  time, lat
  chunks      (2, 3)
  shards      (4, 6)
  codecs      sharding_indexed(chunk_shape=[2, 3], index_location=end)
                inner: bytes(endian=little) -> zstd(level=0, checksum=False) -> crc32c
                index: bytes(endian=little) -> crc32c
  fill_value  -1.0
  stored      2 shards, {shard_bytes} B (uncompressed 192 B)
  attributes
    units = "K"
"""
    assert expected in result.stdout
    assert '/  group\n  attributes\n    title = "test store"' in result.stdout
    assert "/sub/flag  array bool (3,)" in result.stdout


def test_info_shows_a_cf_fill_value_as_xarray_decodes_it(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"t": ("x", np.array([1.0, np.nan])), "p": ("x", np.array([1.0, 2.0]))})
    ds.p.encoding["_FillValue"] = -9999.0
    ds.to_zarr3(tmp_path / "cf.zarr")
    assert (
        xr.open_dataset(tmp_path / "cf.zarr", engine="zarr").p.encoding["_FillValue"] == -9999.0
    )  # the oracle
    result = zarr3("info", tmp_path / "cf.zarr")
    assert result.returncode == 0, result.stderr
    assert "    _FillValue = nan\n" in result.stdout and "    _FillValue = -9999.0\n" in result.stdout


def test_info_json_and_path(store: Path) -> None:
    assert json.loads(zarr3("info", store, "t2m", "--json").stdout)[0]["stored_chunks"] is None  # not counted
    result = zarr3("info", store, "t2m", "--json", "--stored")
    assert result.returncode == 0, result.stderr
    (entry,) = json.loads(result.stdout)
    assert (
        entry["path"] == "/t2m" and entry["shape"] == [8, 6] and entry["dimension_names"] == ["time", "lat"]
    )
    assert entry["chunks"] == [2, 3] and entry["shards"] == [4, 6] and entry["fill_value"] == -1.0
    assert entry["codecs"][0]["name"] == "sharding_indexed" and entry["attributes"] == {"units": "K"}
    assert entry["stored_chunks"] == 2
    assert entry["stored_bytes"] == sum(
        p.stat().st_size for p in (store / "t2m" / "c").rglob("*") if p.is_file()
    )


def test_tree_marks_implicit_groups(store: Path) -> None:
    (store / "sub" / "zarr.json").unlink()
    result = zarr3("tree", store)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "/\n├── sub  (implicit group)\n│   └── flag  bool (3)\n└── t2m  float32 (time=8, lat=6)\n"
    )


def test_storage_options_reach_fsspec(
    store: Path, s3_url: str, s3_storage_options: dict[str, Any], tmp_path: Path
) -> None:
    target = zarr3_backend.create_array(
        f"{s3_url}/x.zarr", "v", shape=(4,), dtype="int16", chunks=(2,), storage_options=s3_storage_options
    )
    target[:] = 5
    options = [f"--storage-option={k}={json.dumps(v)}" for k, v in s3_storage_options.items()]
    result = zarr3("info", f"{s3_url}/x.zarr", *options, "--json", "--stored")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[1]["stored_chunks"] == 2
    (tmp_path / "options.json").write_text(json.dumps(s3_storage_options))
    result = zarr3(
        "validate", f"{s3_url}/x.zarr", "--deep", "--storage-options-file", tmp_path / "options.json"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    refused = zarr3("info", f"{s3_url}/x.zarr", "--storage-option", "anon")
    assert refused.returncode == 1 and "expected KEY=VALUE" in refused.stderr


# -- validate --------------------------------------------------------------------------------


def test_validate_a_good_store(store: Path) -> None:
    result = zarr3("validate", store, "--deep")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.endswith(
        "check         errors  warnings\n"
        "metadata           0         0\n"
        "hierarchy          0         0\n"
        "consolidated       0         0\n"
        "keys               0         0\n"
        "integrity          0         0\n"
        "chunks             0         0\n"
        "valid: 0 errors, 0 warnings\n"
    )


def test_validate_a_corrupted_store(store: Path) -> None:
    shard = store / "t2m" / "c" / "0" / "0"
    data = bytearray(shard.read_bytes())
    data[5] ^= 0xFF
    shard.write_bytes(bytes(data))
    other = store / "t2m" / "c" / "1" / "0"
    other.write_bytes(other.read_bytes()[:-30])  # cuts into the index
    (store / "sub" / "flag" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "array"}')
    shallow = zarr3("validate", store)
    assert shallow.returncode == 1
    assert "ERROR    sub/flag/zarr.json: sub/flag/zarr.json: missing required field 'shape'" in shallow.stdout
    assert "chunks       (not run: use --deep)" in shallow.stdout
    deep = zarr3("validate", store, "--deep")
    assert deep.returncode == 1
    lines = deep.stdout.splitlines()
    assert any(
        line.startswith("ERROR    t2m/c/0/0: inner chunk (0, 0)") and "crc32c checksum mismatch" in line
        for line in lines
    )
    assert any(line.startswith("ERROR    t2m/c/1/0: shard") for line in lines)
    assert "chunks             2         0" in lines and "INVALID: 3 errors, 0 warnings" in lines


def test_validate_a_stale_consolidated_store(store: Path) -> None:
    zarr3_backend.consolidate_metadata(store)
    document = json.loads((store / "t2m" / "zarr.json").read_text())
    document["shape"] = [12, 6]  # as an append that did not refresh the consolidated root
    (store / "t2m" / "zarr.json").write_text(json.dumps(document))
    result = zarr3("validate", store, "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout) == [
        {
            "key": "zarr.json",
            "check": "consolidated",
            "severity": "error",
            "message": "consolidated_metadata['t2m'] differs from t2m/zarr.json in shape (stale: re-run consolidate_metadata)",
        }
    ]


def test_validate_a_zarr_v2_store(tmp_path: Path) -> None:
    """Written by zarr-python as v2 and consolidated: valid; a flipped chunk byte and a stale .zmetadata: errors."""
    zarr = pytest.importorskip("zarr")
    numcodecs = pytest.importorskip("numcodecs")
    root = tmp_path / "v2.zarr"
    group = zarr.open_group(root, mode="w", zarr_format=2)
    group.create_array("t", shape=(4, 6), chunks=(2, 3), dtype="int32", compressors=numcodecs.Zlib())[:] = 7
    zarr.consolidate_metadata(root)
    good = zarr3("validate", root, "--deep")
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.endswith("chunks             0         0\nvalid: 0 errors, 0 warnings\n")
    chunk = root / "t" / "1.0"
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))
    (root / "t" / ".zattrs").write_text('{"units": "K"}')
    bad = zarr3("validate", root, "--deep")
    assert bad.returncode == 1
    lines = bad.stdout.splitlines()
    assert any(line.startswith("ERROR    t/1.0: codec 'numcodecs.zlib'") for line in lines), lines
    assert (
        "ERROR    .zmetadata: .zmetadata['t/.zattrs'] differs from the stored t/.zattrs in units "
        "(stale: re-run zarr.consolidate_metadata with zarr-python)" in lines
    )
    assert "INVALID: 2 errors, 0 warnings" in lines


def test_validate_stray_files_warn_and_strict_fails(store: Path) -> None:
    (store / ".DS_Store").write_text("x")
    result = zarr3("validate", store)
    assert result.returncode == 0
    assert (
        "WARNING  .DS_Store: stray key in group '/'" in result.stdout
        and "valid: 0 errors, 1 warning" in result.stdout
    )
    assert zarr3("validate", store, "--strict").returncode == 1


def test_validate_warns_about_an_array_without_a_checksum(store: Path) -> None:
    zarr3_backend.create_array(store, "plain", shape=(4,), dtype="int8", compressors="zstd")[:] = 1
    result = zarr3("validate", store, "--deep")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert any(
        line.startswith("WARNING  plain/zarr.json: array '/plain': its chunks carry no checksum")
        for line in lines
    )
    assert "integrity          0         1" in lines and "valid: 0 errors, 1 warning" in lines


def test_counter_progress_without_tqdm(capsys: pytest.CaptureFixture[str]) -> None:
    counter = Counter(3)
    for _ in range(3):
        counter.update()
    counter.close()
    assert capsys.readouterr().err == "\rchecked 1/3 chunks\rchecked 2/3 chunks\rchecked 3/3 chunks\n"


def test_info_and_tree_show_v2_dimension_names(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"t2m": (("time", "lat"), np.zeros((4, 3), "float32"))})
    ds.to_zarr(tmp_path / "v2.zarr", zarr_format=2, consolidated=False)
    tree = zarr3("tree", tmp_path / "v2.zarr")
    assert tree.returncode == 0, tree.stderr
    assert "t2m  float32 (time=4, lat=3)" in tree.stdout
    info = zarr3("info", tmp_path / "v2.zarr", "t2m", "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)[0]["dimension_names"] == ["time", "lat"]
    assert "dimensions  time, lat" in zarr3("info", tmp_path / "v2.zarr").stdout
