"""S3 through fsspec (s3fs), as `FsspecStore` uses it.

How to build an s3 file system whose connection pool admits every request in
flight, how to tell one apart, how it splits paths, how to make a whole-value
read one GET, and how to run a call under its own retry policy.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fsspec import AbstractFileSystem

from ..runtime import io_concurrency
from .base import Generation
from .etags import object_generation

T = TypeVar("T")


def with_connection_pool(protocol: str, storage_options: dict[str, Any]) -> dict[str, Any]:
    """``storage_options`` for an s3 file system whose connection pool admits ``io_concurrency()`` requests.

    s3fs (through botocore) opens at most 10 connections by default, which
    would cap the requests in flight below the I/O concurrency. A
    ``max_pool_connections`` the user set in ``config_kwargs`` is kept.

    >>> with_connection_pool("s3", {"anon": True})["config_kwargs"]
    {'max_pool_connections': 64}
    >>> with_connection_pool("s3", {"config_kwargs": {"max_pool_connections": 4}})["config_kwargs"]
    {'max_pool_connections': 4}
    """
    if protocol not in ("s3", "s3a"):
        return storage_options
    config = dict(storage_options.get("config_kwargs") or {})
    config.setdefault("max_pool_connections", io_concurrency())
    return {**storage_options, "config_kwargs": config}


def is_s3(fs: AbstractFileSystem) -> bool:
    """Whether ``fs`` is an s3fs file system (it can call S3 directly and split paths into bucket and key)."""
    return callable(getattr(fs, "_call_s3", None)) and callable(getattr(fs, "split_path", None))


def plain_bucket(fs: AbstractFileSystem, root: str) -> str | None:
    """The bucket that s3fs splits off every path below ``root`` at its first ``/``; ``None`` where it splits otherwise."""
    bucket, key, _ = fs.split_path(f"{root}/k")
    return bucket if "/" not in bucket and f"{bucket}/{key}" == f"{root}/k".lstrip("/") else None


def single_get_kwargs(fs: AbstractFileSystem) -> dict[str, Any]:
    """``_cat_file`` keywords that make a whole-value read one GET (s3fs: no HEAD first)."""
    cat_file = getattr(fs, "_cat_file", None)
    if fs.async_impl and cat_file is not None and "max_concurrency" in inspect.signature(cat_file).parameters:
        return {"max_concurrency": 1}
    return {}


async def s3_with_retries(fs: AbstractFileSystem, call: Callable[[], Awaitable[T]]) -> T:
    """``call()`` under s3fs's own retry policy (the one its ``_cat_file`` uses), where s3fs has it."""
    try:
        from s3fs.core import _error_wrapper
    except ImportError:
        return await call()
    result: T = await _error_wrapper(call, retries=fs.retries)
    return result


def s3_generation(
    fs: AbstractFileSystem, bucket: str, path: str, response: dict[str, Any]
) -> Generation | None:
    """The generation a GetObject or HeadObject answer names: ETag, version id, object size, last-modified time."""
    options: Any = fs
    endpoint = (options.client_kwargs or {}).get("endpoint_url") or getattr(options, "endpoint_url", None)
    size = response.get("ContentLength")
    content_range = response.get("ContentRange")
    if isinstance(content_range, str):  # a ranged answer: "bytes 0-9/100" names the object's size
        total = content_range.rsplit("/", 1)[-1]
        size = int(total) if total.isdigit() else None
    return object_generation(
        f"s3://{bucket} at {endpoint or 'default'}",
        path,
        etag=response.get("ETag"),
        version=response.get("VersionId"),
        size=size,
        modified=response.get("LastModified"),
    )
