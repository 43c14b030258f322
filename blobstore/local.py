"""A blob store in a local directory: `<root>/ab/cd/<64 hex>`, written crash-safely.

A write goes to a temp file in `<root>/.tmp/` (same filesystem, so the rename is atomic),
is fsynced, renamed over the final path with `os.replace`, and then the shard directory is
fsynced so that the rename itself survives a power loss. Directories created on the way are
made durable by fsyncing their parent. A reader therefore sees a whole object or none.
`put_many` takes up to `PUT_BATCH` objects through each step together (all written, all
fsynced, all renamed, their directories fsynced), so their renames share journal commits.
An object found in place is not written again, but its directory is fsynced before the
put returns: the writer that renamed it there may not have done so yet.

The writer holds an exclusive `flock` on its temp file from just after creating it until
after the rename, and `sweep_temp` removes only temp files it can lock itself, so a sweep
never takes a file from an upload in progress, however old the file or short the cutoff.
Locks die with their process, so a crashed writer's leftovers are swept.

All blocking filesystem work runs in worker threads (`asyncio.to_thread`).
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import fcntl
import os
import re
import secrets
import stat
import sys
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

from blobstore.base import BlobInfo
from blobstore.digest import check_digest, compute_digest, is_digest, sharded_path
from blobstore.errors import (
    BlobCorrupted,
    BlobNotFound,
    BlobStoreUnavailable,
    DigestMismatch,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator, Mapping

TEMP_DIR: Final = ".tmp"
# Stored objects never change; read-only files make an accidental in-place edit fail loudly.
_OBJECT_MODE: Final = 0o444
_SHARD_NAME: Final = re.compile(r"[0-9a-f]{2}")
# Objects the listing gathers per worker-thread hop (at least one middle shard each). A
# middle shard of a store under ~10 million objects holds a handful of objects, so one hop
# per middle shard spent most of a listing's time handing work to threads
# (docs/benchmarks.md, GC). The batch bounds the memory instead.
LIST_BATCH: Final = 1000
# Objects a put takes through each step together (temp files open at once).
PUT_BATCH: Final = 64
# A temp file: created here, never through a link, never inherited by a child process.
_TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class LocalBlobStore:
    """A `BlobStore` in a directory on the local filesystem.

    The root must exist before use (`ensure()` creates it): a store never creates its own
    root implicitly, so that a missing mount shows up as `BlobStoreUnavailable` rather than
    as blobs quietly written to the wrong disk. Filesystem errors are translated into
    `BlobStoreUnavailable`.
    """

    def __init__(self, root: Path | str) -> None:
        """Use the directory `root`; a relative root is made absolute now, once."""
        self._root = Path(root).absolute()
        self._tmp = self._root / TEMP_DIR
        self._root_str, self._tmp_str = str(self._root), str(self._tmp)
        # Directories this store has made durable (created or found, then fsynced the
        # parent). An optimisation only: a directory missing from the set costs one extra
        # fsync, never correctness.
        self._durable_dirs: set[str] = set()
        self._closed = False

    @property
    def url(self) -> str:
        """`file:///` and the absolute root."""
        return self._root.as_uri()

    @property
    def root(self) -> Path:
        """The absolute root directory."""
        return self._root

    async def put(self, digest: str, data: bytes) -> bool:
        """Verify `data` against `digest`, then store it durably unless already present."""
        digest = self._enter(digest)
        return await asyncio.to_thread(self._put, digest, data)

    async def put_many(
        self,
        blobs: Mapping[str, bytes],
        *,
        concurrency: int = 8,  # noqa: ARG002 - one worker-thread hop stores them all
    ) -> frozenset[str]:
        """Store every blob durably, all in one worker-thread hop; return the new ones.

        One hop instead of one per blob: a thread hand-off costs more client CPU than
        writing and fsyncing a small file.
        """
        entered = {self._enter(digest): data for digest, data in blobs.items()}
        return await asyncio.to_thread(self._put_many, entered)

    async def get(self, digest: str) -> bytes:
        """Read the object and verify that it still hashes to `digest`."""
        digest = self._enter(digest)
        return await asyncio.to_thread(self._get, digest)

    async def exists(self, digest: str) -> bool:
        """Return True if a regular file is stored under `digest` (not verified)."""
        return await self.stat(digest) is not None

    async def stat(self, digest: str) -> BlobInfo | None:
        """Size and modification time (UTC) of the object, or None."""
        digest = self._enter(digest)
        return await asyncio.to_thread(self._stat, digest)

    async def delete(self, digest: str) -> None:
        """Unlink the object; a missing object is not an error."""
        digest = self._enter(digest)
        await asyncio.to_thread(self._delete, digest)

    async def iter_digests(self) -> AsyncIterator[BlobInfo]:
        """Every object, in digest order; memory is bounded by one batch of the listing.

        Skips `.tmp` and anything that is not a regular file named by a valid digest in
        the shard that digest belongs to.
        """
        self._check_open()
        for top in await asyncio.to_thread(self._subshards, self._root, required=True):
            after: str | None = ""
            while after is not None:
                infos, after = await asyncio.to_thread(self._scan_batch, top, after)
                for info in infos:
                    yield info

    async def ensure(self) -> None:
        """Create the root and its temp directory (with parents), durably."""
        self._check_open()
        await asyncio.to_thread(self._ensure)

    async def check(self) -> None:
        """Raise `BlobStoreUnavailable` unless the root and temp directory are writable."""
        self._check_open()
        await asyncio.to_thread(self._check)

    async def close(self) -> None:
        """Refuse every later call. Worker threads belong to the event loop, not the store."""
        self._closed = True

    async def sweep_temp(self, older_than: datetime) -> int:
        """Remove abandoned temp files last modified before `older_than`; return how many.

        Temp files are left behind only by writers that crashed between creating and
        renaming them. A file whose writer is still at work is locked by it (`flock`) and
        skipped, whatever `older_than` says. `older_than` must be timezone-aware.
        """
        if older_than.tzinfo is None:
            raise ValueError("older_than must be timezone-aware")
        self._check_open()
        return await asyncio.to_thread(self._sweep_temp, older_than.timestamp())

    # ------------------------------------------------------------ worker-thread side

    def _put_many(self, blobs: Mapping[str, bytes]) -> frozenset[str]:
        for digest, data in blobs.items():  # a mismatch anywhere stores nothing
            actual = compute_digest(data)
            if actual != digest:
                raise DigestMismatch(digest, actual)
        items = list(blobs.items())
        new: set[str] = set()
        for start in range(0, len(items), PUT_BATCH):
            new |= self._put_batch(items[start : start + PUT_BATCH])
        return frozenset(new)

    def _put(self, digest: str, data: bytes) -> bool:
        return bool(self._put_many({digest: data}))

    def _put_batch(self, items: list[tuple[str, bytes]]) -> set[str]:
        """Store verified `items` durably, each step for the whole batch before the next.

        The shard directories missing are made (and their parents fsynced once each), every
        temp file is written (and its writeback started, `_start_writeback`), then each is
        fsynced, then each is renamed into place (still locked), then each shard directory
        is fsynced once. Each object goes through the same states as alone, so a crash
        leaves whole objects or temp files. Batched, the files' data, the directories and
        the renames reach the disk in the filesystem's first journal commits instead of one
        commit each (docs/blobstore.md).

        Written on plain `os` calls and string paths: with small objects, the work around
        the system calls (path objects, a file object and a context manager per object) cost
        as much client CPU as the calls themselves.
        """
        todo, present = self._plan_batch(items)
        staged: list[tuple[int, str]] = []  # (descriptor, temp path), in the order of `todo`
        placed: list[str] = []
        # A lone file is fsynced next: starting its writeback first would gain nothing.
        hint = _start_writeback if len(todo) > 1 else _no_hint
        try:
            for digest, data, _ in todo:
                try:
                    staged.append(self._temp_file(digest))
                    _write_all(staged[-1][0], data)
                    os.fchmod(staged[-1][0], _OBJECT_MODE)
                    hint(staged[-1][0])
                except OSError as exc:
                    raise self._unavailable("put", digest, exc) from exc
            self._place(todo, staged, placed, present)
        finally:
            for index, (fd, temp) in enumerate(staged):
                if index >= len(placed):
                    _unlink_quietly(temp)
                os.close(fd)  # drops the lock, after the rename or the unlink
        return {digest for digest, _, _ in todo[: len(placed)]}

    def _plan_batch(
        self, items: list[tuple[str, bytes]]
    ) -> tuple[list[tuple[str, bytes, str]], list[tuple[str, str]]]:
        """The objects to write (digest, bytes, path) and those in place (digest, path).

        Makes the shard directories the objects to write need.
        """
        self._require_root()
        root = self._root_str
        todo: list[tuple[str, bytes, str]] = []
        present: list[tuple[str, str]] = []
        for digest, data in items:
            path = f"{root}/{digest[:2]}/{digest[2:4]}/{digest}"
            try:
                existing = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                todo.append((digest, data, path))
                continue
            except OSError as exc:
                raise self._unavailable("put", digest, exc) from exc
            if stat.S_ISREG(existing.st_mode) and existing.st_size == len(data):
                present.append((digest, path))
            else:
                # A file of the wrong size was damaged behind our back; the bytes in hand
                # are verified, so replacing it is a repair.
                todo.append((digest, data, path))
        directories = [self._tmp_str, *(d for _, _, path in todo for d in _shard_dirs(path))]
        try:
            self._make_durable_dirs(directories)
        except OSError as exc:
            raise self._unavailable("put", todo[0][0] if todo else "a batch", exc) from exc
        return todo, present

    def _place(
        self,
        todo: list[tuple[str, bytes, str]],
        staged: list[tuple[int, str]],
        placed: list[str],
        present: list[tuple[str, str]],
    ) -> None:
        """Fsync every temp file, rename each into place (into `placed`), sync directories."""
        for (digest, _, _), (fd, _) in zip(todo, staged, strict=True):
            try:
                os.fsync(fd)
            except OSError as exc:
                raise self._unavailable("put", digest, exc) from exc
        try:
            for (digest, _, path), (_, temp) in zip(todo, staged, strict=True):
                try:
                    # Still under the temp file's lock: a sweep cannot take it before this.
                    os.replace(temp, path)  # noqa: PTH105 - string paths, see `_put_batch`
                except OSError as exc:
                    raise self._unavailable("put", digest, exc) from exc
                placed.append(path)
        finally:
            # Even after a failed rename: what is in place is made durable. A present
            # object's directory too: the writer that renamed it may not have synced it.
            in_place = [
                *((digest, path) for (digest, _, path), _ in zip(todo, placed, strict=False)),
                *present,
            ]
            directories = {path.rpartition("/")[0]: digest for digest, path in in_place}
            for directory, digest in directories.items():
                try:
                    _fsync_dir(directory)
                except OSError as exc:
                    raise self._unavailable("put", digest, exc) from exc

    def _temp_file(self, digest: str) -> tuple[int, str]:
        """A new temp file, open for writing and locked: its descriptor and path.

        The caller closes the descriptor, which drops the lock. A sweep may find the file
        between its creation and the `flock` (the only moment it is not locked) and remove
        it; then it has no link left once the lock is held, and another is made.
        """
        while True:
            name = f"{self._tmp_str}/{digest[:16]}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(name, _TEMP_FLAGS, 0o600)
            except FileExistsError:
                continue  # the name is taken: draw another
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if os.fstat(fd).st_nlink > 0:
                    return fd, name
            except BaseException:
                os.close(fd)
                _unlink_quietly(name)
                raise
            os.close(fd)

    def _make_durable_dirs(self, directories: list[str]) -> None:
        """Make each directory (parents listed before children) exist durably.

        Even when another writer created a directory, its entry may not be on disk yet;
        fsyncing its parent here means this writer never reports a blob as stored on the
        strength of someone else's unfinished fsync. Each parent is fsynced once, after
        every directory is made.
        """
        todo = [d for d in dict.fromkeys(directories) if d not in self._durable_dirs]
        for directory in todo:
            with suppress(FileExistsError):
                os.mkdir(directory)  # noqa: PTH102 - string paths, see `_put_batch`
        for parent in dict.fromkeys(d.rpartition("/")[0] for d in todo):
            _fsync_dir(parent)
        self._durable_dirs.update(todo)

    def _get(self, digest: str) -> bytes:
        path = self._root / sharded_path(digest)
        with self._translate_os_errors("get", digest):
            data = _read_regular(path)
            if data is None:
                self._require_root()
        if data is None:
            raise BlobNotFound(digest)
        actual = compute_digest(data)
        if actual != digest:
            raise BlobCorrupted(digest, actual)
        return data

    def _stat(self, digest: str) -> BlobInfo | None:
        path = self._root / sharded_path(digest)
        with self._translate_os_errors("stat", digest):
            st = _lstat_regular(path)
            if st is None:
                self._require_root()
                return None
        return BlobInfo(digest, st.st_size, datetime.fromtimestamp(st.st_mtime, UTC))

    def _delete(self, digest: str) -> None:
        path = self._root / sharded_path(digest)
        with self._translate_os_errors("delete", digest):
            try:
                path.unlink()
            except (FileNotFoundError, NotADirectoryError):
                self._require_root()
        # No directory fsync: if a crash undoes the unlink, the blob is an orphan again
        # and the next GC run deletes it again.

    def _subshards(self, directory: Path, *, required: bool = False) -> list[str]:
        with self._translate_os_errors("list", str(directory)):
            try:
                with os.scandir(directory) as entries:
                    names = [
                        entry.name
                        for entry in entries
                        if _is_shard_name(entry.name) and entry.is_dir(follow_symlinks=False)
                    ]
            except FileNotFoundError:
                if required:
                    self._require_root()
                # A shard emptied and removed while we listed its parent.
                return []
        return sorted(names)

    def _scan_batch(self, top: str, after: str) -> tuple[list[BlobInfo], str | None]:
        """The objects of `top`'s middle shards after `after`, until a batch is full.

        Returns them with the last middle shard scanned, or None once `top` is done.
        """
        infos: list[BlobInfo] = []
        for middle in self._subshards(self._root / top):
            if middle <= after:
                continue
            infos += self._scan_shard(top, middle)
            if len(infos) >= LIST_BATCH:
                return infos, middle
        return infos, None

    def _scan_shard(self, top: str, middle: str) -> list[BlobInfo]:
        infos: list[BlobInfo] = []
        with self._translate_os_errors("list", f"{top}/{middle}"):
            try:
                with os.scandir(self._root / top / middle) as entries:
                    for entry in entries:
                        name = entry.name
                        if not (is_digest(name) and name[:2] == top and name[2:4] == middle):
                            continue
                        try:
                            if not entry.is_file(follow_symlinks=False):
                                continue
                            st = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:
                            continue  # deleted while we listed
                        mtime = datetime.fromtimestamp(st.st_mtime, UTC)
                        infos.append(BlobInfo(name, st.st_size, mtime))
            except FileNotFoundError:
                return []
        infos.sort(key=lambda info: info.digest)
        return infos

    def _ensure(self) -> None:
        with self._translate_os_errors("ensure", str(self._root)):
            self._root.mkdir(parents=True, exist_ok=True)
            _fsync_dir(self._root.parent)
            self._durable_dirs.add(self._root_str)
            self._make_durable_dirs([self._tmp_str])

    def _check(self) -> None:
        self._require_root()
        for directory in (self._root, self._tmp):
            if not directory.is_dir():
                raise BlobStoreUnavailable(
                    f"{directory} is missing; create it with ensure() (`skillreg init` does)"
                )
            if not os.access(directory, os.W_OK | os.X_OK):
                raise BlobStoreUnavailable(f"{directory} is not writable")

    def _sweep_temp(self, cutoff: float) -> int:
        removed = 0
        with self._translate_os_errors("sweep", str(self._tmp)):
            self._require_root()
            try:
                with os.scandir(self._tmp) as entries:
                    files = [entry for entry in entries if entry.is_file(follow_symlinks=False)]
            except FileNotFoundError:
                return 0
            for entry in files:
                try:
                    if entry.stat(follow_symlinks=False).st_mtime >= cutoff:
                        continue
                    removed += _remove_if_abandoned(Path(entry.path))
                except FileNotFoundError:
                    continue  # its writer finished, or another sweeper was first
        return removed

    # ------------------------------------------------------------ shared

    def _enter(self, digest: str) -> str:
        digest = check_digest(digest)
        self._check_open()
        return digest

    def _check_open(self) -> None:
        if self._closed:
            raise BlobStoreUnavailable(f"{self.url} is closed")

    def _require_root(self) -> None:
        if not self._root.is_dir():
            raise BlobStoreUnavailable(
                f"{self._root} does not exist; create it with ensure() (`skillreg init` does)"
            )

    @contextmanager
    def _translate_os_errors(self, operation: str, subject: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise self._unavailable(operation, subject, exc) from exc

    def _unavailable(self, operation: str, subject: str, exc: OSError) -> BlobStoreUnavailable:
        return BlobStoreUnavailable(f"{operation} {subject} in {self._root}: {exc}")


def _is_shard_name(name: str) -> bool:
    return _SHARD_NAME.fullmatch(name) is not None


def _lstat_regular(path: Path) -> os.stat_result | None:
    """Return the stat of `path` if it is a regular file (a symlink or directory is absent)."""
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _read_regular(path: Path) -> bytes | None:
    """Return the bytes of `path` if it is a regular file, never following a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        return file.read()


