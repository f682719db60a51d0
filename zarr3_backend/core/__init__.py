"""The format itself, without I/O: data types, the chunk grid and key encodings, selections, metadata documents.

Also the value types codecs and stores exchange, safe store keys, scratch
memory, memory limits and every thread pool. Nothing here imports a store, a
codec, dask or xarray (import-linter contracts in ``pyproject.toml``).
"""
