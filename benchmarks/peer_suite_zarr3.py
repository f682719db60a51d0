"""zarr3_backend's entry for the zarrs/zarr_benchmarks suite: its workloads, through `zarr3_backend.open_array`.

Run by `bench_peer_suite.py` as a fresh process per measurement, like the suite's own scripts,
whose command lines it mirrors:

    peer_suite_zarr3.py read PATH --read_all
    peer_suite_zarr3.py read PATH --concurrent_chunks 8 [--subchunks]
    peer_suite_zarr3.py roundtrip PATH OUTPUT
    peer_suite_zarr3.py dask_read PATH --read_all
    peer_suite_zarr3.py dask_roundtrip PATH OUTPUT

Concurrency is threads: ``--concurrent_chunks N`` reads N shards (or inner chunks) at a time from a
thread pool, as the peers' scripts keep N reads in flight on their event loops. The roundtrip copies
shard by shard (``out[...] = src``, see `zarr3_backend.copy_array`); the dask variants read with
``da.from_array(array, chunks=shards)`` and write with ``da.store``. Prints the workload's time
(``Decoded in ...ms`` / ``Round trip in ...ms``) as the suite's scripts do.
"""

from __future__ import annotations

import argparse
import itertools
import timeit
from concurrent.futures import ThreadPoolExecutor

import zarr3_backend


def _blocks(shape: tuple[int, ...], block: tuple[int, ...]) -> list[tuple[slice, ...]]:
    ranges = [range(0, n, b) for n, b in zip(shape, block)]
    return [
        tuple(slice(s, min(s + b, n)) for s, b, n in zip(start, block, shape))
        for start in itertools.product(*ranges)
    ]


def read(path: str, concurrent_chunks: int | None, subchunks: bool, read_all: bool) -> str:
    array = zarr3_backend.open_array(path, mode="r")
    block = array.chunks if subchunks else (array.shards or array.chunks)
    start = timeit.default_timer()
    if read_all:
        print(array[...].shape)
    else:
        selections = _blocks(array.shape, block)
        if concurrent_chunks == 1:
            for selection in selections:
                array[selection]
        else:
            with ThreadPoolExecutor(concurrent_chunks or len(selections)) as pool:
                for _ in pool.map(array.__getitem__, selections):
                    pass
    return f"Decoded in {(timeit.default_timer() - start) * 1000:.2f}ms"


def _source_and_copy(path: str, output: str) -> tuple[zarr3_backend.Array, zarr3_backend.Array]:
    """The array at ``path`` and a new array at ``output`` with its shape, grid and codecs."""
    src = zarr3_backend.open_array(path, mode="r")
    chunks = src.shards or src.chunks
    codecs = src.codecs.to_json()
    out = zarr3_backend.create_array(
        output, shape=src.shape, dtype=src.dtype, codecs=codecs, chunks=chunks, overwrite=True
    )
    return src, out


def roundtrip(path: str, output: str) -> str:
    src, out = _source_and_copy(path, output)
    start = timeit.default_timer()
    out[...] = src
    return f"Round trip in {(timeit.default_timer() - start) * 1000:.2f}ms"


def dask_read(path: str, read_all: bool) -> str:
    import dask.array as da

    array = zarr3_backend.open_array(path, mode="r")
    x = da.from_array(array, chunks=array.shards or array.chunks)
    start = timeit.default_timer()
    print(x.compute().shape)
    return f"Decoded in {(timeit.default_timer() - start) * 1000:.2f}ms"


def dask_roundtrip(path: str, output: str) -> str:
    import dask.array as da

    src, out = _source_and_copy(path, output)
    x = da.from_array(src, chunks=src.shards or src.chunks)
    start = timeit.default_timer()
    da.store(x, out, lock=False)
    return f"Round trip in {(timeit.default_timer() - start) * 1000:.2f}ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["read", "roundtrip", "dask_read", "dask_roundtrip"])
    parser.add_argument("path")
    parser.add_argument("output", nargs="?")
    parser.add_argument("--concurrent_chunks", type=int, default=None)
    parser.add_argument("--subchunks", action="store_true")
    parser.add_argument("--read_all", action="store_true")
    args = parser.parse_args()
    if args.workload == "read":
        print(read(args.path, args.concurrent_chunks, args.subchunks, args.read_all))
    elif args.workload == "dask_read":
        print(dask_read(args.path, args.read_all))
    elif args.workload == "roundtrip":
        print(roundtrip(args.path, args.output))
    else:
        print(dask_roundtrip(args.path, args.output))


if __name__ == "__main__":
    main()
