"""Reading a skill folder into a package, and writing a package out to a folder.

Reading keeps executable bits, skips `ALWAYS_IGNORED` (`.git/`, OS, Python and editor
leftovers) and the patterns of a `.skillregignore` file
(gitignore-like: `name`, `*.tmp`, `dir/`, `/rooted`, `**` segments) and refuses symlinks
and special files instead of following them: a package is regular files only. The ignore
rules are applied first, so an ignored link is skipped like any ignored entry.

A folder is input from outside, and it may change while it is read. So the reader walks
it by descriptors: each folder is opened relative to its parent's descriptor, each file
relative to its folder's, always with `O_NOFOLLOW` (a link swapped in is refused, never
followed), files also with `O_NONBLOCK` (a FIFO swapped in cannot block the read), and
what an entry is, and how large, is decided by `fstat` on the open descriptor, not by an
earlier look at its name. No full path is built, so a deep tree cannot overflow
`PATH_MAX`; the walk keeps its own stack, so it cannot overflow Python's. A folder deeper
than the depth limit is refused before it is opened, and a file is read to at most its
size limit plus one byte. Whatever cannot be read, a folder included, is refused: a
package is never published with files missing. Every refusal is a `PathRejected` or a
`LimitExceeded` naming the package path and the rule (docs/package-format.md).

Writing builds the package in a new sibling folder and renames it into place once every
file is written and synced, so a failure part way (a full disk) leaves the target as it
was and removes the partial copy: a `SKILL.md` is never left without its siblings.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Final

from registry.domain.limits import Limits
from registry.domain.model import PackageFile
from registry.domain.paths import RULE_TOO_DEEP
from registry.errors import LimitExceeded, PathRejected
from registry.services.fsops import create_file

IGNORE_FILE = ".skillregignore"
# Skipped in every folder, before a `.skillregignore`'s patterns: what version control,
# operating systems, Python and editors leave beside the files a person wrote. Publishing
# them would make a package differ by machine (and `*~`, `*.swp` can hold unsaved drafts).
ALWAYS_IGNORED = (
    ".git/",
    ".DS_Store",
    "Thumbs.db",
    "__pycache__/",
    "*.pyc",
    "*.swp",
    "*~",
)
# A folder with far more entries than any package may hold is refused while walking,
# before its files are read.
_WALK_ENTRY_LIMIT = 10_000

RULE_UNREADABLE: Final = "unreadable"
RULE_SYMLINK: Final = "symlink"
RULE_SPECIAL_FILE: Final = "special_file"
RULE_NOT_UTF8: Final = "not_utf8"
RULE_NOT_A_DIRECTORY: Final = "not_a_directory"
RULE_NOT_EMPTY: Final = "not_empty"
RULE_ESCAPES_TARGET: Final = "escapes_target"

_DIRECTORY: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NOCTTY: a terminal device swapped in is not made the process's controlling terminal.
_FILE: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK: Final = 1024 * 1024


class IgnoreRules:
    """gitignore-like patterns, matched against package-relative POSIX paths."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self._rules: list[tuple[str, bool, bool]] = []
        for raw in patterns:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            dir_only = line.endswith("/")
            rooted = line.startswith("/")
            self._rules.append((line.strip("/"), dir_only, rooted))

    def ignored(self, rel: str, *, is_dir: bool) -> bool:
        parts = PurePosixPath(rel).parts
        for pattern, dir_only, rooted in self._rules:
            if dir_only and not is_dir:
                continue
            if "/" in pattern or rooted:
                if _match_path(pattern, rel):
                    return True
            elif fnmatchcase(parts[-1], pattern):
                return True
        return False


def _match_path(pattern: str, rel: str) -> bool:
    if "**" in pattern:
        return fnmatchcase(rel, pattern.replace("**/", "*").replace("/**", "/*"))
    return fnmatchcase(rel, pattern)


def read_folder(
    root: Path | str, *, limits: Limits | None = None, skipped: list[str] | None = None
) -> dict[str, PackageFile]:
    """Read a skill folder into `{relative posix path: PackageFile}`.

    `limits` (the documented defaults if None) bounds the walk: the number of files, the
    bytes of each and of all, and the depth of folders; pass the configured ones
    (`Settings.limits()`). `root` itself may be a link to a folder; nothing inside it may be.
    `skipped`, if given, receives each ignored entry's path (a folder's with a final `/`,
    its contents unread), in the order of the walk.
    """
    root = Path(root)
    limits = limits or Limits()
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise PathRejected(
            str(root), RULE_NOT_A_DIRECTORY, "the package must be a folder"
        ) from None
    except OSError as exc:
        raise PathRejected(str(root), RULE_UNREADABLE, _reason(exc)) from None
    try:
        return _Walk(limits, skipped=skipped if skipped is not None else []).read(root_fd)
    finally:
        os.close(root_fd)


@dataclass
class _Folder:
    """A folder being walked: its package path, descriptor and the entries still to see."""

    rel: str
    fd: int
    entries: Iterator[tuple[str, int]]


@dataclass
class _Walk:
    limits: Limits
    skipped: list[str] = field(default_factory=list)
    files: dict[str, PackageFile] = field(default_factory=dict)
    seen: int = 0
    total: int = 0

    def read(self, root_fd: int) -> dict[str, PackageFile]:
        rules = self._ignore_rules(root_fd)
        # Depth-first with an explicit stack: one open descriptor per level, at most
        # `max_depth` + 1 of them, since a deeper folder is refused before it is opened.
        stack = [_Folder("", os.dup(root_fd), iter(()))]
        try:
            stack[0].entries = self._list(stack[0])
            while stack:
                folder = stack[-1]
                entry = next(folder.entries, None)
                if entry is None:
                    os.close(stack.pop().fd)
                    continue
                name, kind = entry
                rel = _join(folder.rel, name)
                if kind == stat.S_IFLNK:
                    is_dir = _points_to_folder(folder.fd, name)
                else:
                    is_dir = kind == stat.S_IFDIR
                if rules.ignored(rel, is_dir=is_dir):
                    self.skipped.append(f"{rel}/" if is_dir else rel)
                    continue
                if kind == stat.S_IFLNK:
                    raise PathRejected(rel, RULE_SYMLINK, "symbolic links are not packaged")
                if kind == stat.S_IFDIR:
                    stack.append(self._enter(folder.fd, name, rel))
                elif kind == stat.S_IFREG:
                    self._add(rel, self._read_file(folder.fd, name, rel))
                else:
                    raise PathRejected(rel, RULE_SPECIAL_FILE, "only regular files are packaged")
        finally:
            for folder in stack:
                os.close(folder.fd)
        return self.files

    def _ignore_rules(self, root_fd: int) -> IgnoreRules:
        try:
            os.stat(IGNORE_FILE, dir_fd=root_fd, follow_symlinks=False)
        except FileNotFoundError:
            return IgnoreRules(ALWAYS_IGNORED)
        except OSError as exc:
            raise PathRejected(IGNORE_FILE, RULE_UNREADABLE, _reason(exc)) from None
        try:
            file = self._read_file(root_fd, IGNORE_FILE, IGNORE_FILE)
        except PathRejected as exc:
            if exc.rule != RULE_SPECIAL_FILE:
                raise
            # A folder of that name is walked like any other; a FIFO is refused there.
            return IgnoreRules(ALWAYS_IGNORED)
        try:
            text = file.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PathRejected(
                IGNORE_FILE, RULE_NOT_UTF8, f"byte {exc.start} is not UTF-8"
            ) from None
        return IgnoreRules([*ALWAYS_IGNORED, *text.splitlines()])

    def _list(self, folder: _Folder) -> Iterator[tuple[str, int]]:
        """The folder's entries, sorted, as (name, file type from the listing)."""
        entries: list[tuple[str, int]] = []
        try:
            with os.scandir(folder.fd) as listing:
                for entry in listing:
                    self.seen += 1
                    if self.seen > _WALK_ENTRY_LIMIT:
                        raise LimitExceeded("max_files", _WALK_ENTRY_LIMIT, self.seen)
                    entries.append((entry.name, _kind(entry)))
        except OSError as exc:
            raise PathRejected(folder.rel or ".", RULE_UNREADABLE, _reason(exc)) from None
        return iter(sorted(entries))

    def _enter(self, parent_fd: int, name: str, rel: str) -> _Folder:
        depth = rel.count("/") + 1
        if depth > self.limits.max_depth:
            raise PathRejected(
                rel,
                RULE_TOO_DEEP,
                f"a folder {depth} segments deep, at most {self.limits.max_depth} allowed",
            )
        try:
            fd = os.open(name, _DIRECTORY, dir_fd=parent_fd)
        except OSError as exc:
            raise _refusal(rel, exc) from None
        folder = _Folder(rel, fd, iter(()))
        try:
            folder.entries = self._list(folder)
        except BaseException:
            os.close(fd)
            raise
        return folder

    def _read_file(self, dir_fd: int, name: str, rel: str) -> PackageFile:
        limit = self.limits.max_file_bytes
        try:
            fd = os.open(name, _FILE, dir_fd=dir_fd)
        except OSError as exc:
            raise _refusal(rel, exc) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise PathRejected(rel, RULE_SPECIAL_FILE, "only regular files are packaged")
            if info.st_size > limit:
                raise LimitExceeded("max_file_bytes", limit, info.st_size, path=rel)
            # Read one byte past the limit: a file that grew since `fstat` is caught too.
            data = _read_at_most(fd, limit + 1)
        except OSError as exc:
            raise PathRejected(rel, RULE_UNREADABLE, _reason(exc)) from None
        finally:
            os.close(fd)
        if len(data) > limit:
            raise LimitExceeded("max_file_bytes", limit, max(len(data), info.st_size), path=rel)
        return PackageFile(data, executable=bool(info.st_mode & stat.S_IXUSR))

    def _add(self, rel: str, file: PackageFile) -> None:
        self.files[rel] = file
        if len(self.files) > self.limits.max_files:
            raise LimitExceeded("max_files", self.limits.max_files, len(self.files))
        self.total += len(file.data)
        if self.total > self.limits.max_package_bytes:
            raise LimitExceeded("max_package_bytes", self.limits.max_package_bytes, self.total)


