"""Shared helpers for the benchmarks: data, timing, memory, profiling, tables.

Every benchmark compares implementations *in one run* and reports ratios,
because the machines we run on are noisy (a single row can move 2x between
runs; see ``PERFORMANCE.md``).

>>> t = time_median(lambda: sum(range(1000)), repeats=3)
>>> len(t.seconds)
3
"""

from __future__ import annotations

import collections
import compileall
import importlib.metadata
import os
import platform
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MB = 1e6
CLIMATE_FIELD_VERSION = 2  # bump when climate_field changes: stored copies are then rewritten


# ---------------------------------------------------------------- data


def climate_field(shape: tuple[int, int, int], seed: int = 0) -> np.ndarray:
    """A deterministic, realistically compressible 2 m temperature field (K).

    ``shape`` is ``(time, lat, lon)`` on a daily, regular global grid:
    ``280 + 15 cos(lat)`` plus a seasonal cycle of opposite sign in each
    hemisphere, a weak zonal wave and small Gaussian noise, quantized to
    2**-9 K like unpacked int16 reanalysis data (ratio ~2.5 with blosc-zstd),
    as float32. Built one time block at a time, so temporaries stay small.

    >>> climate_field((4, 5, 6)).dtype
    dtype('float32')
    """
    nt, ny, nx = shape
    lat = np.deg2rad(np.linspace(90.0, -90.0, ny, dtype=np.float32))[:, None]
    lon = np.deg2rad(np.linspace(0.0, 360.0, nx, endpoint=False, dtype=np.float32))[None, :]
    base = 280.0 + 15.0 * np.cos(lat) + 3.0 * np.cos(2.0 * lon) * np.cos(lat)
    rng = np.random.default_rng(seed)
    out = np.empty(shape, dtype=np.float32)
    for t0 in range(0, nt, 32):
        t = np.arange(t0, min(t0 + 32, nt), dtype=np.float32)[:, None, None]
        season = 12.0 * np.sin(2.0 * np.pi * t / 365.0) * np.sin(lat)[None]
        block = out[t0 : t0 + t.shape[0]]
        rng.standard_normal(out=block, dtype=np.float32)
        block *= 0.5
        block += base[None] + season
        block *= 512.0
        np.rint(block, out=block)
        block /= 512.0
    return out