def _remove_if_abandoned(path: Path) -> bool:
    """Unlink the temp file `path` unless a writer holds its lock; True if removed.

    The unlink happens under this sweeper's own lock on the file, and only if `path` still
    names the file that was locked: a writer renames its file before it unlocks it.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # an upload in progress
        locked = os.fstat(fd)
        current = path.lstat()
        if (current.st_dev, current.st_ino) != (locked.st_dev, locked.st_ino):
            return False
        path.unlink()
        return True
    finally:
        os.close(fd)


def _writeback_starter() -> Callable[[int], object]:
    """`sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)` where Linux offers it, else nothing.

    It starts the writeback of a file's dirty pages and returns without waiting. Given to
    every temp file of a batch before the first fsync, it lets the filesystem allocate and
    write all of them together: the first fsync's journal commit then carries every file of
    the batch, and the fsyncs after it find their data on its way or on disk. It is only a
    hint; each file is still fsynced, and an error of its writeback is the fsync's to
    report (docs/blobstore.md).
    """
    if not sys.platform.startswith("linux"):
        return _no_hint
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):  # pragma: no cover - a libc without it
        return _no_hint
    call.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    call.restype = ctypes.c_int

    def start(fd: int) -> object:
        return call(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)

    return start


def _no_hint(_fd: int) -> object:
    return None


# From <fcntl.h>: start writeback of the range's dirty pages, wait for nothing.
_SYNC_FILE_RANGE_WRITE: Final = 2
_start_writeback: Final = _writeback_starter()


def _fsync_dir(directory: Path | str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_quietly(path: Path | str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)  # noqa: PTH108 - string paths, see `_put_batch`


def _shard_dirs(path: str) -> tuple[str, str]:
    """The top and middle shard directories of an object's path, parents first."""
    middle = path.rpartition("/")[0]
    return middle.rpartition("/")[0], middle


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd` (a regular file may take it in parts)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
