"""A store on the local file system, with direct ``os`` calls for speed.

Each key is a file under ``root`` (``"a/c/0/0"`` is ``root/a/c/0/0``).
Writes are atomic: the value goes to a temporary file in the target's
directory, then ``os.replace`` swaps it in, so a reader sees the old value or
the new one, never a mix. Temporary files are named ``.__z3tmp.<hex>``;
listings skip them and keys may not use that prefix.

>>> import tempfile
>>> store = LocalStore(tempfile.mkdtemp())
>>> store.set("a/zarr.json", b"{}")
>>> store.get("a/zarr.json"), store.list_dir("")
(b'{}', ([], ['a/']))
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress

from ..errors import InvalidKeyError, StoreError
from .base import ByteRange, Request, Store, Value, Versioned, validate_key, validate_prefix

#: Name prefix of in-flight temporary files; listings skip such names.
TMP_PREFIX = ".__z3tmp."

_POOL_THRESHOLD = 1 << 20  # once a value this large is seen, read the rest in threads
_POOL_WORKERS = 4
_WRITE_ATTEMPTS = 10
_pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool): a forked child makes its own
_pool_lock = threading.Lock()
_dir_lock = threading.Lock()  # orders creating directories + temp files against pruning empty ones


def _reader_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(_POOL_WORKERS, thread_name_prefix="zarr3-local"))
        return _pool[1]


def _pread_all(fd: int, length: int, offset: int) -> bytes:
    data = os.pread(fd, length, offset)
    if len(data) == length or not data:
        return data
    parts = [data]
    got = len(data)
    while got < length and (chunk := os.pread(fd, length - got, offset + got)):
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _read_file(path: str, byte_range: ByteRange | None) -> Versioned:
    """The bytes of ``path`` (or a range of them) and their generation; ``None`` if it is not a regular file.

    The generation (inode, size, mtime_ns) comes from ``fstat`` on the descriptor the bytes
    are read from: writes replace files by rename, so an open descriptor pins one version.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return Versioned(None)
    except OSError as exc:
        raise StoreError(f"could not read {path!r}: {exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Versioned(None)
        start, stop, _ = (byte_range or ByteRange(0)).slice().indices(st.st_size)
        data = _pread_all(fd, max(0, stop - start), start)
        return Versioned(data, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    except OSError as exc:
        raise StoreError(f"could not read {path!r}: {exc}") from exc
    finally:
        os.close(fd)


def _is_visible(name: str) -> bool:
    return not name.startswith(TMP_PREFIX)


class LocalStore(Store):
    """Files under a local directory ``root``; see the module docstring.

    Parameters
    ----------
    root : str or os.PathLike
        Directory holding the hierarchy (a path or ``file://`` URL); created on the first write.
    read_only : bool
        Refuse writes with :class:`~zarr3_backend.errors.ReadOnlyError`.
    """

    def __init__(self, root: str | os.PathLike[str], read_only: bool = False) -> None:
        self.root = os.path.abspath(os.fspath(root).removeprefix("file://"))
        self.read_only = read_only

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"LocalStore({self.root!r}{mode})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LocalStore):
            return NotImplemented
        return (self.root, self.read_only) == (other.root, other.read_only)

    def __hash__(self) -> int:
        return hash((LocalStore, self.root, self.read_only))

    @property
    def url(self) -> str:
        """``file://`` URL of the root."""
        return "file://" + self.root

    def _path(self, key: str) -> str:
        validate_key(key)
        if any(part.startswith(TMP_PREFIX) for part in key.split("/")):
            raise InvalidKeyError(f"store key {key!r}: segments starting with {TMP_PREFIX!r} are reserved")
        return os.path.join(self.root, *key.split("/"))

    def _dir(self, prefix: str) -> str:
        validate_prefix(prefix)
        return os.path.join(self.root, *prefix.split("/")[:-1])

    def get_many(self, requests: Sequence[Request]) -> list[bytes | None]:
        return [read.value for read in self.get_many_versioned(requests)]

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        """Read sequentially; once a value of 1 MiB or more shows up, read the rest in threads.

        Generations are ``(st_dev, st_ino, st_size, st_mtime_ns)`` of the file read: free.
        """
        jobs = [(self._path(key), byte_range) for key, byte_range in requests]
        out: list[Versioned] = []
        for index, (path, byte_range) in enumerate(jobs):
            read = _read_file(path, byte_range)
            out.append(read)
            value = read.value
            if value is not None and len(value) >= _POOL_THRESHOLD and index + 2 < len(jobs):
                rest = jobs[index + 1 :]
                out.extend(_reader_pool().map(_read_file, *zip(*rest, strict=True)))
                break
        return out

    def exists(self, key: str) -> bool:
        return os.path.isfile(self._path(key))

    def set(self, key: str, value: Value) -> None:
        self._check_writable()
        path = self._path(key)
        try:
            self._write_atomic(path, value)
        except OSError as exc:
            raise StoreError(f"could not write key {key!r} to {self.root!r}: {exc}") from exc

    def _write_atomic(self, path: str, value: Value) -> None:
        directory = os.path.dirname(path)
        tmp = os.path.join(directory, TMP_PREFIX + uuid.uuid4().hex)
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                with _dir_lock:  # once the temp file exists, pruning keeps the directory
                    os.makedirs(directory, exist_ok=True)
                    file = open(tmp, "xb")  # noqa: SIM115 - closed just below, outside the lock
                with file:
                    if isinstance(value, list | tuple):
                        file.writelines(value)  # pieces go to the file as they are, never joined
                    else:
                        file.write(value)
                    file.flush()  # then stamp a full-resolution mtime: part of the generation readers check
                    now = time.time_ns()
                    os.utime(file.fileno(), ns=(now, now))
                os.replace(tmp, path)
                return
            except (FileNotFoundError, FileExistsError):  # raced with another process's prune: retry
                _remove_quietly(tmp)
                if attempt == _WRITE_ATTEMPTS - 1:
                    raise
            except BaseException:
                _remove_quietly(tmp)
                raise

    def delete(self, key: str) -> None:
        self._check_writable()
        path = self._path(key)
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return
        except OSError as exc:
            raise StoreError(f"could not delete key {key!r} from {self.root!r}: {exc}") from exc
        self._prune(os.path.dirname(path))

    def delete_prefix(self, prefix: str) -> None:
        self._check_writable()
        directory = self._dir(prefix)
        if directory == self.root:
            super().delete_prefix(prefix)
            return
        with suppress(FileNotFoundError, NotADirectoryError):
            shutil.rmtree(directory)
        self._prune(os.path.dirname(directory))

    def _prune(self, directory: str) -> None:
        """Remove empty directories from ``directory`` up to (not including) the root."""
        with _dir_lock:
            while directory != self.root and directory.startswith(self.root + os.sep):
                try:
                    os.rmdir(directory)
                except OSError:
                    return
                directory = os.path.dirname(directory)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        directory = self._dir(prefix)
        for dirpath, dirnames, filenames in os.walk(directory):
            dirnames.sort()
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            base = "" if rel == "." else rel + "/"
            yield from (base + name for name in sorted(filenames) if _is_visible(name))

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        directory = self._dir(prefix)
        keys: list[str] = []
        prefixes: list[str] = []
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return keys, prefixes
        for entry in entries:
            if entry.is_dir():
                prefixes.append(f"{prefix}{entry.name}/")
            elif _is_visible(entry.name):
                keys.append(prefix + entry.name)
        return keys, prefixes


def _remove_quietly(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)
