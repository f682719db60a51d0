"""A store on the local file system, with direct ``os`` calls for speed.

Each key is a file under ``root`` (``"a/c/0/0"`` is ``root/a/c/0/0``).
Writes are atomic: the value goes to a temporary file in the target's
directory, then ``os.replace`` swaps it in, so a reader sees the old value or
the new one, never a mix. Temporary files are named ``.__z3tmp.<hex>``;
listings skip them, keys may not use that prefix, and erasing a prefix
(overwrites) removes them too, so a killed writer leaves nothing behind.

Nothing outside ``root`` is ever read, written, listed or deleted: a key
whose path leads through a symbolic link out of the root raises
`InvalidKeyError` (links that stay inside the
root are followed).

>>> import tempfile
>>> store = LocalStore(tempfile.mkdtemp())
>>> store.set("a/zarr.json", b"{}")
>>> store.get("a/zarr.json"), store.list_dir("")
(b'{}', ([], ['a/']))
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import suppress

from ..errors import InvalidKeyError, StoreError
from ..runtime import each_request
from .base import (
    TMP_PREFIX,
    ByteRange,
    Request,
    Store,
    Value,
    Versioned,
    is_temporary,
    validate_key,
    validate_prefix,
)

_MISSING = Versioned(None)
_WHOLE = ByteRange(0)
_THREADED_THRESHOLD = 1 << 20  # once a value this large is seen, read the rest in threads
_READER_THREADS = 4
_WRITE_ATTEMPTS = 10
_dir_lock = threading.Lock()  # orders creating directories + temp files against pruning empty ones
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CHECKED_DIRS_LIMIT = 4096  # directories known to resolve inside the root, remembered per store


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


def _parent(path: str) -> str:
    """``os.path.dirname`` of a normalised absolute path (no trailing or doubled separators), in one call.

    >>> _parent("/a/b"), _parent("/a")
    ('/a', '/')
    """
    return path.rpartition(os.sep)[0] or os.sep


def _read_file(path: str, byte_ranges: Sequence[ByteRange | None]) -> list[Versioned]:
    """The bytes of ``path`` (or ranges of them) and their generation; ``None`` if it is not a regular file.

    Every range is read from one open descriptor, so all come from one version of the file. The
    generation (device, inode, size, mtime_ns, ctime_ns) comes from ``fstat`` on that descriptor:
    writes replace files by rename, so an open descriptor pins one version.
    ``ctime`` catches what the rest cannot: an in-place, same-size rewrite whose mtime was set back
    (``cp -p``, ``rsync --inplace -t``); no user call sets ctime, and setting mtime updates it.
    A symbolic link as the last component is not followed (the store checks
    such links before reading through them).
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return [_MISSING] * len(byte_ranges)
    except OSError as exc:
        raise StoreError(f"could not read {path!r}: {exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return [_MISSING] * len(byte_ranges)
        generation = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        out = []
        for byte_range in byte_ranges:
            start, stop, _ = (byte_range or _WHOLE).slice().indices(st.st_size)
            out.append(Versioned(_pread_all(fd, max(0, stop - start), start), generation))
        return out
    except OSError as exc:
        raise StoreError(f"could not read {path!r}: {exc}") from exc
    finally:
        os.close(fd)


class LocalStore(Store):
    """Files under a local directory ``root``; see the module docstring.

    Parameters
    ----------
    root : str or os.PathLike
        Directory holding the hierarchy (a path or ``file://`` URL); created on the first write.
    read_only : bool
        Refuse writes with `ReadOnlyError`.
    """

    versioned_reads = True

    def __init__(self, root: str | os.PathLike[str], read_only: bool = False) -> None:
        self.root = os.path.abspath(os.fspath(root).removeprefix("file://"))
        self.read_only = read_only
        self._checked_dirs: set[str] = set()

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

    @property
    def location(self) -> str:
        """The ``file://`` URL of the root with symbolic links resolved: one location for every spelling of it."""
        return "file://" + os.path.realpath(self.root)

    def __getstate__(self) -> dict[str, object]:
        return {name: value for name, value in vars(self).items() if name != "_checked_dirs"}

    def __setstate__(self, state: dict[str, object]) -> None:
        vars(self).update(state)
        self._checked_dirs = set()  # resolved again where it is unpickled

    def _path(self, key: str) -> str:
        """The file of ``key``; its directory is checked to resolve inside the root."""
        return self._located(key)[0]

    def _located(self, key: str) -> tuple[str, bool]:
        """The file of ``key`` and whether its directory exists; the directory is checked to resolve inside the root."""
        validate_key(key)
        if TMP_PREFIX in key and any(is_temporary(part) for part in key.split("/")):
            raise InvalidKeyError(f"store key {key!r}: segments starting with {TMP_PREFIX!r} are reserved")
        # a valid key has plain segments only: joined as they are, as os.path.join would
        path = self.root + os.sep + (key if os.sep == "/" else key.replace("/", os.sep))
        return path, self._check_inside(_parent(path), key)

    def _dir(self, prefix: str) -> str:
        validate_prefix(prefix)
        directory = os.path.join(self.root, *prefix.split("/")[:-1])
        self._check_inside(directory, prefix)
        return directory

    def _check_inside(self, path: str, key: str) -> bool:
        """Raise `InvalidKeyError` if ``path`` resolves (through symbolic links) outside the root; return whether it exists.

        Walks up to the nearest directory known to resolve inside, then ``lstat``s each component
        below it, nearest the root first: a missing one ends the walk (nothing under it can lead
        anywhere), a symbolic link is resolved in full. A missing shard's directory costs one ``lstat``.
        """
        checked = self._checked_dirs
        if path in checked or path == self.root:
            return True
        if not path.startswith(self.root + os.sep):
            self._check_real(path, key)
            return os.path.lexists(path)
        below = [path]  # the components not yet known to resolve inside, deepest first
        while (parent := _parent(below[-1])) not in checked and parent != self.root:
            below.append(parent)
        for component in reversed(below):
            try:
                mode = os.lstat(component).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return False
            except OSError as exc:  # a name too long for the file system exists nowhere (as realpath found)
                if exc.errno != errno.ENAMETOOLONG:
                    raise
                return False
            if stat.S_ISLNK(mode):
                self._check_real(component, key)
                is_directory = os.path.isdir(component)
            else:
                is_directory = stat.S_ISDIR(mode)
            if is_directory:  # only existing directories stay resolved
                if len(checked) >= _CHECKED_DIRS_LIMIT:
                    checked.clear()
                checked.add(component)
        return True

    def _check_real(self, path: str, key: str) -> None:
        """Raise `InvalidKeyError` if the real path of ``path`` is outside the root's real path."""
        real_root = os.path.realpath(self.root)
        real = os.path.realpath(path)
        if real != real_root and not real.startswith(real_root + os.sep):
            raise InvalidKeyError(
                f"store key {key!r} leads through a symbolic link to {real!r}, outside the store root "
                f"{self.root!r}; refusing to read, write, list or delete there"
            )

    def _read(
        self, key: str, located: tuple[str, bool], byte_ranges: list[ByteRange | None]
    ) -> list[Versioned]:
        """`_read_file()` of ``key`` (`_located` there), following a final symbolic link only if it resolves
        inside the root. A key whose directory does not exist is missing without trying to open it.
        """
        path, directory_exists = located
        if not directory_exists:
            return [_MISSING] * len(byte_ranges)
        try:
            return _read_file(path, byte_ranges)
        except StoreError as exc:
            if not (isinstance(exc.__cause__, OSError) and exc.__cause__.errno == errno.ELOOP):
                raise
        self._check_inside(path, key)
        return _read_file(os.path.realpath(path), byte_ranges)

    def get_many_versioned(self, requests: Sequence[Request]) -> list[Versioned]:
        """Read sequentially; once a value of 1 MiB or more shows up, read the rest in threads.

        The requests of one key are read through one open file (a shard's index and the chunks it
        locates, in one round). Generations are ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)``
        of the file read: free.
        """
        by_key: dict[str, list[int]] = {}
        for position, (key, _) in enumerate(requests):
            by_key.setdefault(key, []).append(position)
        jobs = [
            (key, self._located(key), [requests[p][1] for p in positions])
            for key, positions in by_key.items()
        ]
        reads: list[list[Versioned]] = []
        for index, job in enumerate(jobs):
            reads.append(self._read(*job))
            large = any(
                read.value is not None and len(read.value) >= _THREADED_THRESHOLD for read in reads[-1]
            )
            if large and index + 2 < len(jobs):
                reads.extend(each_request(lambda job: self._read(*job), jobs[index + 1 :], _READER_THREADS))
                break
        out: list[Versioned] = [_MISSING] * len(requests)
        for positions, values in zip(by_key.values(), reads):
            for position, value in zip(positions, values):
                out[position] = value
        return out

    def exists(self, key: str) -> bool:
        path = self._path(key)
        if os.path.islink(path):
            self._check_inside(path, key)
        return os.path.isfile(path)

    def set(self, key: str, value: Value) -> None:
        self._check_writable()
        path = self._path(key)  # a link as the last component is replaced itself, never written through
        try:
            self._write_atomic(path, value)
        except OSError as exc:
            raise StoreError(f"could not write key {key!r} to {self.root!r}: {exc}") from exc

    @property
    def atomic_create(self) -> bool:
        return True

    def create(self, key: str, value: Value) -> bool:
        """The file is written in full under a temporary name, then hard-linked into place, which fails if one exists."""
        self._check_writable()
        path = self._path(key)
        try:
            return self._write_atomic(path, value, replace=False)
        except OSError as exc:
            raise StoreError(f"could not create key {key!r} in {self.root!r}: {exc}") from exc

    def _write_atomic(self, path: str, value: Value, *, replace: bool = True) -> bool:
        """Write ``value`` to a temporary file, then move it to ``path`` (``replace=False``: only if nothing is there)."""
        directory = os.path.dirname(path)
        tmp = os.path.join(directory, TMP_PREFIX + uuid.uuid4().hex)
        attempt = 0
        while True:
            attempt += 1
            try:
                with _dir_lock:  # once the temp file exists, pruning keeps the directory
                    os.makedirs(directory, exist_ok=True)
                    file = open(tmp, "xb")  # noqa: SIM115 - closed just below, outside the lock
                with file:
                    if isinstance(value, bytes | bytearray | memoryview):
                        file.write(value)
                    else:
                        file.writelines(value)  # pieces go to the file as they are, never joined
                    file.flush()  # then stamp a full-resolution mtime: part of the generation readers check
                    now = time.time_ns()
                    os.utime(file.fileno(), ns=(now, now))
                if replace:
                    os.replace(tmp, path)
                    return True
                try:
                    os.link(tmp, path)  # fails, atomically, if path exists
                except FileExistsError:
                    return False
                finally:
                    _remove_quietly(tmp)
                return True
            except (FileNotFoundError, FileExistsError):  # raced with another process's prune: retry
                _remove_quietly(tmp)
                if attempt == _WRITE_ATTEMPTS:
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
        """Erase every key under ``prefix``, orphaned temporary files included; links are removed, not followed."""
        self._check_writable()
        directory = self._dir(prefix)
        self._checked_dirs.clear()
        if directory == self.root:
            self._erase_root()
            return
        if os.path.islink(directory):
            os.unlink(directory)
        else:
            with suppress(FileNotFoundError, NotADirectoryError):
                shutil.rmtree(directory)
        self._prune(os.path.dirname(directory))

    def _erase_root(self) -> None:
        """Remove everything below the root but the root directory itself."""
        try:
            entries = list(os.scandir(self.root))
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                with suppress(FileNotFoundError):
                    shutil.rmtree(entry.path)
            else:
                with suppress(FileNotFoundError):
                    os.unlink(entry.path)

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
        """Every key below ``prefix``: a directory's files (sorted), then each subdirectory's (sorted), like
        ``os.walk`` (symlinked directories are not entered), keys built by joining names as it goes."""
        stack = [(self._dir(prefix), prefix)]
        while stack:
            directory, base = stack.pop()
            try:
                entries = sorted(os.scandir(directory), key=_name)
            except OSError:  # gone meanwhile, or not a directory: nothing below it, as os.walk
                continue
            below = []
            for entry in entries:
                if _is_dir(entry):
                    if not entry.is_symlink():
                        below.append((entry.path, f"{base}{entry.name}/"))
                elif not is_temporary(entry.name):
                    yield base + entry.name
            stack.extend(reversed(below))

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        directory = self._dir(prefix)
        keys: list[str] = []
        prefixes: list[str] = []
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return keys, prefixes
        except OSError as exc:
            raise StoreError(f"could not list prefix {prefix!r} of {self.root!r}: {exc}") from exc
        for entry in entries:
            if entry.is_dir():
                prefixes.append(f"{prefix}{entry.name}/")
            elif not is_temporary(entry.name):
                keys.append(prefix + entry.name)
        return keys, prefixes


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # as os.walk: an entry that cannot be inspected is not a directory
        return False


def _remove_quietly(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)
