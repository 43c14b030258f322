"""Making a package visible in a target, package-atomically (invariant I10).

Link mode (the default):

    build   .skillreg/trees/<slug>/<hash16>-<rand>/   every file: temp, fsync, rename,
            verified against its digest, mode set; every directory fsynced
    swap    a new link made under a temp name in .skillreg/tmp/, renamed over <slug>
            (one atomic rename), then the target directory fsynced
    retire  (by the caller, after recording) every tree of <slug> no link names;
            SKILL.md first, so a reader that still finds it knows the tree was whole

A loader that resolves `<slug>` once sees one complete package, old or new, whenever it
looks; a crash at any step leaves the old link (old package) or the new one (new package)
plus garbage that the next open of the target sweeps.

Copy mode (for loaders that do not follow links) writes into a real folder. A new folder
is built privately and renamed into place whole. An update happens in place: `SKILL.md` is
removed first whenever anything else changes, the other files are written (each one
temp + fsync + rename) or removed, and `SKILL.md` is written last. A loader that finds
`SKILL.md` therefore never sees it ahead of its siblings, but the skill is briefly absent
during an update, and a loader that reads lazily may mix files across an update; a crash
leaves the skill absent (no `SKILL.md`) until the next reconcile completes it.

Everything here is blocking filesystem work, run by the reconciler in a worker thread.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from registry.domain.manifest import Manifest, ManifestEntry
from registry.domain.model import PackageFile
from registry.errors import Inconsistency
from registry.services import fsops
from registry.services.fsops import FileStamp, Step
from registry.services.materialize.drift import ABSENT, DIR, Observation
from registry.services.materialize.target import ROOT, TREES, Target, link_text, tree_name

SKILL_MD: Final = "SKILL.md"

TREE: Final = "tree"  # link mode: a fresh tree, then the swap
CREATE: Final = "create"  # copy mode: a private folder renamed into place
IN_PLACE: Final = "in_place"  # copy mode: update the folder, SKILL.md removed first, written last


@dataclass(frozen=True)
class Plan:
    """How one package will be written, and which files' bytes that needs."""

    how: str
    fetch: tuple[str, ...]
    content: tuple[str, ...] = ()
    mode_only: tuple[str, ...] = ()
    prune: tuple[str, ...] = ()
    hide_skill_md: bool = False


@dataclass(frozen=True)
class Written:
    """What a write left on disk: the tree (link mode) and a stat stamp per file.

    `retire`: whether other trees of the slug may be left for the caller to remove once
    the write is recorded. False when there can be none: the write made the slug's folder
    under `trees/` itself (the target's lock is held, so nothing else adds to it), or
    removed them already (a new folder in copy mode).
    """

    tree: str | None
    files: dict[str, FileStamp]
    retire: bool = True


def plan(mode: str, manifest: Manifest, seen: Observation) -> Plan:
    """Decide how to write `manifest` over what `seen` found."""
    if mode == "link":
        return Plan(TREE, tuple(manifest.paths))
    if seen.entry != DIR or any(a.kind in ("too_many", "too_deep") for a in seen.anomalies):
        return Plan(CREATE, tuple(manifest.paths))
    have = seen.files
    content = tuple(
        e.path
        for e in manifest
        if (h := have.get(e.path)) is None or (h.digest, h.size) != (e.digest, e.size)
    )
    mode_only = tuple(
        e.path
        for e in manifest
        if (h := have.get(e.path)) is not None
        and (h.digest, h.size) == (e.digest, e.size)
        and h.executable != e.executable
    )
    prune = _prune_list(manifest, seen)
    hide = bool(prune) or any(p != SKILL_MD for p in (*content, *mode_only))
    fetch = set(content)
    if hide or SKILL_MD in mode_only:
        fetch.add(SKILL_MD)
    return Plan(IN_PLACE, tuple(sorted(fetch)), content, mode_only, prune, hide_skill_md=hide)


