"""zarr3_backend: a complete, fast, pure-Python Zarr v3 engine behind xarray and dask.

>>> import zarr3_backend
>>> a = zarr3_backend.create_array("memory://doc/init", shape=(6,), dtype="int16", chunks=(2,))
>>> a[:] = range(6)
>>> a[::2].tolist()
[0, 2, 4]
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING

import wrapt

from .api import copy_array, create_array, create_group, open, open_array, open_group
from .codecs import allow_unsafe_codecs  # (importing codecs registers the built-in codecs)
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    ArrayNotFoundError,
    BoundsError,
    ChecksumError,
    CodecError,
    ConcurrentModificationError,
    ConcurrentWriteError,
    CorruptShardError,
    GroupNotFoundError,
    InvalidKeyError,
    MemoryLimitError,
    MetadataError,
    NodeExistsError,
    NodeNameError,
    NodeNotFoundError,
    ReadOnlyError,
    RegionKeyError,
    SettingError,
    StoreError,
    UnfinishedWriteError,
    UnknownExtensionError,
    UnsafeCodecError,
    WriteError,
    WriteKeyError,
    WriteNotImplementedError,
    WriteTypeError,
    Zarr3Error,
)
from .nodes.array import Array
from .nodes.hierarchy import Group
from .nodes.tree_consolidation import consolidate_metadata
from .store import clear_store_cache

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .conversion import ConvertSummary, convert
    from .writes.commit import finish_pending_write
    from .xarray.methods import open_zarr3
    from .xarray.write.planner import to_zarr3

#: What the write wing and the xarray methods define, imported when first named: ``import zarr3_backend``
#: stays a reader's import.
_LOADED_ON_FIRST_USE = {
    "ConvertSummary": ".conversion",
    "convert": ".conversion",
    "finish_pending_write": ".writes.commit",
    "open_zarr3": ".xarray.methods",
    "to_zarr3": ".xarray.write.planner",
}


def _add_to_zarr3(xarray: object) -> None:
    """Give xarray's Dataset, DataArray and DataTree their ``to_zarr3`` (importing `methods` does it)."""
    importlib.import_module(".xarray.methods", __name__)


# Now if xarray is imported already, else the moment it is: a process that never imports xarray never pays for it.
wrapt.register_post_import_hook(_add_to_zarr3, "xarray")


def __getattr__(name: str) -> object:
    if name in _LOADED_ON_FIRST_USE:
        value = getattr(importlib.import_module(_LOADED_ON_FIRST_USE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "Array",
    "ArrayNotFoundError",
    "BoundsError",
    "ChecksumError",
    "CodecError",
    "ConcurrentModificationError",
    "ConcurrentWriteError",
    "ConvertSummary",
    "CorruptShardError",
    "Group",
    "GroupNotFoundError",
    "InvalidKeyError",
    "MemoryLimitError",
    "MetadataError",
    "NodeExistsError",
    "NodeNameError",
    "NodeNotFoundError",
    "ReadOnlyError",
    "RegionKeyError",
    "SettingError",
    "StoreError",
    "UnfinishedWriteError",
    "UnknownExtensionError",
    "UnsafeCodecError",
    "WriteError",
    "WriteKeyError",
    "WriteNotImplementedError",
    "WriteTypeError",
    "Zarr3Error",
    "allow_unsafe_codecs",
    "consolidate_metadata",
    "clear_store_cache",
    "convert",
    "copy_array",
    "create_array",
    "create_group",
    "open",
    "open_array",
    "open_group",
]
if importlib.util.find_spec("xarray") is not None:
    __all__ += ["finish_pending_write", "open_zarr3", "to_zarr3"]
