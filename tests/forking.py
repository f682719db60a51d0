"""Child processes for tests: a check run in a forked child, and the pid of a process that has exited."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable


def in_forked_child(check: Callable[[], bool]) -> bool:
    """Fork, run ``check`` in the child (where only the forking thread exists) and return its verdict.

    An exception in the child counts as ``False``; the child always exits at once.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            ok = check()
        finally:
            os.write(write, bytes([0 if ok else 1]))
            os._exit(0)
    os.close(write)
    try:
        return os.read(read, 1) == b"\x00"
    finally:
        os.close(read)
        os.waitpid(pid, 0)


def dead_pid() -> int:
    """The pid of a child process that has already exited (a lease or mark holder that is gone)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid
