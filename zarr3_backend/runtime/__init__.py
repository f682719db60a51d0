"""How work runs at once: thread pools, pacing of requests and fetches, per-process state.

Below the stores and codecs, above the format (``core``); it knows no store,
codec, dask or xarray. Modules:

- [`settings`][zarr3_backend.runtime.settings]: the environment's sizes (threads, requests in flight, bytes held);
- [`process`][zarr3_backend.runtime.process]: state made again in a forked child (pid check on use);
- [`pools`][zarr3_backend.runtime.pools]: the CPU, I/O and request pools and the plain ways to run calls on them;
- [`streaming`][zarr3_backend.runtime.streaming]: many calls, a few at a time, results as they finish;
- [`pipeline`][zarr3_backend.runtime.pipeline]: fetches on the I/O pool, decoding on the CPU pool, a byte budget;
- [`batches`][zarr3_backend.runtime.batches]: a batch of coroutines on an event loop with a limit, errors returned;
  the process's background event loop for stores whose API is coroutines.
- ``locks`` (every lock a write takes), ``scratch`` (chunk-sized temporaries), ``memory_limit``,
  ``stacklevel`` (warnings point at the user's line).
"""

from .batches import run_on_loop
from .pipeline import fetch_and_work
from .pools import (
    TrackedExecutor,
    current_pool,
    each_request,
    in_work_pool,
    map_concurrently,
    map_io,
    private_pool,
    shared_pool,
    submit_io,
)
from .process import PerProcess
from .settings import io_buffer_bytes, io_concurrency, thread_count
from .streaming import Stream, collect

__all__ = [
    "PerProcess",
    "Stream",
    "TrackedExecutor",
    "collect",
    "current_pool",
    "each_request",
    "fetch_and_work",
    "in_work_pool",
    "io_buffer_bytes",
    "io_concurrency",
    "map_concurrently",
    "map_io",
    "private_pool",
    "run_on_loop",
    "shared_pool",
    "submit_io",
    "thread_count",
]
