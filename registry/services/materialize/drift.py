"""Looking at a skill on disk without trusting it, and saying how it differs from a manifest.

`observe` walks `<target>/<slug>` by directory descriptor, never following a link: a link
(anywhere, `SKILL.md` included), a FIFO or a device is recorded as an anomaly, not read.
Regular files are identified by content: a file whose stat still matches the stat cache
(inode, size, mtime, ctime, mode) keeps its cached digest, anything else is hashed. With
`verify`, everything is hashed. The walk is bounded in entries and depth, so a planted
tree cannot make the reconciler walk forever.

`differences` turns an observation and the manifest expected on disk into drift items:
a file edited, added or removed, a changed mode, a planted link or special file, an
extra directory, or the slug's entry itself replaced or missing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from registry.domain.manifest import Manifest, ManifestEntry
from registry.services import fsops
from registry.services.fsops import FileStamp
from registry.services.materialize.target import SkillCache, Target

MAX_ENTRIES: Final = 10_000
MAX_DEPTH: Final = 32

ABSENT: Final = "absent"
LINK: Final = "link"
DIR: Final = "dir"
FOREIGN: Final = "foreign"


@dataclass(frozen=True, slots=True)
class Anomaly:
    """Something on disk that can never be part of a package."""

    path: str
    kind: str  # "symlink", "special", "too_deep", "too_many"


@dataclass(frozen=True, slots=True)
class DriftItem:
    """One difference between the disk and the package expected there."""

    path: str
    kind: str  # "modified", "mode", "added", "removed", "symlink", "special", "replaced", ...
    detail: str = ""


@dataclass(frozen=True)
class Observation:
    """What `<target>/<slug>` is, and the regular files, directories and anomalies under it.

    `entry`: `absent`; `link` (a link to one of the target's trees, which exists); `dir`
    (a real folder); `foreign` (anything else: a link elsewhere, a file, a broken link).
    """

    entry: str
    tree: str | None = None
    detail: str = ""
    files: dict[str, FileStamp] = field(default_factory=dict)
    dirs: frozenset[str] = frozenset()
    anomalies: tuple[Anomaly, ...] = ()
    hashed: int = 0
    ours: bool = False  # a link in the target's own format, even if its tree is gone

    @property
    def reconciler_made(self) -> bool:
        """The entry is one only the reconciler makes: a link into the target's trees."""
        return self.entry == LINK or self.ours

    @property
    def manifest(self) -> Manifest:
        """The regular files seen, as a manifest (anomalies are not in it)."""
        return Manifest(
            ManifestEntry(path, s.digest, s.size, s.executable) for path, s in self.files.items()
        )

    @property
    def walked(self) -> bool:
        return self.entry in (LINK, DIR)

    def holds(self, manifest_hash: str, entry: str) -> bool:
        """True if the disk holds exactly the package `manifest_hash`, as an `entry`."""
        return (
            self.entry == entry
            and not self.anomalies
            and not self.extra_dirs()
            and self.manifest.hash == manifest_hash
        )

    def extra_dirs(self, expected: Iterable[str] = ()) -> list[str]:
        """The topmost directories no file needs (empty, or holding only anomalies).

        A file needs its parents; so does each path of `expected` (the package the disk
        should hold), whose folders are no addition even when their files were removed.
        """
        needed = {d for p in (*self.files, *expected) for d in _parents(p)}
        extra: list[str] = []
        for d in sorted(self.dirs - needed):
            if not any(d.startswith(f"{top}/") for top in extra):
                extra.append(d)
        return extra


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def observe(target: Target, slug: str, cache: SkillCache | None, *, verify: bool) -> Observation:
    """Look at `<target>/<slug>`, trusting the cache's stamps only for the tree they describe."""
    stamps: Mapping[str, FileStamp] = {}
    if cache is not None and cache.writing is None and not verify:
        stamps = cache.files
    st = fsops.lstat_at(slug, target.root_fd)
    if st is None:
        return Observation(ABSENT)
    if stat.S_ISLNK(st.st_mode):
        text = fsops.read_link_at(slug, target.root_fd) or ""
        tree = target.linked_tree(slug)
        if tree is None:
            return Observation(FOREIGN, detail=f"a link to {text!r}")
        try:
            fd = target.open_tree(slug, tree)
        except OSError:
            return Observation(FOREIGN, detail=f"a link to a missing tree {text!r}", ours=True)
        trusted = stamps if cache is not None and cache.tree == tree else {}
        return _walk_root(fd, LINK, tree, trusted, verify=verify)
    if stat.S_ISDIR(st.st_mode):
        fd = fsops.open_dir(slug, dir_fd=target.root_fd)
        trusted = stamps if cache is not None and cache.tree is None else {}
        return _walk_root(fd, DIR, None, trusted, verify=verify)
    kind = "file" if stat.S_ISREG(st.st_mode) else "special file"
    return Observation(FOREIGN, detail=f"a {kind}")


def _walk_root(
    fd: int, entry: str, tree: str | None, cached: Mapping[str, FileStamp], *, verify: bool
) -> Observation:
    walk = _Walk(cached, verify=verify)
    try:
        walk.directory(fd, "", 0)
    finally:
        os.close(fd)
    return Observation(
        entry,
        tree=tree,
        files=walk.files,
        dirs=frozenset(walk.dirs),
        anomalies=tuple(walk.anomalies),
        hashed=walk.hashed,
    )


class _Walk:
    def __init__(self, cached: Mapping[str, FileStamp], *, verify: bool) -> None:
        self.cached = cached
        self.verify = verify
        self.files: dict[str, FileStamp] = {}
        self.dirs: set[str] = set()
        self.anomalies: list[Anomaly] = []
        self.hashed = 0
        self.seen = 0

    def directory(self, fd: int, prefix: str, depth: int) -> None:
        for name in fsops.names(fd):
            rel = f"{prefix}{name}"
            self.seen += 1
            if self.seen > MAX_ENTRIES:
                self.anomalies.append(Anomaly(rel, "too_many"))
                return
            st = fsops.lstat_at(name, fd)
            if st is None:
                continue  # removed while we looked; the next look settles it
            if stat.S_ISLNK(st.st_mode):
                self.anomalies.append(Anomaly(rel, "symlink"))
            elif stat.S_ISDIR(st.st_mode):
                self._subdirectory(fd, name, rel, depth)
            elif stat.S_ISREG(st.st_mode):
                self._file(fd, name, rel, st)
            else:
                self.anomalies.append(Anomaly(rel, "special"))

    def _subdirectory(self, fd: int, name: str, rel: str, depth: int) -> None:
        self.dirs.add(rel)
        if depth + 1 >= MAX_DEPTH:
            self.anomalies.append(Anomaly(rel, "too_deep"))
            return
        try:
            sub = fsops.open_dir(name, dir_fd=fd)
        except OSError:
            self.anomalies.append(Anomaly(rel, "special"))  # replaced by a link meanwhile
            return
        try:
            self.directory(sub, f"{rel}/", depth + 1)
        finally:
            os.close(sub)

    def _file(self, fd: int, name: str, rel: str, st: os.stat_result) -> None:
        stamp = self.cached.get(rel)
        if stamp is not None and not self.verify and stamp.same_stat(st):
            self.files[rel] = stamp
            return
        hashed = fsops.hash_file(name, fd)
        self.hashed += 1
        if hashed is None:
            self.anomalies.append(Anomaly(rel, "special"))
            return
        digest, after = hashed
        self.files[rel] = FileStamp.of(digest, after)


def differences(expected: Manifest, seen: Observation, entry: str) -> list[DriftItem]:
    """How `seen` differs from `expected` held as an `entry` (`link` or `dir`)."""
    if seen.entry == ABSENT:
        return [DriftItem(".", "missing", "the skill's entry is gone")]
    items: list[DriftItem] = []
    if seen.entry == FOREIGN:
        return [DriftItem(".", "replaced", f"the skill's entry is now {seen.detail}")]
    if seen.entry != entry:
        now = "a folder" if seen.entry == DIR else "a link"
        items.append(DriftItem(".", "replaced", f"the skill's entry is now {now}"))
    on_disk = seen.manifest
    for path in sorted({*expected.paths, *on_disk.paths}, key=lambda p: p.encode()):
        want, have = expected.get(path), on_disk.get(path)
        if want is None:
            items.append(DriftItem(path, "added"))
        elif have is None:
            items.append(DriftItem(path, "removed"))
        elif (want.digest, want.size) != (have.digest, have.size):
            items.append(DriftItem(path, "modified"))
        elif want.executable != have.executable:
            items.append(
                DriftItem(path, "mode", "now executable" if have.executable else "lost +x")
            )
    items.extend(DriftItem(d, "added", "directory") for d in seen.extra_dirs(expected.paths))
    items.extend(DriftItem(a.path, a.kind) for a in seen.anomalies)
    return items


def read_observed(
    target: Target, slug: str, seen: Observation, limit: int
) -> dict[str, tuple[bytes, bool]]:
    """The bytes and executable bit of every regular file `seen` found, read again safely.

    Each file is opened without following links, and must still hash to the digest the
    observation recorded: a file that changed since is refused (`ValueError`), so what is
    adopted is exactly what was compared. Files over `limit` bytes are refused too.
    """
    root = target.open_tree(slug, seen.tree) if seen.entry == LINK and seen.tree else None
    if root is None:
        root = fsops.open_dir(slug, dir_fd=target.root_fd)
    out: dict[str, tuple[bytes, bool]] = {}
    try:
        for path, stamp in sorted(seen.files.items()):
            parent = root
            parts = path.split("/")
            opened: list[int] = []
            try:
                for part in parts[:-1]:
                    parent = fsops.open_dir(part, dir_fd=parent)
                    opened.append(parent)
                found = fsops.read_file(parts[-1], parent, limit)
            finally:
                for fd in opened:
                    os.close(fd)
            if found is None or len(found[0]) > limit:
                raise ValueError(f"{path} is gone or larger than {limit} bytes")
            data, st = found
            if fsops.digest(data) != stamp.digest:
                raise ValueError(f"{path} changed while it was being adopted")
            out[path] = (data, fsops.is_executable(st))
    finally:
        os.close(root)
    return out