def _prune_list(manifest: Manifest, seen: Observation) -> tuple[str, ...]:
    """Entries to remove, topmost first: extra files, anomalies, directories not needed."""
    needed_dirs = {d for p in manifest.paths for d in _parents(p)}
    remove_dirs: list[str] = []
    for d in sorted(seen.dirs, key=lambda p: (p.count("/"), p)):
        if d not in needed_dirs and not any(_under(d, r) for r in remove_dirs):
            remove_dirs.append(d)
    others = [p for p in seen.files if p not in manifest]
    others += [a.path for a in seen.anomalies]
    kept = [p for p in others if not any(_under(p, r) for r in remove_dirs)]
    return tuple(remove_dirs + sorted(set(kept)))


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _under(path: str, directory: str) -> bool:
    return path.startswith(f"{directory}/")


def write(
    target: Target,
    slug: str,
    *,
    manifest: Manifest,
    files: Mapping[str, PackageFile],
    seen: Observation,
    how: Plan,
    step: Step,
) -> Written:
    """Make `manifest` the package at `<target>/<slug>`, as planned by `plan`."""
    if how.how == TREE:
        return _write_tree(target, slug, manifest=manifest, files=files, seen=seen, step=step)
    if how.how == CREATE:
        return _write_new_folder(target, slug, manifest=manifest, files=files, seen=seen, step=step)
    return _write_in_place(
        target, slug, manifest=manifest, files=files, seen=seen, how=how, step=step
    )


def remove(target: Target, slug: str, step: Step) -> bool:
    """Remove `<target>/<slug>` (a folder in one rename to the trash) and its trees."""
    removed = _move_away(target, slug)
    if removed:
        step("materialize.unlinked")
    target.remove_unlinked_trees(slug, step=step)
    _empty_trash(target, slug)
    return removed


# ---------------------------------------------------------------- link mode


def _write_tree(
    target: Target,
    slug: str,
    *,
    manifest: Manifest,
    files: Mapping[str, PackageFile],
    seen: Observation,
    step: Step,
) -> Written:
    tree, stamps, first = build_tree(target, slug, manifest, files=files, step=step)
    if seen.entry == DIR:
        # A folder cannot be renamed over: it goes to the trash first, so the skill is
        # absent for a moment (never mixed) while a copy becomes a link again.
        _move_away(target, slug)
    swap_link(target, slug, tree, step)
    _empty_trash(target, slug)
    return Written(tree, stamps, retire=not first)


def build_tree(
    target: Target,
    slug: str,
    manifest: Manifest,
    *,
    files: Mapping[str, PackageFile],
    step: Step,
) -> tuple[str, dict[str, FileStamp], bool]:
    """Write `manifest` into a fresh tree of `slug` that no reader can see yet.

    Returns the tree's name, a stamp per file, and whether the tree is the slug's first
    (its folder under `trees/` was made here: it holds no other tree).
    """
    slug_fd, created = fsops.ensure_dir(slug, dir_fd=target.trees_fd)
    try:
        if created:
            target.sync(TREES)
        name = tree_name(manifest.hash)
        os.mkdir(name, fsops.DIR_MODE, dir_fd=slug_fd)
        try:
            tree_fd = fsops.open_dir(name, dir_fd=slug_fd)
            try:
                step("materialize.tree_created")
                stamps = place_all(target.tmp_fd, tree_fd, manifest.entries, files=files, step=step)
            finally:
                os.close(tree_fd)
            fsops.fsync_fd(slug_fd)
        except BaseException:
            fsops.remove_entry(name, slug_fd)
            raise
    finally:
        os.close(slug_fd)
    step("materialize.tree_synced")
    return name, stamps, created


def swap_link(target: Target, slug: str, tree: str, step: Step) -> None:
    """Point `<target>/<slug>` at `tree` in one atomic rename, then make it durable."""
    temp = f"{slug}.{fsops.token()}.link"
    os.symlink(link_text(slug, tree), temp, dir_fd=target.tmp_fd)
    step("materialize.link_created")
    try:
        os.rename(temp, slug, src_dir_fd=target.tmp_fd, dst_dir_fd=target.root_fd)
    except BaseException:
        fsops.unlink_if_present(temp, target.tmp_fd)
        raise
    step("materialize.swapped")
    target.sync(ROOT)


