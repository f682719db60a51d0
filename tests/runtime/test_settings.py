"""Every ZARR3_BACKEND_* variable is parsed strictly in one place: a bad value names the variable and what it accepts."""

from __future__ import annotations

import pytest

import zarr3_backend
from zarr3_backend.coordination.lease import LEASE_KEY, StoreLease
from zarr3_backend.runtime import settings
from zarr3_backend.store import make_store

READERS = {
    "ZARR3_BACKEND_THREADS": settings.thread_count,
    "ZARR3_BACKEND_IO_CONCURRENCY": settings.io_concurrency,
    "ZARR3_BACKEND_IO_BYTES": settings.io_buffer_bytes,
    "ZARR3_BACKEND_LEASE_WAIT": settings.lease_wait,
}


@pytest.mark.parametrize("name", sorted(READERS))
@pytest.mark.parametrize("raw", ["nan", "abc", "-1", "inf", "", "1.5e400"])
def test_a_bad_value_raises_naming_the_variable_and_what_it_accepts(monkeypatch, name, raw) -> None:
    monkeypatch.setenv(name, raw)
    with pytest.raises(
        zarr3_backend.SettingError, match=f"{name}='{raw}' is not (an integer|a finite number)"
    ):
        READERS[name]()


@pytest.mark.parametrize(
    "name", ["ZARR3_BACKEND_THREADS", "ZARR3_BACKEND_IO_CONCURRENCY", "ZARR3_BACKEND_IO_BYTES"]
)
@pytest.mark.parametrize("raw", ["0", "2.5"])
def test_counts_are_positive_integers(monkeypatch, name, raw) -> None:
    monkeypatch.setenv(name, raw)
    with pytest.raises(zarr3_backend.SettingError, match="an integer >= 1"):
        READERS[name]()


def test_good_values_and_defaults(monkeypatch) -> None:
    for name in READERS:
        monkeypatch.delenv(name, raising=False)
    assert (settings.io_concurrency(), settings.io_buffer_bytes(), settings.lease_wait()) == (
        64,
        256 << 20,
        600.0,
    )
    monkeypatch.setenv("ZARR3_BACKEND_THREADS", " 3 ")
    monkeypatch.setenv("ZARR3_BACKEND_LEASE_WAIT", "0")
    assert (settings.thread_count(), settings.lease_wait()) == (3, 0.0)


def test_a_nan_lease_wait_fails_the_append_instead_of_waiting_forever(monkeypatch) -> None:
    store = make_store("memory://settings/lease_nan")
    monkeypatch.setenv("ZARR3_BACKEND_LEASE_WAIT", "nan")
    with StoreLease(store, wait=0):  # held by someone: a second writer would wait
        with pytest.raises(zarr3_backend.SettingError, match="ZARR3_BACKEND_LEASE_WAIT='nan'"):
            StoreLease(store).__enter__()
    assert not store.exists(LEASE_KEY)
