"""`AxisIndex` selects as a pandas index over the same computed labels does, for any axis and any labels."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr3_backend.xarray.axis_index import AxisIndex, AxisTransform

steps = st.sampled_from([10.0, -10.0, 0.25, -0.1, 30.0, 1 / 3])
bounds = st.none() | st.floats(-50, 150, allow_nan=False)


def pair(size: int, step: float, origin: float) -> tuple[xr.Dataset, xr.Dataset]:
    lazy = xr.Dataset(coords=xr.Coordinates.from_xindex(AxisIndex(AxisTransform("x", size, step, origin))))
    lazy = lazy.assign(v=("x", np.arange(size)))
    return lazy, lazy.assign_coords(x=lazy.x.values)


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 40), step=steps, origin=st.floats(-20, 20), start=bounds, stop=bounds)
def test_slices_select_as_pandas(
    size: int, step: float, origin: float, start: float | None, stop: float | None
) -> None:
    lazy, materialised = pair(size, step, origin)
    xr.testing.assert_equal(lazy.sel(x=slice(start, stop)).load(), materialised.sel(x=slice(start, stop)))


@settings(max_examples=100, deadline=None)
@given(size=st.integers(1, 40), step=steps, origin=st.floats(-20, 20), data=st.data())
def test_labels_and_nearest_select_as_pandas(
    size: int, step: float, origin: float, data: st.DataObject
) -> None:
    lazy, materialised = pair(size, step, origin)
    picks = data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=5))
    labels = materialised.x.values[picks]
    xr.testing.assert_equal(lazy.sel(x=labels).load(), materialised.sel(x=labels))
    xr.testing.assert_equal(lazy.sel(x=labels[0]).load(), materialised.sel(x=labels[0]))
    near = data.draw(st.floats(-60, 160, allow_nan=False))
    xr.testing.assert_equal(
        lazy.sel(x=near, method="nearest").load(), materialised.sel(x=near, method="nearest")
    )


def test_a_label_not_on_the_grid_raises_key_error() -> None:
    lazy, _ = pair(5, 10.0, 0.0)
    with pytest.raises(KeyError, match="'x'"):
        lazy.sel(x=7.0)
    with pytest.raises(KeyError, match="'x'"):
        lazy.sel(x=7.0, method="nearest", tolerance=1.0)
    assert float(lazy.sel(x=7.0, method="nearest", tolerance=3.0).x) == 5.0


def test_a_slice_keeps_the_index_lazy() -> None:
    lazy, materialised = pair(100, -2.0, 50.0)
    part = lazy.isel(x=slice(10, 60, 3))
    assert isinstance(part.xindexes["x"], AxisIndex)
    np.testing.assert_array_equal(part.x.values, materialised.x.values[10:60:3])
    xr.testing.assert_equal(
        part.sel(x=slice(20, -30)).load(), materialised.isel(x=slice(10, 60, 3)).sel(x=slice(20, -30))
    )
    backwards = lazy.isel(x=slice(None, None, -1))
    xr.testing.assert_equal(
        backwards.sel(x=slice(-100, -120)).load(),
        materialised.isel(x=slice(None, None, -1)).sel(x=slice(-100, -120)),
    )


def test_a_tie_goes_to_the_larger_label_on_a_decreasing_axis_as_pandas_breaks_it() -> None:
    """Found by the property above: labels (5, -5) and 0.0 halfway between them."""
    lazy, materialised = pair(2, -10.0, 10.0)
    assert float(materialised.sel(x=0.0, method="nearest").x) == 5.0
    xr.testing.assert_equal(
        lazy.sel(x=0.0, method="nearest").load(), materialised.sel(x=0.0, method="nearest")
    )
