"""``to_zarr3``: the translation of an xarray object into a write plan, one module per step, called by `planner`.

- `planner` the entry, `to_zarr3()`: checks the request, plans every group, hands the plan to ``zarr3_backend.writes``;
- `inputs` what is written of the input (a DataArray as a Dataset), and what identifies the request;
- `checks` the arguments, the variable names, appends and stored string lengths;
- `encodings` the user's ``encoding``, and each new array's metadata (chunks and shards included);
- `stored` the arrays already stored, and the encoding they were stored with;
- `region` where data lands in stored arrays: ``region=`` and appends;
- `times`, `time_values`, `packed` CF encoding checked against what the stored encoding gives back;
- `self_read` (with `graph_reads`) refuses chunked data reading what the write replaces;
- `append_grid`, `rectilinear` calendar grids.

Each step imports only the steps below it, and none imports an executor
(import-linter contracts in ``pyproject.toml``). The plan, the target's
checks, its publication, commit and roll-back live in ``zarr3_backend.writes``; the executor running
the shard tasks (dask or Cubed) is picked from the data.
"""
