"""The format itself, without I/O: data types, the chunk grid and key encodings, selections, metadata documents.

Also the value types codecs and stores exchange and safe store keys. Nothing
here imports a store, a codec, the runtime, dask or xarray, not even for
typing (import-linter contracts in ``pyproject.toml``).
"""