# ---------------------------------------------------------------- copy mode


def _write_new_folder(
    target: Target,
    slug: str,
    *,
    manifest: Manifest,
    files: Mapping[str, PackageFile],
    seen: Observation,
    step: Step,
) -> Written:
    staged = f"{slug}.{fsops.token()}.new"
    os.mkdir(staged, fsops.DIR_MODE, dir_fd=target.tmp_fd)
    try:
        staged_fd = fsops.open_dir(staged, dir_fd=target.tmp_fd)
        try:
            step("materialize.tree_created")
            stamps = place_all(target.tmp_fd, staged_fd, manifest.entries, files=files, step=step)
        finally:
            os.close(staged_fd)
        step("materialize.tree_synced")
        if seen.entry != ABSENT:
            _move_away(target, slug)
        os.rename(staged, slug, src_dir_fd=target.tmp_fd, dst_dir_fd=target.root_fd)
    except BaseException:
        fsops.remove_entry(staged, target.tmp_fd)
        raise
    step("materialize.swapped")
    target.sync(ROOT)
    target.remove_unlinked_trees(slug, step=step)
    _empty_trash(target, slug)
    return Written(None, stamps, retire=False)


def _write_in_place(
    target: Target,
    slug: str,
    *,
    manifest: Manifest,
    files: Mapping[str, PackageFile],
    seen: Observation,
    how: Plan,
    step: Step,
) -> Written:
    stamps = {p: s for p, s in seen.files.items() if p in manifest}
    folder = fsops.open_dir(slug, dir_fd=target.root_fd)
    dirs = _DirCache(folder)
    try:
        skill_md_gone = False
        if how.hide_skill_md:
            skill_md_gone = True
            if fsops.remove_entry(SKILL_MD, folder):
                fsops.fsync_fd(folder)
                step("materialize.skill_md_removed")
        for path in how.prune:
            if path == SKILL_MD:
                continue  # removed above if it had to go, rewritten below
            parent, name = dirs.parent_of(path, create=False)
            if parent is not None:
                fsops.remove_entry(name, parent)
            dirs.mark(path)
        step("materialize.pruned")
        siblings = [manifest[p] for p in how.content if p != SKILL_MD]
        stamps |= place_all(target.tmp_fd, folder, siblings, files=files, step=step, dirs=dirs)
        for path in how.mode_only:
            if path == SKILL_MD and skill_md_gone:
                continue
            parent, name = dirs.parent_of(path, create=False)
            entry = manifest[path]
            st = (
                None
                if parent is None
                else fsops.set_mode(name, parent, executable=entry.executable)
            )
            if st is None:
                raise Inconsistency(f"{slug}/{path} vanished while its mode was set")
            stamps[path] = FileStamp.of(manifest[path].digest, st)
            dirs.mark(path)
        dirs.fsync_all()
        if skill_md_gone or SKILL_MD in how.content:
            stamps |= place_all(target.tmp_fd, folder, [manifest[SKILL_MD]], files=files, step=step)
            step("materialize.skill_md_placed")
    finally:
        dirs.close()
    return Written(None, stamps)


# ---------------------------------------------------------------- shared