# ---------------------------------------------------------------- timing and memory


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds of the timed repeats (warm-up excluded), peak RSS growth, process CPU seconds.

    CPU time (user + system, all threads of this process) is far less
    sensitive than wall time to other work sharing the machine.
    """

    seconds: tuple[float, ...]
    peak_rss_bytes: int = 0
    cpu_seconds: tuple[float, ...] = ()
    system_seconds: tuple[float, ...] = ()
    minor_faults: tuple[int, ...] = ()

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def cpu_median(self) -> float | None:
        return statistics.median(self.cpu_seconds) if self.cpu_seconds else None

    @property
    def system_median(self) -> float | None:
        """Median system (kernel) CPU seconds: page faults and copies show up here."""
        return statistics.median(self.system_seconds) if self.system_seconds else None

    @property
    def faults_median(self) -> float | None:
        """Median minor page faults per call (``ru_minflt``)."""
        return statistics.median(self.minor_faults) if self.minor_faults else None


def rss_bytes(kind: str = "VmRSS") -> int:
    """Resident (``VmRSS``) or peak resident (``VmHWM``) bytes of this process, 0 if unknown."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(kind + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def reset_peak_rss() -> None:
    """Reset the kernel's peak-RSS mark (``VmHWM``) to the current RSS (Linux only)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


@dataclass(frozen=True)
class Case:
    """One implementation of a workload: ``run()`` is timed; ``setup()`` and ``check(result)`` are not.

    ``check`` sees the warm-up result only (verification stays outside the timing).
    """

    run: Callable[[], object]
    setup: Callable[[], None] | None = None
    check: Callable[[object], None] | None = None


def _measure(case: Case, check: bool) -> tuple[float, int, float, float, int]:
    """Wall seconds, peak RSS growth, CPU seconds, system seconds and minor page faults of one call."""
    if case.setup is not None:
        case.setup()
    before = rss_bytes()
    reset_peak_rss()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu, start = time.process_time(), time.perf_counter()
    result = case.run()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_SELF)
    peak = rss_bytes("VmHWM") - before
    if check and case.check is not None:
        case.check(result)
    return elapsed, peak, cpu, after.ru_stime - usage.ru_stime, after.ru_minflt - usage.ru_minflt


def time_interleaved(cases: dict[str, Case], repeats: int = 3, warmup: int = 1) -> dict[str, Timing]:
    """Time every case ``warmup + repeats`` times, round-robin so drift hits all alike.

    Results are dropped after each call, so they never pile up in memory.
    """
    samples: dict[str, list[tuple[float, int, float, float, int]]] = {name: [] for name in cases}
    peaks = dict.fromkeys(cases, 0)
    for i in range(warmup + repeats):
        for name, case in cases.items():
            measured = _measure(case, check=(i == 0))
            peaks[name] = max(peaks[name], measured[1])
            if i >= warmup:
                samples[name].append(measured)
    return {
        name: Timing(
            tuple(m[0] for m in got),
            peaks[name],
            tuple(m[2] for m in got),
            tuple(m[3] for m in got),
            tuple(m[4] for m in got),
        )
        for name, got in samples.items()
    }


def time_median(fn: Callable[[], object], repeats: int = 3, warmup: int = 1) -> Timing:
    """Time ``fn`` alone: ``warmup`` untimed calls, then ``repeats`` timed ones."""
    return time_interleaved({"fn": Case(fn)}, repeats, warmup)["fn"]


# ---------------------------------------------------------------- profiling


@contextmanager
def sampling_profile(interval: float = 0.002) -> Iterator[collections.Counter]:
    """Sample the stacks of *all* threads (cProfile only sees the calling thread).

    Yields a ``Counter`` that fills with ``("self", frame)`` and
    ``("incl", frame)`` sample counts; threads idling in a pool or event
    loop are skipped.
    """
    counts: collections.Counter = collections.Counter()
    stop = threading.Event()
    me = threading.get_ident()

    def sample() -> None:
        while not stop.wait(interval):
            for ident, frame in sys._current_frames().items():
                if ident not in (me, threading.get_ident()):
                    _count_stack(frame, counts)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield counts
    finally:
        stop.set()
        sampler.join()


def _frame_name(frame) -> str:
    code = frame.f_code
    return f"{os.path.basename(code.co_filename)}:{frame.f_lineno}:{code.co_name}"


_IDLE = {
    ("thread.py", "_worker"),
    ("selectors.py", "select"),
    ("threading.py", "wait"),
    ("queue.py", "get"),
    ("_base.py", "result"),
    ("_base.py", "_result_or_cancel"),
    ("threading.py", "_wait_for_tstate_lock"),
}


def _count_stack(frame, counts: collections.Counter) -> None:
    if (os.path.basename(frame.f_code.co_filename), frame.f_code.co_name) in _IDLE:
        return  # a thread waiting for work is not a hotspot
    counts[("self", _frame_name(frame))] += 1
    seen = set()
    while frame is not None:
        code = frame.f_code
        name = f"{os.path.basename(code.co_filename)}:{code.co_name}"
        if name not in seen:
            seen.add(name)
            counts[("incl", name)] += 1
        frame = frame.f_back


def print_samples(counts: collections.Counter, top: int = 20) -> None:
    """Print the hottest self (leaf line) and inclusive (function) sample counts."""
    for kind, title in (("self", "leaf lines"), ("incl", "functions, inclusive")):
        rows = sorted(((n, k[1]) for k, n in counts.items() if k[0] == kind), reverse=True)
        print(f"  sampled {title} (busy thread-samples, all threads):")
        for n, name in rows[:top]:
            print(f"    {n:7d}  {name}")


# ---------------------------------------------------------------- reporting


def library_versions(names: Sequence[str]) -> dict[str, str]:
    """Installed distribution versions; 'missing' when not installed."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "missing"
    return versions


def compile_package() -> str:
    """Write ``zarr3_backend``'s bytecode into its ``__pycache__`` folders; what to print about it.

    Fresh-process benchmarks import the package from this checkout, next to peers that ``pip``
    installed with their bytecode compiled. Where ``PYTHONDONTWRITEBYTECODE`` is set (these machines
    set it) no import writes bytecode, so without this every process would compile our ~130 modules
    from source, a cost no installed package has. Stale files are rewritten; nothing else changes.
    """
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "zarr3_backend", quiet=1)
    setting = os.environ.get("PYTHONDONTWRITEBYTECODE") or "unset"
    return (
        f"zarr3_backend's bytecode compiled (as pip installs the peers'); PYTHONDONTWRITEBYTECODE={setting}"
    )


def print_machine_info(libraries: Sequence[str]) -> None:
    """Print CPU count, memory, Python and library versions."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    print(f"machine: {platform.machine()} {platform.processor() or ''}".rstrip())
    print(f"  cores: {os.cpu_count()} (usable: {len(os.sched_getaffinity(0))}), RAM {total / 1e9:.1f} GB")
    print(f"  python {platform.python_version()} ({sys.executable})")
    versions = library_versions(libraries)
    print("  " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"  {memory_setup()}")


def memory_setup() -> str:
    """The kernel's transparent-huge-page settings: plain numpy allocations fault their pages in under them."""
    thp = Path("/sys/kernel/mm/transparent_hugepage")
    try:
        modes = {name: (thp / name).read_text().split("[")[1].split("]")[0] for name in ("enabled", "defrag")}
    except (OSError, IndexError):
        modes = {"enabled": "unknown", "defrag": "unknown"}
    return f"THP enabled={modes['enabled']} defrag={modes['defrag']}"


