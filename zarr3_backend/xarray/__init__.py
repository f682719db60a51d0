"""xarray integration: ``xr.open_dataset(..., engine="zarr3")`` and ``xr.open_datatree(..., engine="zarr3")``."""

from .backend_array import Zarr3BackendArray
from .datastore import Zarr3DataStore
from .entrypoint import Zarr3BackendEntrypoint

__all__ = ["Zarr3BackendArray", "Zarr3BackendEntrypoint", "Zarr3DataStore"]
