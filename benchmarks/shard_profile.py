"""Where one shard write's page faults and system time go, measured inside a dask worker process.

`profile_shard_writes` runs in a worker (``client.submit``; this module
is pickled by value, so workers need not find it on their path). It writes
the same shard-sized block several times with ``write_block`` (the body of
a ``to_zarr3`` shard task) and reports, per shard, medians of wall, user and
system seconds and minor page faults; then the same for numcodecs' blosc
compression alone on contiguous copies of the shard's inner chunks (what
c-blosc costs without any Zarr logic); then the peak of the memory Python
and numpy allocate during one more write (``tracemalloc``).

Under dask's default nanny environment (``MALLOC_TRIM_THRESHOLD_=65536``,
which fixes glibc's mmap threshold at 128 KiB) every allocation of 128 KiB
or more is a fresh map: a minor fault per 4 KiB page touched, so faults x
4 KiB is the memory a shard write churns through.
"""

from __future__ import annotations

from typing import Any

import numpy as np

CHUNKS = (73, 91, 180)
SHARDS = (73, 364, 720)
BLOSC = {"cname": "zstd", "clevel": 3, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}


def profile_shard_writes(block: np.ndarray, root: str, repeats: int = 4) -> dict[str, Any]:
    """Per-shard medians of writing ``block`` (one shard's data) ``repeats`` times, after one warm-up."""
    import resource
    import statistics
    import time
    import tracemalloc

    import numcodecs.blosc

    import zarr3_backend
    from zarr3_backend.nodes.shard_writes import write_block

    rows = block.shape[0]
    array = zarr3_backend.create_array(
        root,
        shape=(rows * (repeats + 2), *block.shape[1:]),
        dtype=block.dtype.str,
        chunks=CHUNKS,
        shards=SHARDS,
        compressors=[{"name": "blosc", "configuration": BLOSC}],
        fill_value=0.0,
    )

    def measured(call: Any) -> tuple[float, float, float, int]:
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        call()
        wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
        return (
            wall,
            after.ru_utime - before.ru_utime,
            after.ru_stime - before.ru_stime,
            after.ru_minflt - before.ru_minflt,
        )

    writes = [measured(lambda i=i: write_block(array, (rows * i, 0, 0), block)) for i in range(repeats + 1)]
    chunks = _inner_chunks(block)

    def compress_all() -> None:
        for chunk in chunks:
            numcodecs.blosc.compress(chunk, b"zstd", BLOSC["clevel"], 1, 0, typesize=BLOSC["typesize"])

    compressions = [measured(compress_all) for _ in range(repeats + 1)]
    tracemalloc.start()
    write_block(array, (rows * (repeats + 1), 0, 0), block)
    python_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    def medians(samples: list[tuple[float, float, float, int]]) -> list[float]:
        return [statistics.median(s[k] for s in samples[1:]) for k in range(4)]

    return {
        "write": medians(writes),
        "blosc_alone": medians(compressions),
        "inner_chunks": len(chunks),
        "python_peak_bytes": python_peak,
        "block_bytes": block.nbytes,
    }


def _inner_chunks(block: np.ndarray) -> list[np.ndarray]:
    """Contiguous copies of the inner chunks of a shard's ``block``, padded with zeros at the array's edge."""
    chunks = []
    for index in np.ndindex(*(s // c for s, c in zip(SHARDS, CHUNKS))):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(index, CHUNKS))
        part = block[region]
        chunk = np.zeros(CHUNKS, dtype=block.dtype)
        chunk[tuple(slice(0, n) for n in part.shape)] = part
        chunks.append(chunk)
    return chunks


def print_profiles(profiles: dict[str, dict[str, Any]]) -> None:
    """One line per environment: a shard write's costs, c-blosc's share of them, and Python's peak."""
    any_profile = next(iter(profiles.values()))
    print(
        f"\nper-shard profile in a worker process: write_block of one shard ({any_profile['block_bytes'] / 1e6:.0f} MB, "
        f"{any_profile['inner_chunks']} inner chunks), medians; 'blosc alone' compresses the same inner chunks "
        "from contiguous copies with numcodecs (no Zarr logic); fresh MB = faults x 4 KiB"
    )
    print(
        f"  {'worker environment':<34}{'wall s':>8}{'user s':>8}{'sys s':>8}{'faults':>9}{'fresh MB':>10}"
        f" | {'blosc alone: faults':>20}{'sys s':>7}{'share':>7} | {'python peak MB':>15}"
    )
    for label, p in profiles.items():
        wall, user, system, faults = p["write"]
        _, _, blosc_system, blosc_faults = p["blosc_alone"]
        share = blosc_faults / faults if faults else float("nan")
        print(
            f"  {label:<34}{wall:>8.3f}{user:>8.3f}{system:>8.3f}{faults:>9.0f}{faults * 4096 / 1e6:>10.0f}"
            f" | {blosc_faults:>20.0f}{blosc_system:>7.3f}{share:>7.0%} | {p['python_peak_bytes'] / 1e6:>15.1f}"
        )
