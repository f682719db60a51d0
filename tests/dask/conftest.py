"""Fixtures of the dask tests: a real ``LocalCluster`` with worker processes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A ``distributed.Client`` on a LocalCluster of 2 worker processes x 1 thread, one per test module."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client
