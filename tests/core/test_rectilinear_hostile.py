"""Hostile rectilinear grids: each opens and reads as zarr-python 3.4 reads it, or raises a MetadataError naming
the field, in bounded time and memory (runs stay runs: nothing is expanded per chunk)."""

from __future__ import annotations

import json
import re
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr_oracle import oracle_or_skip, run_oracle

import zarr3_backend
from zarr3_backend.errors import MetadataError

HOSTILE = st.sampled_from([0, -1, 2**63, 2**64, 1.5, True, "3", None, [], [[]], [1, 2, 3], [[1]], {"a": 1}])
LENGTH = st.integers(1, 12) | HOSTILE
PAIR = st.tuples(LENGTH, st.integers(1, 6) | HOSTILE).map(list)
DIM = st.integers(1, 12) | HOSTILE | st.lists(LENGTH | PAIR, max_size=6)
CASE = st.integers(1, 2).flatmap(
    lambda ndim: st.tuples(
        st.lists(st.integers(0, 20), min_size=ndim, max_size=ndim),
        st.lists(DIM, min_size=ndim, max_size=ndim + (ndim == 1)),
    )
)


def document(shape: list[int], shapes: list[object]) -> dict[str, object]:
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": "int32",
        "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": shapes}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": -1,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }


ORACLE = """
out = []
for path in ARGS["paths"]:
    try:
        a = zarr.open_array(path, mode="r+")
        a[...] = np.arange(int(np.prod(a.shape)), dtype="int32").reshape(a.shape)
        out.append({"data": a[...].tolist()})
    except Exception as exc:
        out.append({"error": type(exc).__name__ + ": " + str(exc)[:200]})
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def oracle() -> Path:
    return oracle_or_skip()


def open_bounded(path: Path) -> zarr3_backend.Array | MetadataError:
    """Open ``path`` within 2 s and 16 MiB, or the MetadataError it raised."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        return zarr3_backend.open_array(str(path))
    except MetadataError as exc:
        return exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert time.perf_counter() - started < 2 and peak < 16 << 20, (path, peak)


def _empty_edges_of_an_empty_dimension(case: tuple[list[int], list[object]]) -> bool:
    """A dimension of length 0 given no edges (``[]``): a grid the spec allows and zarr-python 3.4 refuses."""
    shape, shapes = case
    return any(length == 0 and edges == [] for length, edges in zip(shape, shapes))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(CASE, min_size=30, max_size=30))
def test_a_hostile_grid_reads_like_zarr_python_or_is_refused_naming_the_field(
    oracle: Path, tmp_path_factory: pytest.TempPathFactory, cases: list[tuple[list[int], list[object]]]
) -> None:
    root = tmp_path_factory.mktemp("hostile")
    paths = []
    for i, (shape, shapes) in enumerate(cases):
        (root / str(i)).mkdir()
        (root / str(i) / "zarr.json").write_text(json.dumps(document(shape, shapes)))
        paths.append(root / str(i))
    ours = [open_bounded(path) for path in paths]  # before the oracle writes into them
    theirs = run_oracle(oracle, ORACLE, paths=[str(p) for p in paths])
    for case, mine, answer in zip(cases, ours, theirs):
        if isinstance(mine, MetadataError):
            assert "chunk_grid" in str(mine) or "shape" in str(mine), (case, mine)
            continue
        if _empty_edges_of_an_empty_dimension(case) and "no chunk edges" in answer.get("error", ""):
            continue  # SPEC_WINS: zarr-python 3.4 refuses them; the spec asks edges summing to at least 0
        assert "data" in answer, (case, answer)  # we open it: zarr-python must as well
        expected = np.asarray(answer["data"], dtype="int32").reshape(mine.shape)
        np.testing.assert_array_equal(zarr3_backend.open_array(mine.store)[...], expected, err_msg=str(case))


@pytest.mark.parametrize(
    ("shapes", "sizes"),
    [
        ([[[1, 10**12]]], (1,) * 100),
        ([[[7, 2**40], 3]], (7,) * 14 + (2,)),
        ([[[1, 2**62 - 1], [1, 10]]], (1,) * 100),
    ],
)
def test_huge_run_lengths_open_and_read_in_bounded_time_and_memory(tmp_path: Path, shapes, sizes) -> None:
    (tmp_path / "zarr.json").write_text(json.dumps(document([100], shapes)))
    opened = open_bounded(tmp_path)
    assert not isinstance(opened, MetadataError)
    assert opened.chunk_sizes == (sizes,)
    writable = zarr3_backend.open_array(str(tmp_path), mode="r+")
    writable[:] = np.arange(100, dtype="int32")
    np.testing.assert_array_equal(opened[...], np.arange(100))


def test_a_zero_length_dimension_with_no_chunks_reads_under_dask(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    (tmp_path / "s.zarr" / "v").mkdir(parents=True)
    (tmp_path / "s.zarr" / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group"}))
    doc = {**document([0, 3], [[], 3]), "dimension_names": ["x", "y"]}
    (tmp_path / "s.zarr" / "v" / "zarr.json").write_text(json.dumps(doc))
    ds = xr.open_dataset(tmp_path / "s.zarr", engine="zarr3", chunks={})
    assert ds.v.data.chunks == ((0,), (3,))
    assert ds.v.values.shape == (0, 3)


@pytest.mark.parametrize(
    ("shapes", "field"),
    [
        ([[2**63, 1]], r"chunk_shapes\[0\]\[0\]: expected a positive integer below 2\*\*63"),
        ([[[2**63, 1]]], r"chunk_shapes\[0\]\[0\]\[0\] \(length\)"),
        (
            [[2**62, 2**62, 2**62, 2**62, 4]],
            r"chunk_shapes\[0\]\[1\]: the chunk lengths .* not below 2\*\*63",
        ),
        ([[[2**62, 5]]], r"chunk_shapes\[0\]\[0\]: the chunk lengths .* not below 2\*\*63"),
    ],
)
def test_edges_and_their_sums_stay_below_2_63(tmp_path: Path, shapes, field) -> None:
    (tmp_path / "zarr.json").write_text(json.dumps(document([100], shapes)))
    refused = open_bounded(tmp_path)
    assert isinstance(refused, MetadataError)
    assert re.search(field, str(refused)), refused