class _DirCache:
    """Descriptors of the directories under one root, opened (or created) on demand."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self._fds: dict[str, int] = {"": root_fd}
        self._touched: set[str] = set()

    def get(self, directory: str, *, create: bool) -> int | None:
        fd = self._fds.get(directory)
        if fd is not None:
            return fd
        parent_path, _, name = directory.rpartition("/")
        parent = self.get(parent_path, create=create)
        if parent is None:
            return None
        try:
            if create:
                fd, created = fsops.ensure_dir(name, dir_fd=parent)
                if created:
                    self._touched.add(parent_path)
            else:
                fd = fsops.open_dir(name, dir_fd=parent)
        except (FileNotFoundError, NotADirectoryError):
            if create:
                raise
            return None
        self._fds[directory] = fd
        return fd

    def parent_of(self, path: str, *, create: bool) -> tuple[int | None, str]:
        directory, _, name = path.rpartition("/")
        return self.get(directory, create=create), name

    def mark(self, path: str) -> None:
        self._touched.add(path.rpartition("/")[0])

    def fsync_all(self) -> None:
        # Deepest first: a directory's own entries are durable before its parent's.
        for directory in sorted(self._touched, key=lambda d: -d.count("/") - bool(d)):
            fd = self._fds.get(directory)
            if fd is not None:
                fsops.fsync_fd(fd)
        self._touched.clear()

    def close(self) -> None:
        for directory, fd in self._fds.items():
            if directory:
                os.close(fd)
        self._fds = {"": self.root_fd}
        os.close(self.root_fd)


def place_all(
    stage_fd: int,
    root_fd: int,
    entries: Iterable[ManifestEntry],
    *,
    files: Mapping[str, PackageFile],
    step: Step,
    dirs: _DirCache | None = None,
) -> dict[str, FileStamp]:
    """Write each entry under `root_fd` (creating directories), verify it, fsync directories.

    Without `dirs`, every directory it changed is fsynced before it returns, `root_fd`
    included (a package always has its `SKILL.md` there). With `dirs` (an update in
    place), the caller fsyncs them when its entries must be durable.
    """
    own = dirs is None
    cache = dirs if dirs is not None else _DirCache(os.dup(root_fd))
    stamps: dict[str, FileStamp] = {}
    try:
        for entry in entries:
            parent, name = cache.parent_of(entry.path, create=True)
            assert parent is not None
            stamps[entry.path] = place_file(
                stage_fd, parent, name, entry=entry, file=files[entry.path], step=step
            )
            cache.mark(entry.path)
        if own:
            cache.fsync_all()
    finally:
        if own:
            cache.close()
    return stamps


def place_file(
    stage_fd: int,
    dir_fd: int,
    name: str,
    *,
    entry: ManifestEntry,
    file: PackageFile,
    step: Step,
) -> FileStamp:
    """Durably write one file, then read it back and check its digest, size and mode."""
    fsops.write_file(stage_fd, dir_fd, name, file.data, executable=entry.executable, step=step)
    hashed = fsops.hash_file(name, dir_fd)
    if hashed is None:
        raise Inconsistency(f"{entry.path} is not a regular file after it was written")
    digest, st = hashed
    stamp = FileStamp.of(digest, st)
    if (stamp.digest, stamp.size, stamp.executable) != (
        entry.digest,
        entry.size,
        entry.executable,
    ):
        raise Inconsistency(f"{entry.path} does not match its manifest entry after writing")
    step("materialize.file_verified")
    return stamp


def _move_away(target: Target, slug: str) -> bool:
    """Take `<target>/<slug>` out of view in one step: a folder to the trash, else unlink."""
    st = fsops.lstat_at(slug, target.root_fd)
    if st is None:
        return False
    if stat.S_ISDIR(st.st_mode):
        trashed = f"{slug}.{fsops.token()}"
        os.rename(slug, trashed, src_dir_fd=target.root_fd, dst_dir_fd=target.trash_fd)
    else:
        fsops.unlink_if_present(slug, target.root_fd)
    target.sync(ROOT)
    return True


def _empty_trash(target: Target, slug: str) -> None:
    """Delete what `_move_away` put in the trash for `slug`.

    Only the slug's own entries (`<slug>.<token>`; a slug has no dot): other skills are
    written at the same time and empty their own. What a killed run left there is swept
    when the target is opened.
    """
    prefix = f"{slug}."
    for name in fsops.names(target.trash_fd):
        if name.startswith(prefix):
            fsops.remove_entry(name, target.trash_fd, first=SKILL_MD)
