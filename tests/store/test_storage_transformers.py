"""The storage transformer extension point: registered transformers wrap chunk I/O, unknown ones are refused."""

import json

import numpy as np
import pytest

import zarr3_backend
from zarr3_backend.store import make_store
from zarr3_backend.store.base import Store, Versioned, join_value
from zarr3_backend.store.storage_transformers import register_storage_transformer


class Inverting(Store):
    """Stores every chunk with its bytes inverted (a transformer that changes bytes, not keys)."""

    def __init__(self, inner, configuration):
        self.inner, self.read_only = inner, inner.read_only

    def get_many_versioned(self, requests):
        assert all(r is None for _, r in requests), "this toy transformer supports whole values only"
        reads = self.inner.get_many_versioned(requests)
        return [Versioned(None if r.value is None else bytes(255 - b for b in r.value)) for r in reads]

    def set(self, key, value):
        self.inner.set(key, bytes(255 - b for b in join_value(value)))

    def delete(self, key):
        self.inner.delete(key)

    def list_prefix(self, prefix):
        return self.inner.list_prefix(prefix)

    def list_dir(self, prefix):
        return self.inner.list_dir(prefix)


register_storage_transformer("test.inverting", Inverting)


def test_registered_transformer_wraps_chunk_io(tmp_path):
    store = make_store(str(tmp_path))
    zarr3_backend.create_array(store, shape=(4,), dtype="uint8", chunks=(4,), compressors=None)
    document = json.loads(store.get("zarr.json"))
    document["storage_transformers"] = [{"name": "test.inverting", "configuration": {}}]
    store.set("zarr.json", json.dumps(document).encode())
    a = zarr3_backend.open_array(store, mode="r+")
    a[...] = [1, 2, 3, 4]
    assert store.get("c/0") == bytes([254, 253, 252, 251])
    np.testing.assert_array_equal(zarr3_backend.open_array(store)[...], [1, 2, 3, 4])


def test_unknown_transformer_is_refused_unless_optional(tmp_path):
    store = make_store(str(tmp_path))
    zarr3_backend.create_array(store, shape=(4,), dtype="uint8", chunks=(4,))
    document = json.loads(store.get("zarr.json"))
    document["storage_transformers"] = [{"name": "chunk-manifest"}]
    store.set("zarr.json", json.dumps(document).encode())
    with pytest.raises(zarr3_backend.UnknownExtensionError, match="storage transformer 'chunk-manifest'"):
        zarr3_backend.open_array(store)
    document["storage_transformers"] = [{"name": "chunk-manifest", "must_understand": False}]
    store.set("zarr.json", json.dumps(document).encode())
    assert zarr3_backend.open_array(store)[...].tolist() == [0, 0, 0, 0]
