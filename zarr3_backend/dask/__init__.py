"""dask integration: shard-aligned write graphs (one task owns one shard), running them, and their progress."""
