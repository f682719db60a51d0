"""Helpers for testing zarr3_backend and its extensions (need pytest; not imported by the package).

- `zarr3_backend.testing.stores`: ``StoreContract``, ``ReadOnlyStoreContract``, ``CountingStore``.
- `tests.servers.servers`: ``moto_s3_server()`` and ``http_server(directory)`` on 127.0.0.1.
- `tests.servers.latency_s3`: ``latency_s3_server()`` / ``latency_s3_process()``, an
  S3-compatible loopback server with injected latency, a bandwidth cap and request/round counters.
- `zarr3_backend.testing.codecs`: ``CodecContract``.
"""
