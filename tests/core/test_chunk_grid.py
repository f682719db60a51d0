"""The regular chunk grid: JSON round trip, validation, grid arithmetic."""

from __future__ import annotations

import pytest

from zarr3_backend.core.chunk_grid import RegularChunkGrid, parse_chunk_shape
from zarr3_backend.errors import MetadataError, UnknownExtensionError


def grid_json(chunk_shape, **extra):
    return {"name": "regular", "configuration": {"chunk_shape": chunk_shape}, **extra}


def test_json_round_trip():
    obj = grid_json([5, 20, 400])
    grid = RegularChunkGrid.from_json(obj)
    assert grid == RegularChunkGrid((5, 20, 400))
    assert grid.to_json() == obj
    assert RegularChunkGrid.from_json(grid_json([2], must_understand=True)).chunk_shape == (2,)


def test_spec_example():
    grid = RegularChunkGrid((5, 20, 400))
    assert grid.grid_shape((10, 200, 3000)) == (2, 10, 8)
    assert grid.chunk_origin((1, 7, 2)) == (5, 140, 800)


def test_zero_length_dims_have_no_chunks():
    assert RegularChunkGrid((3, 1)).grid_shape((0, 4)) == (0, 4)
    assert list(RegularChunkGrid((3, 1)).chunk_coords((0, 4))) == []


def test_zero_dimensional():
    grid = RegularChunkGrid.from_json(grid_json([]))
    assert grid.grid_shape(()) == ()
    assert list(grid.chunk_coords(())) == [()]
    assert grid.chunk_origin(()) == ()


def test_chunk_coords_in_c_order():
    assert list(RegularChunkGrid((2, 3)).chunk_coords((3, 4))) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_unknown_grid():
    with pytest.raises(UnknownExtensionError, match="unknown chunk grid 'rectilinear'"):
        RegularChunkGrid.from_json({"name": "rectilinear", "configuration": {}})


def test_must_understand_false_is_refused_even_for_unknown_grids():
    with pytest.raises(MetadataError, match="must_understand"):
        RegularChunkGrid.from_json(grid_json([2], must_understand=False))
    with pytest.raises(MetadataError, match="must_understand"):
        RegularChunkGrid.from_json({"name": "other", "must_understand": False})


@pytest.mark.parametrize("bad", [[0, 2], [-1], [1.5], ["2"], [True], "4", None, 3])
def test_bad_chunk_shape(bad):
    with pytest.raises(
        MetadataError,
        match=r"chunk_grid\.configuration\.chunk_shape: expected a list of positive integers, got",
    ):
        RegularChunkGrid.from_json(grid_json(bad))


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        ({"name": "regular"}, r"chunk_shape: required member is missing"),
        ("regular", r"chunk_shape: required member is missing"),
        ({"name": "regular", "configuration": {"chunk_shape": [1], "x": 1}}, r"unexpected members \['x'\]"),
        ({"name": "regular", "configuration": [1]}, r"chunk_grid\.configuration: expected an object"),
        (
            {"name": "regular", "configuration": {"chunk_shape": [1]}, "extra": 1},
            r"unexpected members \['extra'\]",
        ),
        ({"configuration": {}}, r"chunk_grid: expected an object with a string 'name'"),
        ([1, 2], r"chunk_grid: expected an object with a string 'name'"),
    ],
)
def test_malformed_grid_objects(obj, match):
    with pytest.raises(MetadataError, match=match):
        RegularChunkGrid.from_json(obj)


def test_validate_against_array_ndim():
    grid = RegularChunkGrid((2, 2))
    grid.validate((4, 5))
    with pytest.raises(
        MetadataError, match=r"expected 3 entries to match the array shape \(4, 5, 6\), got 2"
    ):
        grid.validate((4, 5, 6))


def test_constructor_validates_and_normalizes():
    assert RegularChunkGrid([2, 3]).chunk_shape == (2, 3)
    with pytest.raises(MetadataError):
        RegularChunkGrid((0,))


def test_parse_helpers():
    assert parse_chunk_shape((1, 2)) == (1, 2)


def test_matches_zarr_python(tmp_path):
    zarr = pytest.importorskip("zarr")
    import json

    zarr.create_array(str(tmp_path), shape=(10, 7), chunks=(4, 3), dtype="i2")
    written = json.loads((tmp_path / "zarr.json").read_text())["chunk_grid"]
    assert RegularChunkGrid.from_json(written).to_json() == written
    assert RegularChunkGrid.from_json(written).grid_shape((10, 7)) == (3, 3)
