"""Reading a skill folder into a package, and writing a package out to a folder.

Reading keeps executable bits, skips `.git/` and the patterns of a `.skillregignore` file
(gitignore-like: `name`, `*.tmp`, `dir/`, `/rooted`, `**` segments) and refuses symlinks
and special files instead of following them: a package is regular files only.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from registry.domain.model import PackageFile
from registry.errors import LimitExceeded, PathRejected

IGNORE_FILE = ".skillregignore"
ALWAYS_IGNORED = (".git/",)
# A folder with far more entries than any package may hold is refused while walking,
# before its files are read.
_WALK_ENTRY_LIMIT = 10_000


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


def read_folder(root: Path, *, max_files: int | None = None) -> dict[str, PackageFile]:
    """Read a skill folder into `{relative posix path: PackageFile}`."""
    root = Path(root)
    if not root.is_dir():
        raise PathRejected(str(root), "not_a_directory", "the package must be a folder")
    rules = _ignore_rules(root)
    files: dict[str, PackageFile] = {}
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        dirnames[:] = _kept_dirs(base, rel_dir, dirnames, rules)
        for name in sorted(filenames):
            rel = _join(rel_dir, name)
            seen += 1
            if seen > _WALK_ENTRY_LIMIT:
                raise LimitExceeded("max_files", _WALK_ENTRY_LIMIT, seen)
            if rules.ignored(rel, is_dir=False):
                continue
            files[rel] = _read_regular(base / name, rel)
            if max_files is not None and len(files) > max_files:
                raise LimitExceeded("max_files", max_files, len(files))
    return files


def _ignore_rules(root: Path) -> IgnoreRules:
    ignore_file = root / IGNORE_FILE
    if ignore_file.is_file() and not ignore_file.is_symlink():
        return IgnoreRules([*ALWAYS_IGNORED, *ignore_file.read_text("utf-8").splitlines()])
    return IgnoreRules(ALWAYS_IGNORED)


def _join(rel_dir: str, name: str) -> str:
    return name if rel_dir == "." else f"{rel_dir}/{name}"


def _kept_dirs(base: Path, rel_dir: str, dirnames: list[str], rules: IgnoreRules) -> list[str]:
    kept = []
    for name in sorted(dirnames):
        rel = _join(rel_dir, name)
        if (base / name).is_symlink():
            raise PathRejected(rel, "symlink", "symbolic links are not packaged")
        if not rules.ignored(rel, is_dir=True):
            kept.append(name)
    return kept


def _read_regular(path: Path, rel: str) -> PackageFile:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise PathRejected(rel, "symlink", "symbolic links are not packaged")
    if not stat.S_ISREG(info.st_mode):
        raise PathRejected(rel, "special_file", "only regular files are packaged")
    return PackageFile(path.read_bytes(), executable=bool(info.st_mode & stat.S_IXUSR))


def write_folder(target: Path, files: Mapping[str, PackageFile]) -> None:
    """Write a package into `target` (which must be empty or missing), keeping modes."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    if any(target.iterdir()):
        raise PathRejected(str(target), "not_empty", "the output folder must be empty")
    resolved = target.resolve()
    for rel, file in sorted(files.items()):
        destination = (resolved / rel).resolve()
        if resolved not in destination.parents:
            raise PathRejected(rel, "escapes_target", "the path leaves the output folder")
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(file.data)
        destination.chmod(0o755 if file.executable else 0o644)
