"""A gate over one write's tasks on this machine: once closed, none starts writing; those writing are awaited.

A Cubed plan raises on its first failed task while others still run; the
write's roll-back closes the gate first, so no shard lands after it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import WriteError
from .lease import holder_gone


@dataclass(frozen=True)
class TaskGate:
    """The shard tasks of one Cubed write, on this machine: once `close()` returns, none writes (picklable).

    A task marks itself running in ``directory`` before it checks the gate,
    and `close()` marks the gate closed before it waits for the running
    marks to go, so a task either sees the gate closed and writes nothing,
    or is waited for. A mark whose process has died is not waited for.
    """

    directory: str

    @contextlib.contextmanager
    def task(self) -> Iterator[None]:
        """Run the body as a task of this write; `WriteError` (nothing written) once the gate is closed."""
        mark = os.path.join(self.directory, f"running-{os.getpid()}-{uuid.uuid4().hex}")
        with open(mark, "x"):
            pass
        try:
            if os.path.exists(os.path.join(self.directory, "closed")):
                raise WriteError(
                    "to_zarr3: the Cubed write failed; its shard tasks not yet writing write nothing"
                )
            yield
        finally:
            os.remove(mark)

    def close(self) -> None:
        """Refuse tasks not yet writing, and return once every task writing has ended."""
        with open(os.path.join(self.directory, "closed"), "x"):
            pass
        while any(
            not _gone(int(n.split("-")[1])) for n in os.listdir(self.directory) if n.startswith("running-")
        ):
            time.sleep(0.01)


def _gone(pid: int) -> bool:
    return holder_gone({"host": socket.gethostname(), "pid": pid})
