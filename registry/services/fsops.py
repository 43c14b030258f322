"""Crash-safe file operations on directory descriptors that never follow a symbolic link.

Shared by the capabilities that write files (materialisation's targets and folders, the
signing key's file) and the CLI's lock files (`registry.api.folders`). The materialiser
writes into directories that agents (and people) may have edited: a
`scripts/` folder replaced by a link to `/etc`, a `SKILL.md` that is now a link to a
secret. Every operation here therefore works relative to an open directory descriptor,
opens each name with `O_NOFOLLOW`, and checks what it opened with `fstat`, so that a
planted link is seen as a link (and removed), never followed out of the target.

Writes are durable in the dulwich style: temp file (in a private staging directory on the
same filesystem), write, `fchmod`, `fsync`, then `rename` into place; the caller fsyncs the
directories it changed before it relies on them.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from blake3 import blake3

Step = Callable[[str], None]
"""A named point in a filesystem operation (failpoints for crash tests; a no-op otherwise)."""

DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK: Final = 1024 * 1024
DIR_MODE: Final = 0o755


def no_step(name: str) -> None:
    """The step hook outside tests."""


def file_mode(*, executable: bool) -> int:
    """The permission bits a materialised file gets (the executable bit is the package's)."""
    return 0o755 if executable else 0o644


def token() -> str:
    """A short random name component for temp files, trees and trash entries."""
    return secrets.token_hex(4)


@dataclass(frozen=True, slots=True)
class FileStamp:
    """A regular file as seen on disk: its content identity and the stat fields that move.

    `ino`, `mtime_ns`, `ctime_ns` and `size` form the stat cache key: if all four (and the
    mode) are unchanged, the content is taken to be unchanged without hashing. `ctime_ns`
    is in the key because it cannot be set back by a user (`touch -d` resets mtime only),
    and every content or mode change moves it.
    """

    digest: str
    size: int
    executable: bool
    ino: int
    mtime_ns: int
    ctime_ns: int

    def same_stat(self, st: os.stat_result) -> bool:
        """True if `st` describes the file this stamp was taken from, unchanged."""
        return (
            st.st_ino == self.ino
            and st.st_size == self.size
            and st.st_mtime_ns == self.mtime_ns
            and st.st_ctime_ns == self.ctime_ns
            and is_executable(st) == self.executable
        )

    @classmethod
    def of(cls, digest: str, st: os.stat_result) -> FileStamp:
        return cls(digest, st.st_size, is_executable(st), st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def digest(data: bytes) -> str:
    """The content digest of `data` (lower-case hex BLAKE3, as the blob store keys it)."""
    return blake3(data).hexdigest()


def is_executable(st: os.stat_result) -> bool:
    """The package's notion of executable: the owner's execute bit."""
    return bool(st.st_mode & stat.S_IXUSR)


def open_dir(name: str, *, dir_fd: int | None = None) -> int:
    """Open the directory `name` (relative to `dir_fd`), refusing a symbolic link (`ELOOP`)."""
    return os.open(name, DIR_FLAGS, dir_fd=dir_fd)


def ensure_dir(name: str, *, dir_fd: int) -> tuple[int, bool]:
    """Open the directory `name` under `dir_fd`, creating it first if missing.

    Returns the descriptor and whether this call created it (the caller then fsyncs the
    parent). A link or a file in its place raises `OSError` (`ELOOP`, `ENOTDIR`).
    """
    created = False
    try:
        os.mkdir(name, DIR_MODE, dir_fd=dir_fd)
        created = True
    except FileExistsError:
        pass
    return open_dir(name, dir_fd=dir_fd), created


def fsync_fd(fd: int) -> None:
    """Flush a file or directory descriptor to stable storage."""
    os.fsync(fd)


def names(dir_fd: int) -> list[str]:
    """The entry names of an open directory, sorted (descriptors, so not `Path.iterdir`)."""
    return sorted(os.listdir(dir_fd))


def lstat_at(name: str, dir_fd: int) -> os.stat_result | None:
    """`lstat` relative to `dir_fd`; None if nothing is there."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_link_at(name: str, dir_fd: int) -> str | None:
    """The text of the symbolic link `name`, or None if it is not a link."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return None
        raise


def write_file(
    stage_fd: int,
    dir_fd: int,
    name: str,
    data: bytes,
    *,
    executable: bool,
    step: Step = no_step,
) -> None:
    """Durably place `data` at `name` under `dir_fd`, replacing a file that is there.

    The bytes go to a temp file in the staging directory `stage_fd` (same filesystem),
    which is fsynced with its final mode and then renamed over `name` in one step. The
    caller fsyncs `dir_fd` afterwards. If `name` is a directory the rename fails
    (`EISDIR`); if it is a link, the link itself is replaced.
    """
    temp = f"{token()}.{token()}.tmp"
    try:
        create_file(temp, stage_fd, data, executable=executable)
        step("materialize.file_written")
        os.rename(temp, name, src_dir_fd=stage_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=stage_fd)
        raise
    step("materialize.file_placed")


def create_file(
    name: str, dir_fd: int, data: bytes, *, executable: bool, mode: int | None = None
) -> None:
    """Create `name` under `dir_fd` (it must not exist, nor be a link) with `data`, fsynced.

    The one way the registry writes a file's bytes: `write_file` (temp then rename over),
    `replace_file`, and a package folder written out (`folder.write_folder`) go through it.
    """
    fd = os.open(name, _WRITE_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        # fchmod, not the open mode: the umask must not strip the executable bit.
        os.fchmod(fd, file_mode(executable=executable) if mode is None else mode)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_path(directory: Path) -> None:
    """Make a directory's entries durable (a rename in it, say)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fsync_fd(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes) -> None:
    """Durably replace the file at `path` (a temp file beside it, renamed over, dir fsynced).

    A reader sees the old bytes or the new ones, never a part; a crash leaves the old file
    (and a temp file named `.<name>.<token>.tmp` beside it at most).
    """
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_file(parent, parent, path.name, data, executable=False)
        fsync_fd(parent)
    finally:
        os.close(parent)


def hash_file(name: str, dir_fd: int) -> tuple[str, os.stat_result] | None:
    """Hash the regular file `name` (streamed); None if it is not a regular file.

    The stat returned is taken from the open descriptor after reading, so it describes the
    bytes that were hashed unless the file is being written concurrently, which the stat
    cache then sees on the next look as a changed ctime.
    """
    fd = _open_regular(name, dir_fd)
    if fd is None:
        return None
    try:
        hasher = blake3()
        while chunk := os.read(fd, _CHUNK):
            hasher.update(chunk)
        return hasher.hexdigest(), os.fstat(fd)
    finally:
        os.close(fd)


def read_file(name: str, dir_fd: int, limit: int) -> tuple[bytes, os.stat_result] | None:
    """The bytes of the regular file `name`, at most `limit` + 1 of them; None if not regular."""
    fd = _open_regular(name, dir_fd)
    if fd is None:
        return None
    try:
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0 and (chunk := os.read(fd, min(_CHUNK, remaining))):
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks), os.fstat(fd)
    finally:
        os.close(fd)


def _open_regular(name: str, dir_fd: int) -> int | None:
    # O_NONBLOCK: opening a planted FIFO must not hang the reconciler.
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            return None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def set_mode(name: str, dir_fd: int, *, executable: bool) -> os.stat_result | None:
    """Set the mode of the regular file `name` (never a link's target); its new stat."""
    fd = _open_regular(name, dir_fd)
    if fd is None:
        return None
    try:
        os.fchmod(fd, file_mode(executable=executable))
        return os.fstat(fd)
    finally:
        os.close(fd)


def remove_entry(name: str, dir_fd: int, *, first: str | None = None) -> bool:
    """Remove `name` under `dir_fd` whatever it is, never following a link; True if removed.

    A directory is removed with `shutil.rmtree`, which on Linux walks by descriptor and
    unlinks links instead of following them. `first` names an entry of that directory to
    remove before anything else: trees drop `SKILL.md` first, so that a loader which still
    finds `SKILL.md` in a retired tree knows every sibling it read was still there.
    """
    st = lstat_at(name, dir_fd)
    if st is None:
        return False
    if not stat.S_ISDIR(st.st_mode):
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        return True
    if first is not None:
        with suppress(OSError):
            sub = open_dir(name, dir_fd=dir_fd)
            try:
                entry = lstat_at(first, sub)
                if entry is not None and not stat.S_ISDIR(entry.st_mode):
                    os.unlink(first, dir_fd=sub)
            finally:
                os.close(sub)
    shutil.rmtree(name, dir_fd=dir_fd)
    return True


def unlink_if_present(name: str, dir_fd: int) -> bool:
    """Unlink a file or link; False if nothing was there."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def write_small(stage_fd: int, dir_fd: int, name: str, data: bytes) -> None:
    """Durably replace a small bookkeeping file and fsync its directory."""
    write_file(stage_fd, dir_fd, name, data, executable=False)
    fsync_fd(dir_fd)


def read_small(name: str, dir_fd: int, limit: int = 16 * 1024 * 1024) -> bytes | None:
    """The bytes of a bookkeeping file, or None if it is missing (or not a regular file)."""
    found = read_file(name, dir_fd, limit)
    return None if found is None else found[0]
