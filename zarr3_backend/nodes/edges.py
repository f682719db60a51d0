"""What lies past the array's edge inside a stored chunk."""

from __future__ import annotations

import numpy as np

from ..core.dtypes import Scalar


def reset_outside(chunk: np.ndarray, in_bounds: tuple[int, ...], fill: Scalar) -> None:
    """Set the part of a stored chunk beyond the first ``in_bounds`` elements of each axis to ``fill``.

    Used where a chunk is cut by the array's edge, so that stale data (from a
    shrink, or a failed append) can never reappear when the array grows.
    """
    for dim, n in enumerate(in_bounds):
        if n < chunk.shape[dim]:
            chunk[(slice(None),) * dim + (slice(n, None),)] = fill
