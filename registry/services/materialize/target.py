"""A materialisation target on disk: its layout, its lock, its identity and its stat cache.

    <target>/
      pdf-report -> .skillreg/trees/pdf-report/1f0c…-a1b2c3d4    (link mode)
      csv-cleaner/                                               (copy mode: a real folder)
      .skillreg/
        target.json    identity: target id, scope, mode
        lock           held (flock) by the one reconciler working on the target
        trees/<slug>/  package trees; exactly one per slug is linked, the rest are garbage
        cache/<slug>.json  what was written for the slug, with a stat stamp per file
        remote.json    sync only: the desired state as last fetched, with its ETag
        trust.json     sync only: the keys the host pinned, the signed state it applied
                       last, the attestations it verified (docs/trust.md)
        blobs/         sync only: the local blob cache (content-addressed, verified)
        tmp/           temp files and links before their rename; emptied on every open
        trash/         folders moved out of the way before removal; emptied on every open

Everything under `.skillreg/` is private to the reconciler. Opening a target takes its
lock (never blocking: `wait_until_free` is how a caller waits) and sweeps what a crashed
reconciler left: temp
entries, trash, and trees no link points at. A target is bound to one scope and one mode
when first used; using it with another is refused rather than silently mixed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import stat
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from registry.domain.manifest import Manifest, ManifestEntry
from registry.domain.model import Scope, check_slug
from registry.errors import (
    InvalidName,
    ScopeNotFound,
    TargetBusy,
    TargetInvalid,
    TargetMismatch,
)
from registry.services import fsops
from registry.services.fsops import FileStamp, Step, no_step

PRIVATE: Final = ".skillreg"
ROOT: Final = "root"  # the target folder itself, among the descriptors a target holds
IDENTITY: Final = "target.json"
LOCK: Final = "lock"
TREES: Final = "trees"
TMP: Final = "tmp"
TRASH: Final = "trash"
CACHE: Final = "cache"
SOURCE_STATE: Final = "remote.json"
TRUST_STATE: Final = "trust.json"
BLOB_CACHE: Final = "blobs"
MODES: Final = ("link", "copy")
FORMAT: Final = 1

_TREE_NAME: Final = re.compile(r"[0-9a-f]{16}-[0-9a-f]{8}")


def tree_name(manifest_hash: str) -> str:
    """A fresh tree name: the manifest hash prefix (for people) and a random suffix."""
    return f"{manifest_hash[:16]}-{fsops.token()}"


def link_text(slug: str, tree: str) -> str:
    """What `<target>/<slug>` links to: a path relative to the target, so it can move."""
    return f"{PRIVATE}/{TREES}/{slug}/{tree}"


def parse_link(slug: str, text: str) -> str | None:
    """The tree a link's text names if it is exactly one of ours for `slug`, else None."""
    prefix = f"{PRIVATE}/{TREES}/{slug}/"
    if not text.startswith(prefix):
        return None
    tree = text[len(prefix) :]
    return tree if _TREE_NAME.fullmatch(tree) else None


