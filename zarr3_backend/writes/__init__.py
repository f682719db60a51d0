"""The engine-independent write: a plan, its publication, shard tasks on an executor, commit or roll back.

- `plan` the plan, plain data (`WritePlan`, `DataWrite`, `WriteOptions`);
- `tasks` the shard-task contract: `WriteRequest`, the `WriteStep` ending a write, `ShardProgress`;
- `executor` the `Executor` protocol, and picking one from the data (dask, Cubed, ...);
- `target` where a write lands: refusals, first writes marked unfinished, the arrays stored there;
- `run` runs a plan: in-memory data on the client, the rest on the executor; rolls a failed write back;
- `commit` makes ``mode="a"`` writes all-or-nothing, and rolls them back or forward;
- `publish` writes the metadata documents, the root's consolidated metadata first;
- `dry_run` a publication tried against a view of the store before the store is touched.

``zarr3_backend.xarray.write`` translates xarray objects into a plan; the
executors (``zarr3_backend.dask``, ``zarr3_backend.cubed``) run its shard tasks.
This package imports neither (import-linter contracts in ``pyproject.toml``).
A write ends with at most one `WriteStep`: `target.ClearUnfinishedMarks` (a first
write), `commit.CommitMetadata` or `run.ReleaseReservation`
(docs/architecture.md, "How a write commits").
"""
