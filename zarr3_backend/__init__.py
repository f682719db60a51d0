"""zarr3_backend: a complete, fast, pure-Python Zarr v3 engine behind xarray and dask.

>>> import zarr3_backend
>>> a = zarr3_backend.create_array("memory://doc/init", shape=(6,), dtype="int16", chunks=(2,))
>>> a[:] = range(6)
>>> a[::2].tolist()
[0, 2, 4]
"""

import importlib.util

from . import codecs  # noqa: F401  (registers the built-in codecs)
from .codecs import allow_unsafe_codecs
from .api import create_array, create_group, open, open_array, open_group
from .array import Array
from .errors import (
    ArrayNotFoundError,
    BoundsError,
    ChecksumError,
    CodecError,
    CorruptShardError,
    GroupNotFoundError,
    InvalidKeyError,
    MetadataError,
    NodeExistsError,
    NodeNameError,
    NodeNotFoundError,
    ReadOnlyError,
    StoreError,
    UnknownExtensionError,
    UnsafeCodecError,
    Zarr3Error,
)
from .hierarchy import Group, consolidate_metadata

__version__ = "0.1.0"

if importlib.util.find_spec("xarray") is not None:
    from .xarray_backend import writer as _xarray_writer  # noqa: F401  (adds Dataset/DataArray/DataTree.to_zarr3)

__all__ = [
    "Array", "ArrayNotFoundError", "BoundsError", "ChecksumError", "CodecError", "CorruptShardError",
    "Group", "GroupNotFoundError", "InvalidKeyError", "MetadataError", "NodeExistsError", "NodeNameError",
    "NodeNotFoundError", "ReadOnlyError", "StoreError", "UnknownExtensionError", "UnsafeCodecError",
    "Zarr3Error", "allow_unsafe_codecs", "consolidate_metadata", "create_array", "create_group", "open", "open_array", "open_group",
]