@dataclass(frozen=True, slots=True)
class Identity:
    """What `.skillreg/target.json` records: which target this is, for which scope, how."""

    target_id: str
    workspace: str
    agent: str
    mode: str

    def dumps(self) -> bytes:
        body = {
            "format": FORMAT,
            "target_id": self.target_id,
            "workspace": self.workspace,
            "agent": self.agent,
            "mode": self.mode,
        }
        return (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def loads(cls, path: str, data: bytes) -> Identity:
        try:
            body = json.loads(data)
            identity = cls(
                str(uuid.UUID(body["target_id"])),
                str(body["workspace"]),
                str(body["agent"]),
                str(body["mode"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise TargetInvalid(
                path, "identity_unreadable", f"{PRIVATE}/{IDENTITY}: {exc}"
            ) from exc
        if identity.mode not in MODES:
            raise TargetInvalid(path, "identity_unreadable", f"unknown mode {identity.mode!r}")
        return identity


@dataclass(frozen=True)
class SkillCache:
    """What the reconciler last wrote for one slug of a target, as it saw it on disk.

    `writing` is set (to the manifest hash being written) before anything visible changes
    and cleared when the write is complete: a slug whose cache still has it was
    interrupted by a crash, and its on-disk state is the reconciler's own unfinished work,
    not an edit to report or adopt.
    """

    slug: str
    manifest_hash: str | None
    version: int | None
    tree: str | None = None
    writing: str | None = None
    files: dict[str, FileStamp] = field(default_factory=dict)

    def manifest(self) -> Manifest:
        """The package this cache says was written."""
        return Manifest(
            ManifestEntry(path, s.digest, s.size, s.executable) for path, s in self.files.items()
        )

    def dumps(self) -> bytes:
        body: dict[str, Any] = {
            "format": FORMAT,
            "slug": self.slug,
            "manifest_hash": self.manifest_hash,
            "version": self.version,
            "tree": self.tree,
            "writing": self.writing,
            "files": {
                path: [s.digest, s.size, s.executable, s.ino, s.mtime_ns, s.ctime_ns]
                for path, s in sorted(self.files.items())
            },
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def loads(cls, slug: str, data: bytes) -> SkillCache | None:
        """The cache, or None if it is unreadable (it is only a cache: hashing recovers)."""
        try:
            body = json.loads(data)
            files = {
                str(path): FileStamp(str(d), int(n), bool(x), int(i), int(m), int(c))
                for path, (d, n, x, i, m, c) in body["files"].items()
            }
            cache = cls(
                slug=slug,
                manifest_hash=body["manifest_hash"],
                version=body["version"],
                tree=body["tree"],
                writing=body["writing"],
                files=files,
            )
            cache.manifest()  # validates every entry
        except (ValueError, KeyError, TypeError):
            return None
        if body.get("slug") != slug:
            return None
        return cache


class Target:
    """An open target directory whose lock this process holds. Close it to release the lock.

    Holds descriptors for the target root and its private directories; every operation on
    the target is relative to them. Not thread-safe: one reconcile uses it at a time.
    """

    def __init__(self, path: Path, identity: Identity, fds: dict[str, int], lock_fd: int) -> None:
        self.path = path
        self.identity = identity
        self._fds = fds
        self._lock_fd = lock_fd
        self.host = socket.gethostname()[:255]
        self.swept = 0  # garbage removed when the target was opened (a crash leaves some)
        # The folders every skill's write fsyncs (its link, its first tree, its cache).
        self._syncs = {name: GroupSync(self._fd_of(name)) for name in (ROOT, TREES, CACHE)}

    @property
    def target_id(self) -> str:
        return self.identity.target_id

    @property
    def mode(self) -> str:
        return self.identity.mode

    @property
    def root_fd(self) -> int:
        return self._fds[ROOT]

    def sync(self, name: str) -> None:
        """Make a change in the root (`ROOT`), `trees/` or `cache/` durable: one fsync.

        Shared by the skills that need it at the same time (`GroupSync`): it returns once
        an fsync that started after the call has completed.
        """
        self._syncs[name].sync()

    def _fd_of(self, name: str) -> Callable[[], int]:
        return lambda: self._fds[name]

    @property
    def trees_fd(self) -> int:
        return self._fds[TREES]

    @property
    def tmp_fd(self) -> int:
        return self._fds[TMP]

    @property
    def trash_fd(self) -> int:
        return self._fds[TRASH]

    # ------------------------------------------------------------ opening and closing

    @classmethod
    def open(
        cls, path: Path | str, scope: Scope | None, *, mode: str | None = None, bind: bool = True
    ) -> Target:
        """Create (if needed), lock and sweep the target at `path` for `scope`.

        Raises `TargetBusy` if another reconciler holds the lock, `TargetMismatch` if the
        target was made for another scope or mode, and `TargetInvalid` if the path or the
        private area is not a usable directory. With `bind` False a target that is not
        bound to a scope yet is not bound to this one (`ScopeNotFound`: the caller found
        the scope unknown), and nothing is created. With `scope` None the target must
        exist already, bound to whichever scope (`TargetInvalid`, rule `not_a_target`).
        """
        if mode is not None and mode not in MODES:
            raise TargetInvalid(str(path), "unknown_mode", f"{mode!r}; use one of {MODES}")
        if scope is None and not (Path(path) / PRIVATE / IDENTITY).is_file():
            raise TargetInvalid(str(path), "not_a_target", f"no {PRIVATE}/{IDENTITY} there")
        if scope is not None and not bind and not _bound(Path(path)):
            raise ScopeNotFound(scope.workspace, scope.agent)
        root = _prepare_root(Path(path))
        shown = str(root)
        fds: dict[str, int] = {}
        lock_fd = -1
        try:
            fds[ROOT] = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            fds[PRIVATE] = _private_dir(shown, PRIVATE, fds[ROOT])
            lock_fd = _take_lock(shown, fds[PRIVATE])
            for name in (TREES, TMP, TRASH, CACHE):
                fds[name] = _private_dir(shown, name, fds[PRIVATE])
            identity = _identity(shown, fds, scope, mode)
        except BaseException:
            for fd in [*fds.values(), lock_fd]:
                if fd >= 0:
                    os.close(fd)
            raise
        target = cls(root, identity, fds, lock_fd)
        try:
            target.swept = target.sweep()
        except BaseException:
            target.close()
            raise
        return target

    def close(self) -> None:
        """Release the lock and the descriptors (idempotent)."""
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = {}
        if self._lock_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = -1

    # ------------------------------------------------------------ the stat cache

    def load_cache(self, slug: str) -> SkillCache | None:
        data = fsops.read_small(f"{slug}.json", self._fds[CACHE])
        return None if data is None else SkillCache.loads(slug, data)

    def save_cache(self, cache: SkillCache) -> None:
        """Durably replace the slug's cache file: the file fsynced, then the cache folder.

        The folder's fsync is shared: skills saving their caches at the same time (their
        `writing` intents) wait for one fsync that started after each had renamed its
        file (`GroupSync`).
        """
        self._write_cache(cache)
        self.sync(CACHE)

    def save_result(self, cache: SkillCache) -> None:
        """Replace the slug's cache file with a finished write's, its folder not fsynced.

        The file itself is fsynced before its rename, so whatever a crash keeps is a whole
        cache: the intent it replaces, or this. Losing the rename leaves the intent, which
        the next run takes for its own interrupted work and completes (never drift), so no
        later step waits for this rename to be durable; the next intent saved, or
        `sync_cache` at the end of the run, makes it so.
        """
        self._write_cache(cache)

    def sync_cache(self) -> None:
        """Make every cache file renamed so far durable (one fsync of the cache folder)."""
        self.sync(CACHE)

    def _write_cache(self, cache: SkillCache) -> None:
        fsops.write_file(
            self.tmp_fd, self._fds[CACHE], f"{cache.slug}.json", cache.dumps(), executable=False
        )

    def drop_cache(self, slug: str) -> None:
        if fsops.unlink_if_present(f"{slug}.json", self._fds[CACHE]):
            self.sync(CACHE)

    def cached_slugs(self) -> set[str]:
        """Slugs this target has written (or started writing): the slugs it manages."""
        slugs = set()
        for name in fsops.names(self._fds[CACHE]):
            slug, dot, ext = name.rpartition(".")
            if dot and ext == "json" and _is_slug(slug):
                slugs.add(slug)
        return slugs

    # ------------------------------------------------------------ a remote source's own

    def load_source_state(self) -> bytes | None:
        """What a remote source saved here last (`remote.json`), or None."""
        return fsops.read_small(SOURCE_STATE, self._fds[PRIVATE])

    def save_source_state(self, data: bytes) -> None:
        """Durably replace `remote.json`."""
        fsops.write_small(self.tmp_fd, self._fds[PRIVATE], SOURCE_STATE, data)

    def load_trust(self) -> bytes | None:
        """The keys a syncing host pinned and the state it applied last (`trust.json`)."""
        return fsops.read_small(TRUST_STATE, self._fds[PRIVATE])

    def save_trust(self, data: bytes) -> None:
        """Durably replace `trust.json`."""
        fsops.write_small(self.tmp_fd, self._fds[PRIVATE], TRUST_STATE, data)

    @property
    def blob_cache(self) -> Path:
        """Where a remote source caches blobs (created by the cache itself)."""
        return self.path / PRIVATE / BLOB_CACHE

    # ------------------------------------------------------------ trees and garbage

    def linked_tree(self, slug: str) -> str | None:
        """The tree `<target>/<slug>` links to, if it is one of ours."""
        text = fsops.read_link_at(slug, self.root_fd)
        return None if text is None else parse_link(slug, text)

    def open_tree(self, slug: str, tree: str) -> int:
        """A descriptor of the tree `tree` of `slug` (`OSError` if it is missing or not ours)."""
        slug_fd = fsops.open_dir(slug, dir_fd=self.trees_fd)
        try:
            return fsops.open_dir(tree, dir_fd=slug_fd)
        finally:
            os.close(slug_fd)

    def sweep(self) -> int:
        """Remove what no reader can see: temp entries, trash, unlinked trees. Returns a count.

        Runs with the lock held, so no other reconciler is building a tree right now; a
        tree that no link names is a crashed build or a retired package.
        """
        removed = 0
        for name in (TMP, TRASH):
            fd = self._fds[name]
            for entry in fsops.names(fd):
                removed += fsops.remove_entry(entry, fd)
        for slug in fsops.names(self.trees_fd):
            removed += self.remove_unlinked_trees(slug)
        return removed

    def remove_unlinked_trees(self, slug: str, *, step: Step = no_step) -> int:
        """Remove every tree of `slug` except the linked one; drop the slug's folder if empty."""
        st = fsops.lstat_at(slug, self.trees_fd)
        if st is None:
            return 0
        if not (_is_slug(slug) and stat.S_ISDIR(st.st_mode)):
            return int(fsops.remove_entry(slug, self.trees_fd))
        keep = self.linked_tree(slug)
        fd = fsops.open_dir(slug, dir_fd=self.trees_fd)
        removed = 0
        try:
            for tree in fsops.names(fd):
                if tree != keep:
                    removed += fsops.remove_entry(tree, fd, first="SKILL.md")
            empty = not fsops.names(fd)
        finally:
            os.close(fd)
        if empty:
            with contextlib.suppress(OSError):
                os.rmdir(slug, dir_fd=self.trees_fd)
        if removed:
            step("materialize.old_removed")
        return removed


class GroupSync:
    """One directory's fsync, shared by the threads that need it at the same time.

    A caller needs an fsync that starts after its own change (a rename into the
    directory): one already under way may have missed it. So `sync` waits for the fsync in
    progress, if any, then either finds that another caller started one after it came and
    waits for that, or starts one itself. However many skills need the cache folder synced
    at once, at most two fsyncs are issued for them, and none returns before its change is
    durable. An fsync that fails raises in the caller that issued it; the others try again.
    """

    def __init__(self, fd: Callable[[], int]) -> None:
        self._fd = fd
        self._changed = threading.Condition()
        self._started = 0  # fsyncs started so far
        self._done = 0  # the number of the last fsync that completed
        self._running = False

    def sync(self) -> None:
        with self._changed:
            needed = self._started + 1  # an fsync that starts from now on covers this caller
            while self._done < needed:
                if self._running:
                    self._changed.wait()
                    continue
                self._running = True
                self._started += 1
                mine = self._started
                try:
                    self._changed.release()
                    try:
                        fsops.fsync_fd(self._fd())
                    finally:
                        self._changed.acquire()
                    self._done = mine
                finally:
                    self._running = False
                    self._changed.notify_all()


def _bound(path: Path) -> bool:
    """True if `path` is bound to a scope, or is no target for `open` to refuse as such.

    A path that is not a directory, or whose private area is a link, is refused by `open`
    (`TargetInvalid`), whichever scope is asked for.
    """
    private = path / PRIVATE
    unusable = path.exists() and not path.is_dir()
    return unusable or private.is_symlink() or (private / IDENTITY).is_file()


def _is_slug(value: str) -> bool:
    try:
        check_slug(value)
    except InvalidName:
        return False
    return True


def _prepare_root(path: Path) -> Path:
    shown = str(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        # The operator's path is trusted as given (it may itself be a link, such as
        # ~/.agent/skills -> /data/skills); everything below it is not.
        root = path.resolve(strict=True)
    except OSError as exc:
        raise TargetInvalid(shown, "not_a_directory", str(exc)) from exc
    if not root.is_dir():
        raise TargetInvalid(shown, "not_a_directory")
    return root


def _private_dir(shown: str, name: str, parent_fd: int) -> int:
    try:
        fd, created = fsops.ensure_dir(name, dir_fd=parent_fd)
    except OSError as exc:
        raise TargetInvalid(
            shown, "private_area_not_a_directory", f"{name}: {exc.strerror or exc}"
        ) from exc
    if created:
        fsops.fsync_fd(parent_fd)
    return fd


def _take_lock(shown: str, private_fd: int) -> int:
    try:
        fd = os.open(
            LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=private_fd
        )
    except OSError as exc:
        raise TargetInvalid(shown, "lock_file_unusable", str(exc)) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise TargetBusy(shown) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def wait_until_free(path: Path | str) -> None:
    """Block until no reconciler holds the lock of the target at `path`, then return.

    The lock is taken and let go at once: the caller then opens the target (which may
    find it busy again, and wait again). Run it in a daemon thread: a process that is
    interrupted while it waits must be able to exit.
    """
    root_fd = os.open(Path(path).resolve(strict=True), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        private_fd = fsops.open_dir(PRIVATE, dir_fd=root_fd)
        try:
            fd = os.open(LOCK, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=private_fd)
        finally:
            os.close(private_fd)
    finally:
        os.close(root_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)


def _identity(shown: str, fds: dict[str, int], scope: Scope | None, mode: str | None) -> Identity:
    data = fsops.read_small(IDENTITY, fds[PRIVATE], limit=64 * 1024)
    if data is None:
        if scope is None:
            raise TargetInvalid(shown, "not_a_target", f"no {PRIVATE}/{IDENTITY} there")
        identity = Identity(str(uuid.uuid4()), scope.workspace, scope.agent, mode or "link")
        fsops.write_small(fds[TMP], fds[PRIVATE], IDENTITY, identity.dumps())
        return identity
    identity = Identity.loads(shown, data)
    if scope is None:
        return identity
    if (identity.workspace, identity.agent) != (scope.workspace, scope.agent):
        recorded = str(Scope(identity.workspace, identity.agent))
        raise TargetMismatch(shown, "scope", recorded, str(scope))
    if mode is not None and mode != identity.mode:
        raise TargetMismatch(shown, "mode", identity.mode, mode)
    return identity
