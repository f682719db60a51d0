"""Deterministic smooth random fields that any window of a grid can be computed from on its own.

The fields are *value noise*: pseudo-random values on a coarse lattice, a pure
function (a splitmix64 hash) of the seed and the lattice point, smoothly
interpolated in between. So a field's value at a point does not depend on the
grid it is sampled on: a 256 x 256 window of a 10980 x 10980 scene equals the
same pixels of the whole scene, and dask blocks can be generated independently.

>>> import numpy as np
>>> y, x = np.arange(4.0)[:, None], np.arange(6.0)[None, :]
>>> whole = fractal_noise((1,), y, x, cell=8.0)
>>> bool(np.array_equal(whole[1:3, 2:5], fractal_noise((1,), y[1:3], x[:, 2:5], cell=8.0)))
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["fractal_noise", "hash_uniform", "value_noise"]

Floats = npt.NDArray[np.float64]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The splitmix64 finaliser (wrapping uint64 arithmetic)."""
    h = (h ^ (h >> np.uint64(30))) * _M1
    h = (h ^ (h >> np.uint64(27))) * _M2
    return h ^ (h >> np.uint64(31))


def hash_uniform(seed: Sequence[int], *coords: npt.ArrayLike) -> Floats:
    """Uniform values in [0, 1), a pure function of ``seed`` and the integer ``coords`` (broadcast).

    >>> import numpy as np
    >>> a = hash_uniform((7,), np.arange(3))
    >>> bool(np.array_equal(a, hash_uniform((7,), np.arange(3)))), bool(((a >= 0) & (a < 1)).all())
    (True, True)
    """
    with np.errstate(over="ignore"):
        h = np.zeros((), np.uint64)
        for value in (*seed, *coords):
            h = _mix(h ^ (np.asarray(value).astype(np.int64).view(np.uint64) + _GOLDEN))
        return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _smoothstep(t: Floats) -> Floats:
    return t * t * (3.0 - 2.0 * t)


def value_noise(
    seed: Sequence[int], y: npt.ArrayLike, x: npt.ArrayLike, cell: float, x_period: float | None = None
) -> Floats:
    """Smooth noise in [-1, 1] at points ``(y, x)`` (broadcast) from a lattice of spacing ``cell``.

    ``x_period`` (a multiple of ``cell``) makes the field periodic in x, e.g. 360 for longitude. On a grid
    (``y`` a column, ``x`` a row) each lattice row is interpolated along x once, then rows pairwise: the
    same operations on the same numbers as at scattered points, so the same values bit for bit.
    """
    fy, fx = np.asarray(y, np.float64) / cell, np.asarray(x, np.float64) / cell
    iy, ix = np.floor(fy).astype(np.int64), np.floor(fx).astype(np.int64)
    ty, tx = _smoothstep(fy - iy), _smoothstep(fx - ix)
    rows = np.arange(iy.min(), iy.max() + 2)
    cols = np.arange(ix.min(), ix.max() + 2)
    if x_period is not None:
        cols = np.mod(cols, round(x_period / cell))
    table = hash_uniform(seed, rows[:, None], cols[None, :])  # the lattice values around the points
    r, c = iy - rows[0], ix - ix.min()
    top: Floats  # numpy types fancy indexing as Any
    bottom: Floats
    if fy.ndim == fx.ndim == 2 and fy.shape[1] == 1 and fx.shape[0] == 1:
        along = (1 - tx) * table[:, c[0]] + tx * table[:, c[0] + 1]  # every lattice row, at every x
        top, bottom = along[r[:, 0]], along[r[:, 0] + 1]
    else:
        top = (1 - tx) * table[r, c] + tx * table[r, c + 1]
        bottom = (1 - tx) * table[r + 1, c] + tx * table[r + 1, c + 1]
    return 2.0 * ((1 - ty) * top + ty * bottom) - 1.0


def fractal_noise(
    seed: Sequence[int],
    y: npt.ArrayLike,
    x: npt.ArrayLike,
    cell: float,
    *,
    octaves: int = 3,
    x_period: float | None = None,
) -> Floats:
    """Sum of ``octaves`` value-noise layers (each half the cell and half the weight), scaled to std ~1."""
    total = np.zeros(np.broadcast_shapes(np.shape(y), np.shape(x)))
    for octave in range(octaves):
        total += 0.5**octave * value_noise((*seed, octave), y, x, cell / 2**octave, x_period)
    return total * (3.6 / (2.0 - 0.5 ** (octaves - 1)))
