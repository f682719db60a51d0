"""``zarr3 demo``: write a sharded climate-like array into a new directory, read it back, describe it.

Without a directory the store goes to a temporary one, removed at the end; a given one is kept.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np

from ..api import create_array, open_array
from ..errors import NodeExistsError
from ..store import make_store
from .info import print_info

BLOSC_ZSTD = {
    "name": "blosc",
    "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "shuffle", "typesize": 4, "blocksize": 0},
}


def add_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    parser = commands.add_parser(
        "demo",
        parents=[common],
        help="write and read back an example store",
        description="Write a sharded example array (96 x 181 x 360 float32) into DIR, "
        "a new directory (default: a new temporary one, removed at the end), read it back and "
        "describe it. An existing DIR is refused, never overwritten.",
    )
    parser.add_argument("dir", metavar="DIR", nargs="?", help="a directory that does not exist yet")
    parser.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    path = new_directory(args.dir)
    print(f"writing the demo store to {path}")
    try:
        write_and_describe(path)
    finally:
        if args.dir is None:
            shutil.rmtree(path, ignore_errors=True)
    if args.dir is None:
        print(f"\nremoved the temporary store {path}; run 'zarr3 demo DIR' to keep one in DIR")
    else:
        print(f"\nthe store stays in {path}; check it with: zarr3 validate --deep {path}")
    return 0


def write_and_describe(path: str) -> None:
    """Write the demo array into ``path``, read it back, compare and describe it."""
    data = climate_field()
    start = time.perf_counter()
    t2m = create_array(
        path,
        "t2m",
        shape=data.shape,
        dtype="float32",
        chunks=(24, 46, 90),
        shards=(96, 92, 180),
        compressors=[BLOSC_ZSTD, "crc32c"],
        dimension_names=["time", "lat", "lon"],
        attributes={"units": "K"},
    )
    t2m[...] = data
    written = time.perf_counter() - start
    start = time.perf_counter()
    back = open_array(path, "t2m")[...]
    read = time.perf_counter() - start
    if not np.array_equal(back, data):
        raise RuntimeError("demo: data read back differs from data written")
    print(f"wrote {data.nbytes / 1e6:.1f} MB in {written:.3f} s, read it back in {read:.3f} s: identical")
    print_info(make_store(path, read_only=True), "", title=path, stored=True)


def new_directory(path: str | None) -> str:
    """Create ``path`` (or a fresh temporary directory); refuse one that exists."""
    if path is None:
        return tempfile.mkdtemp(suffix=".zarr")
    try:
        os.makedirs(path)
    except FileExistsError:
        raise NodeExistsError(
            f"{path} already exists; zarr3 demo writes only into a new directory, pass one that does not exist"
        ) from None
    return os.path.abspath(path)


def climate_field() -> np.ndarray:
    """A smooth (time, lat, lon) temperature field in kelvin."""
    time_axis, lat, lon = np.arange(96), np.linspace(-90, 90, 181), np.linspace(0, 359, 360)
    field = 280 + 15 * np.cos(np.deg2rad(lat))[None, :, None] + 5 * np.sin(time_axis / 16)[:, None, None]
    return np.asarray(field + np.zeros((1, 1, lon.size)), dtype=np.float32)
