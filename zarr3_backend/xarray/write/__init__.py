"""``to_zarr3``: the translation of an xarray object into a write plan, one module per step, called by `planner`.

- `planner` the entry, `to_zarr3()`: checks the request, plans every group, hands the plan to ``zarr3_backend.writes``;
- `checks` the arguments, the variable names, appends and stored string lengths;
- `target` refuses a target where the write would hide data, and publishes first writes marked unfinished;
- `encodings` the user's ``encoding``, and each new array's metadata (chunks and shards included);
- `stored` the arrays already stored, and the encoding they were stored with;
- `region` where data lands in stored arrays: ``region=`` and appends;
- `times`, `time_values`, `packed` CF encoding checked against what the stored encoding gives back;
- `self_read` (with `graph_reads`) refuses chunked data reading what the write replaces;
- `append_grid`, `rectilinear`, `dataarray` calendar grids, and a DataArray as a Dataset.

Each step imports only the steps below it, and none imports an executor
(import-linter contracts in ``pyproject.toml``). The plan, its publication,
commit and roll-back live in ``zarr3_backend.writes``; the executor running
the shard tasks (dask or Cubed) is picked from the data.
"""
