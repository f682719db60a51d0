"""Command line: ``python -m zarr3_backend demo`` and ``python -m zarr3_backend info STORE``.

Thin: every command calls library functions only.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence

import numpy as np

from .api import create_array, open, open_array
from .array import Array
from .hierarchy import Group

BLOSC_ZSTD = {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}


def demo(path: str | None) -> None:
    """Write a sharded climate-like array, read it back and print what happened."""
    path = path or tempfile.mkdtemp(suffix=".zarr")
    time_axis, lat, lon = np.arange(96), np.linspace(-90, 90, 181), np.linspace(0, 359, 360)
    field = 280 + 15 * np.cos(np.deg2rad(lat))[None, :, None] + 5 * np.sin(time_axis / 16)[:, None, None]
    data = (field + np.zeros((1, 1, lon.size))).astype("float32")
    start = time.perf_counter()
    t2m = create_array(path, "t2m", shape=data.shape, dtype="float32", chunks=(24, 46, 90), shards=(96, 92, 180),
                       compressors=[BLOSC_ZSTD], dimension_names=["time", "lat", "lon"], attributes={"units": "K"},
                       overwrite=True)
    t2m[...] = data
    written = time.perf_counter() - start
    start = time.perf_counter()
    back = open_array(path, "t2m")[...]
    read = time.perf_counter() - start
    if not np.array_equal(back, data):
        raise SystemExit("demo: data read back differs from data written")
    print(f"wrote {data.nbytes / 1e6:.1f} MB to {path} in {written:.3f} s, read it back in {read:.3f} s: identical")
    info(path)


def info(url: str) -> None:
    """Print the tree of nodes below ``url`` with shapes, chunks, shards and codecs."""
    node = open(url)
    nodes = [("/", node)] + (list(node.walk()) if isinstance(node, Group) else [])
    for name, child in nodes:
        if isinstance(child, Array):
            codecs = [c["name"] for c in child.metadata.codecs]
            print(f"{name}: array {child.shape} {child.dtype} chunks={child.chunks} shards={child.shards} "
                  f"codecs={codecs} dims={child.dimension_names} stored={child.nchunks_stored()}")
        else:
            print(f"{name}: group attrs={dict(child.attrs)}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m zarr3_backend", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="write and read a sharded example array").add_argument("path", nargs="?")
    commands.add_parser("info", help="describe the hierarchy in a store").add_argument("url")
    args = parser.parse_args(argv)
    if args.command == "demo":
        demo(args.path)
    else:
        info(args.url)