def _kind(entry: os.DirEntry[str]) -> int:
    """The entry's file type as the listing gives it (`S_IFLNK` for a link, never followed)."""
    if entry.is_symlink():
        return stat.S_IFLNK
    if entry.is_dir(follow_symlinks=False):
        return stat.S_IFDIR
    if entry.is_file(follow_symlinks=False):
        return stat.S_IFREG
    return stat.S_IFIFO  # any other kind: refused as a special file


def _points_to_folder(dir_fd: int, name: str) -> bool:
    """Whether the link `name` leads to a folder (for `dir/` ignore patterns; not read)."""
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _read_at_most(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining > 0:
        chunk = os.read(fd, min(remaining, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _refusal(rel: str, exc: OSError) -> PathRejected:
    """The refusal for an entry that could not be opened."""
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link: it was swapped in after listing
        return PathRejected(rel, RULE_SYMLINK, "symbolic links are not packaged")
    if exc.errno in (errno.ENXIO, errno.ENODEV):  # a socket or a device without a driver
        return PathRejected(rel, RULE_SPECIAL_FILE, "only regular files are packaged")
    return PathRejected(rel, RULE_UNREADABLE, _reason(exc))


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _join(rel_dir: str, name: str) -> str:
    return f"{rel_dir}/{name}" if rel_dir else name


# ---------------------------------------------------------------- writing


def write_folder(target: Path | str, files: Mapping[str, PackageFile]) -> None:
    """Write a package into `target` (which must be empty or missing), keeping modes.

    The files go into a new hidden sibling of `target`, each written, given its mode and
    synced; the sibling is then renamed onto `target` (a missing one, or an empty folder,
    which the rename replaces). On any failure the sibling is removed and `target` is as
    it was. Links in `target` are resolved first: a link to a folder is written through.
    """
    plan = [(_segments(rel), file) for rel, file in sorted(files.items())]
    target = Path(target).resolve()
    _check_missing_or_empty(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    parent_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        temp = _make_sibling(parent_fd)
        try:
            _write_tree(parent_fd, temp, plan)
            _rename_into_place(parent_fd, temp, target)
        except BaseException:
            shutil.rmtree(temp, dir_fd=parent_fd, ignore_errors=True)
            raise
        os.fsync(parent_fd)
    finally:
        os.close(parent_fd)


def _segments(rel: str) -> list[str]:
    segments = rel.split("/")
    if rel.startswith("/") or any(s in ("", ".", "..") for s in segments):
        raise PathRejected(rel, RULE_ESCAPES_TARGET, "the path leaves the output folder")
    return segments


def _check_missing_or_empty(target: Path) -> None:
    try:
        with os.scandir(target) as listing:
            empty = next(listing, None) is None
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise PathRejected(
            str(target), RULE_NOT_A_DIRECTORY, "the output must be a folder"
        ) from None
    if not empty:
        raise PathRejected(str(target), RULE_NOT_EMPTY, "the output folder must be empty")


def _make_sibling(parent_fd: int) -> str:
    # A short fixed-length name: the target's own name may already be as long as allowed.
    # Mode 0o777 under the umask, as `mkdir` gives, since this folder becomes the target.
    while True:
        name = f".skillreg-out-{secrets.token_hex(8)}.tmp"
        try:
            os.mkdir(name, 0o777, dir_fd=parent_fd)
        except FileExistsError:
            continue
        return name


def _write_tree(parent_fd: int, temp: str, plan: list[tuple[list[str], PackageFile]]) -> None:
    folders: dict[tuple[str, ...], int] = {(): os.open(temp, _DIRECTORY, dir_fd=parent_fd)}
    try:
        for segments, file in plan:
            dir_fd = _folder_fd(folders, segments[:-1])
            create_file(segments[-1], dir_fd, file.data, executable=file.executable)
        for fd in folders.values():
            os.fsync(fd)
    finally:
        for fd in folders.values():
            os.close(fd)


def _folder_fd(folders: dict[tuple[str, ...], int], segments: list[str]) -> int:
    key: tuple[str, ...] = ()
    for segment in segments:
        parent, key = folders[key], (*key, segment)
        if key not in folders:
            with suppress(FileExistsError):
                os.mkdir(segment, 0o777, dir_fd=parent)
            folders[key] = os.open(segment, _DIRECTORY, dir_fd=parent)
    return folders[key]


def _rename_into_place(parent_fd: int, temp: str, target: Path) -> None:
    try:
        os.rename(temp, target.name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except OSError as exc:
        # The target was filled, or made a file, after it was checked.
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise PathRejected(
                str(target), RULE_NOT_EMPTY, "the output folder must be empty"
            ) from None
        if exc.errno == errno.ENOTDIR:
            raise PathRejected(
                str(target), RULE_NOT_A_DIRECTORY, "the output must be a folder"
            ) from None
        raise
