"""Helpers for testing zarr3_backend and its extensions (need pytest; not imported by the package).

- :mod:`zarr3_backend.testing.stores`: ``StoreContract``, ``ReadOnlyStoreContract``, ``CountingStore``.
- :mod:`zarr3_backend.testing.servers`: ``moto_s3_server()`` and ``http_server(directory)`` on 127.0.0.1.
- :mod:`zarr3_backend.testing.codecs`: ``CodecContract``.
"""
