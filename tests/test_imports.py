"""What ``import zarr3_backend`` imports (issue 61): the engine and ``to_zarr3``, not xarray (until the user
imports it), dask, distributed, obstore, numcodecs, the codecs no store has named yet, or the write wing (the
write planner, `zarr3_backend.writes`, `zarr3_backend.conversion`), which load at the first write.

Each check runs in a fresh interpreter, with this checkout first on the path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAZY = (
    "xarray",
    "pandas",
    "dask",
    "distributed",
    "obstore",
    "s3fs",
    "zarr3_backend.xarray.write.graph_reads",
    "zarr3_backend.xarray.write.planner",
    "zarr3_backend.writes.commit",
    "zarr3_backend.conversion",
    "numcodecs",
    "zarr3_backend.codecs.zstd",
    "zarr3_backend.codecs.numcodecs_adapter",
)


def fresh(code: str) -> object:
    """The JSON ``code`` prints, run in a new interpreter."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_package_imports_no_dask_distributed_or_obstore() -> None:
    imported = fresh(
        f"import json, sys, zarr3_backend; print(json.dumps([m for m in {LAZY!r} if m in sys.modules]))"
    )
    assert imported == []


def test_a_codec_module_loads_when_a_store_names_its_codec(tmp_path: Path) -> None:
    loaded = fresh(
        "import json, sys, numpy as np, zarr3_backend as z\n"
        f"a = z.create_array({str(tmp_path / 'a')!r}, shape=(4,), chunks=(2,), dtype='int32', "
        "compressors=[{'name': 'zstd'}])\n"
        "a[:] = np.arange(4)\n"
        "print(json.dumps([a[1:3].tolist(), sorted(m for m in sys.modules if m.startswith('zarr3_backend.codecs.'))]))"
    )
    assert isinstance(loaded, list)
    values, modules = loaded
    assert values == [1, 2]
    assert "zarr3_backend.codecs.zstd" in modules and "zarr3_backend.codecs.blosc" not in modules


def test_the_engine_and_to_zarr3_are_there_without_dask_imported() -> None:
    pytest.importorskip("xarray")
    found = fresh(
        "import json, sys, xarray as xr, zarr3_backend\n"
        "found = [hasattr(xr.Dataset, 'to_zarr3'), hasattr(xr.DataArray, 'to_zarr3'), "
        "callable(zarr3_backend.to_zarr3), 'dask' in sys.modules]\n"
        "print(json.dumps([*found, 'zarr3' in xr.backends.list_engines()]))"  # (other engines may import dask)
    )
    assert found == [True, True, True, False, True]


def test_a_write_with_progress_imports_dask_when_it_runs(tmp_path: Path) -> None:
    pytest.importorskip("dask")
    found = fresh(
        "import json, sys, numpy as np, xarray as xr, zarr3_backend\n"
        f"xr.Dataset({{'v': ('x', np.arange(4.0))}}).chunk(x=2).to_zarr3({str(tmp_path / 'a.zarr')!r}, progress=True)\n"
        f"print(json.dumps(xr.open_dataset({str(tmp_path / 'a.zarr')!r}, engine='zarr3').v.values.tolist()))"
    )
    assert found == [0.0, 1.0, 2.0, 3.0]


def test_to_zarr3_documents_itself_before_the_write_wing_is_loaded() -> None:
    pytest.importorskip("xarray")
    found = fresh(
        "import inspect, json, sys, xarray as xr, zarr3_backend\n"
        "before = 'zarr3_backend.xarray.write.planner' in sys.modules\n"
        "doc, signature = xr.Dataset.to_zarr3.__doc__, inspect.signature(xr.DataTree.to_zarr3)\n"
        "print(json.dumps([before, doc.splitlines()[0], list(signature.parameters)[:3], "
        "'zarr3_backend.xarray.write.planner' in sys.modules, zarr3_backend.convert.__module__]))"
    )
    assert found == [
        False,
        "Write a Dataset, DataArray or DataTree to a Zarr v3 store, one task per shard (on dask or Cubed).",
        ["store", "mode", "encoding"],
        True,
        "zarr3_backend.conversion",
    ]


def test_xarray_imported_after_the_package_still_gets_to_zarr3(tmp_path: Path) -> None:
    pytest.importorskip("xarray")
    found = fresh(
        "import json, sys, zarr3_backend\n"
        "before = 'xarray' in sys.modules\n"
        "import numpy as np, xarray as xr\n"
        f"xr.Dataset({{'v': ('x', np.arange(3.0))}}).to_zarr3({str(tmp_path / 'a.zarr')!r})\n"
        f"print(json.dumps([before, hasattr(xr.DataTree, 'to_zarr3'), "
        f"xr.open_dataset({str(tmp_path / 'a.zarr')!r}, engine='zarr3').v.values.tolist()]))"
    )
    assert found == [False, True, [0.0, 1.0, 2.0]]


def test_unsafe_numcodecs_are_refused_before_their_adapter_is_imported() -> None:
    found = fresh(
        "import json, sys, zarr3_backend\n"
        "from zarr3_backend.codecs.registry import is_unsafe\n"
        "print(json.dumps([is_unsafe('numcodecs.pickle'), 'zarr3_backend.codecs.numcodecs_adapter' in sys.modules]))"
    )
    assert found == [True, True]


def test_a_codec_registered_before_its_built_in_loads_stays_registered() -> None:
    """The last registration wins even when the built-in module of that name is imported after it."""
    found = fresh(
        "import json, zarr3_backend\n"
        "from zarr3_backend.codecs import register_codec, get_codec_class\n"
        "from zarr3_backend.codecs.base import BytesBytesCodec\n"
        "class Mine(BytesBytesCodec):\n"
        "    name = 'zstd'\n"
        "register_codec(Mine)\n"
        "import zarr3_backend.codecs.zstd\n"
        "from zarr3_backend.codecs import ZstdCodec\n"
        "print(json.dumps([get_codec_class('zstd') is Mine, ZstdCodec.__name__]))"
    )
    assert found == [True, "ZstdCodec"]
