"""``to_zarr3``: a write, one module per step, called in order by `planner`.

- `planner` the entry, `to_zarr3()`: checks the request, plans every group, runs the plan;
- `checks` the arguments, the variable names, appends and stored string lengths;
- `target` refuses a target where the write would hide data, and publishes first writes marked unfinished;
- `encodings` the user's ``encoding``, and each new array's metadata (chunks and shards included);
- `stored` the arrays already stored, and the encoding they were stored with;
- `region` where data lands in stored arrays: ``region=`` and appends;
- `plan` the plan, plain data;
- `data` runs the plan: in-memory data on the client, the dask graph of the rest;
- `commit` makes ``mode="a"`` writes all-or-nothing, and rolls them back or forward;
- `publish` writes the metadata documents, the root's consolidated metadata first;
- `lease`, `dry_run`, `pending`: the store-wide append lease, a dry run of a
  publication, and the pending-write record.

Each step imports only the steps below it (an import-linter contract in ``pyproject.toml``).
A write ends with at most one `WriteStep` (`zarr3_backend.dask.write_graph`), the
last task of its data graph: `target.ClearUnfinishedMarks`, `commit.CommitMetadata`
or `data.ReleaseReservation` (docs/architecture.md, "How a write commits").
"""