@dataclass
class ResultTable:
    """Median seconds per (workload, implementation), printed with ratios to ``ours``."""

    ours: str
    baselines: Sequence[str]
    floor: str = "floor"
    rows: dict[str, dict[str, Timing]] = field(default_factory=dict)
    nbytes: dict[str, int] = field(default_factory=dict)

    def add(self, workload: str, impl: str, timing: Timing, nbytes: int) -> None:
        self.rows.setdefault(workload, {})[impl] = timing
        self.nbytes[workload] = nbytes

    def print(self) -> None:
        """Print one block per workload, then a ratio summary."""
        for workload, timings in self.rows.items():
            print(f"\n{workload}  ({self.nbytes[workload] / MB:.1f} MB logical)")
            print(
                f"  {'implementation':<24}{'median s':>10}{'min s':>9}{'x floor':>9}{'MB/s':>9}"
                f"{'cpu s':>9}{'sys s':>8}{'faults':>9}{'peak dRSS MB':>14}"
            )
            floor = timings.get(self.floor)
            for impl, t in timings.items():
                rate = f"{self.nbytes[workload] / MB / t.median:.0f}" if self.nbytes[workload] >= MB else "-"
                rel = f"{t.median / floor.median:.2f}" if floor else "-"
                cpu = f"{t.cpu_median:.4f}" if t.cpu_median is not None else "-"
                system = f"{t.system_median:.3f}" if t.system_median is not None else "-"
                faults = f"{t.faults_median:.0f}" if t.faults_median is not None else "-"
                print(
                    f"  {impl:<24}{t.median:>10.4f}{min(t.seconds):>9.4f}{rel:>9}{rate:>9}{cpu:>9}{system:>8}{faults:>9}"
                    f"{t.peak_rss_bytes / MB:>14.0f}"
                )
        self._print_ratios()

    def to_json(self) -> dict[str, object]:
        """The table as plain data: per workload, each implementation's medians and its ratio to ``ours``."""
        workloads = []
        for workload, timings in self.rows.items():
            ours = timings.get(self.ours)
            cells = {}
            for impl, t in timings.items():
                cells[impl] = {
                    "median_s": t.median,
                    "min_s": min(t.seconds),
                    "cpu_s": t.cpu_median,
                    "system_s": t.system_median,
                    "minor_faults": t.faults_median,
                    "peak_rss_mb": t.peak_rss_bytes / MB,
                    "ours_over_this": ours.median / t.median
                    if ours is not None and impl != self.ours
                    else None,
                }
            workloads.append(
                {"workload": workload, "logical_mb": self.nbytes[workload] / MB, "results": cells}
            )
        return {
            "ours": self.ours,
            "baselines": list(self.baselines),
            "floor": self.floor,
            "workloads": workloads,
        }

    def _print_ratios(self) -> None:
        stats = [
            ("medians", lambda t: t.median),
            ("minimums", lambda t: min(t.seconds)),
            ("median CPU seconds", lambda t: t.cpu_median or float("nan")),
        ]
        for stat, pick in stats:
            print(f"\nratios of {stat} ({self.ours} / other; < 1 favours {self.ours})")
            print(f"  {'workload':<34}" + "".join(f"{b:>16}" for b in self.baselines))
            for workload, timings in self.rows.items():
                if self.ours in timings:
                    cells = [
                        f"{pick(timings[self.ours]) / pick(timings[b]):>16.2f}"
                        if b in timings
                        else f"{'-':>16}"
                        for b in self.baselines
                    ]
                    print(f"  {workload:<34}" + "".join(cells))


def machine_info(libraries: Sequence[str]) -> dict[str, object]:
    """What `print_machine_info()` prints, as plain data for a results file."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "ram_gb": round(total / 1e9, 1),
        "python": platform.python_version(),
        "versions": library_versions(libraries),
    }


def write_results(
    path: Path, benchmark: str, libraries: Sequence[str], tables: dict[str, object], argv: Sequence[str]
) -> None:
    """Write one run's tables to ``path`` as JSON, with the date, the command line, the machine and the versions.

    ``docs/render_performance.py`` builds the documentation's performance page from these files.
    """
    import json

    document = {
        "benchmark": benchmark,
        "date": time.strftime("%Y-%m-%d"),
        "command": " ".join(["python", benchmark, *argv]),
        "machine": machine_info(libraries),
        "tables": tables,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n")
