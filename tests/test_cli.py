"""The command line: ``python -m zarr3_backend demo|info``."""

import subprocess
import sys

import zarr3_backend
from zarr3_backend.cli import main


def test_demo_writes_and_reads_back_a_sharded_array(tmp_path, capsys):
    main(["demo", str(tmp_path / "demo.zarr")])
    out = capsys.readouterr().out
    assert "identical" in out and "shards=(96, 92, 180)" in out
    t2m = zarr3_backend.open_array(str(tmp_path / "demo.zarr"), "t2m")
    assert t2m.dimension_names == ("time", "lat", "lon") and t2m.nchunks_stored() == 4


def test_info_describes_a_tree_as_a_module(tmp_path):
    root = zarr3_backend.create_group(str(tmp_path / "t.zarr"), attributes={"title": "x"})
    root.create_array("v", shape=(4,), dtype="int16", chunks=(2,))
    result = subprocess.run([sys.executable, "-m", "zarr3_backend", "info", str(tmp_path / "t.zarr")],
                            capture_output=True, text=True, check=True)
    assert "/: group attrs={'title': 'x'}" in result.stdout
    assert "v: array (4,) int16 chunks=(2,) shards=None" in result.stdout
