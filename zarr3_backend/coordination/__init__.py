"""What a write coordinates with other writers and with its own failures, between the write API and `nodes`.

`records` is the one table of the keys and attributes the library keeps
beside ``zarr.json``; `lease` the host/pid lease (append lease, region
marks, convert's run record); `guards.write_guard` takes what one write
needs and releases it on every path; `unfinished`, `pending` and
`reservations` own the records an interrupted or deferred write leaves;
`task_gate` stops a failed Cubed write's tasks on this machine.
"""
