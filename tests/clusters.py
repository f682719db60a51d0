"""A LocalCluster of worker processes for the tests that need one (the ``client`` fixture, churn tests)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest


@contextlib.contextmanager
def local_cluster(workers: int) -> Iterator[tuple[Any, Any]]:
    """A LocalCluster of ``workers`` worker processes x 1 thread, and a ``distributed.Client`` on it."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield cluster, client
