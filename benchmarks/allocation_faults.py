"""Page faults of allocating many medium numpy arrays on a thread pool: the allocator's share of a concurrent read.

A read of one inner chunk returns a new array (the suite's 64^3 uint16 inner chunks: 512 KiB). This
allocates, touches and drops ``--count`` arrays of ``--nbytes`` on pools of 1, 2 and 8 threads, as
8 reading threads do, with no store and no codec, and prints wall time, system CPU and minor page
faults for each pool size: what glibc's allocator costs the threaded reads by itself.

    python benchmarks/allocation_faults.py
    python benchmarks/allocation_faults.py --nbytes 65536 --threads 8
"""

from __future__ import annotations

import argparse
import resource
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PAGE = 4096


def touched(nbytes: int) -> np.ndarray:
    """A new array of ``nbytes``, one byte written per page (as a decode fills it)."""
    array = np.empty(nbytes, np.uint8)
    array[::PAGE] = 1
    return array


def measure(threads: int, count: int, nbytes: int) -> tuple[float, float, int]:
    """Wall seconds, system CPU seconds and minor faults of ``count`` arrays made on ``threads`` threads."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(touched, [nbytes] * count):
            pass  # dropped on this thread, as a caller drops what it read
    after = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter() - start, after.ru_stime - before.ru_stime, after.ru_minflt - before.ru_minflt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=4096)
    parser.add_argument("--nbytes", type=int, default=512 << 10)
    parser.add_argument("--threads", type=int, action="append", default=[])
    args = parser.parse_args()
    print(f"{args.count} arrays of {args.nbytes} bytes")
    print(f"{'threads':>8} {'wall s':>8} {'system s':>9} {'minor faults':>13}")
    for threads in args.threads or [1, 2, 8]:
        wall, system, faults = measure(threads, args.count, args.nbytes)
        print(f"{threads:>8} {wall:>8.3f} {system:>9.3f} {faults:>13,}")


if __name__ == "__main__":
    main()
