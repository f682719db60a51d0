"""The pending-write record's parser, which lives in `zarr3_backend.nodes.pending` (readers check it too)."""

from __future__ import annotations

from ...nodes.pending import PendingRecord, broken, parse_pending, read_pending

__all__ = ["PendingRecord", "broken", "parse_pending", "read_pending"]
