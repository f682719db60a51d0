"""Fixtures of the storage tests: a quiet heap for the tests that count request rounds."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture
def settled_heap() -> Iterator[None]:
    """No garbage collection while the test runs: the tests that count rounds use it.

    Late in the run a full collection takes 0.4-1.2 s on our 2-core machines (botocore clients of
    earlier tests are cyclic garbage), and one of what a test itself allocates ~0.1 s; the rounds
    tests inject 0.2-0.3 s of latency, and a request held up by a collection arrives after its
    round ended and counts as a round of its own. Collected before, then off until the test ends.
    """
    gc.collect()
    gc.disable()
    yield
    gc.enable()
