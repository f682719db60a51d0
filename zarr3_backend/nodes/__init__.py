"""Arrays and groups over a store: reading, writing whole shards, creating, opening and consolidating nodes.

Zarr v2 nodes (read-only) are opened here too, as v3-like descriptions served
by the same read path.
"""
