"""The references every write is measured against, in the same loop as the registry.

- `GitReference`: `git add -A && git commit` of the same tree in a scratch repository. The
  tree is written before the clock starts (the registry gets the bytes in memory too), and
  git is told to fsync what a commit makes durable (`core.fsync=committed`) since every
  other contender here is durable; automatic gc is off so it never lands inside a sample.
- `naive_write`: a writer that writes the files one at a time into a folder, each with
  fsync: what "save the skill folder" does without a registry.
- `durable_copy`: the same files with the durability a materialised skill has, and
  nothing else: per skill, its files written and fsynced into a private staging folder,
  every directory of it fsynced, the folder renamed into place in one step and the
  parent fsynced; one skill after the other, as a copying script would. No hashing, no
  verification, no records.
- `floor`: the storage floor of a registry write: the same number of blob puts of the same
  sizes, through the store's `put_many` as the registry's uploads go (in parallel up to the
  registry's upload concurrency; a local store takes the whole batch in one worker-thread
  hop), into the backend's own store, then one empty transaction that takes the same
  workspace lock. Digests are computed before the clock starts; the store still verifies
  each put, as it does for the registry.
- `checked_floor`: the floor plus the work a write cannot skip before it stores anything:
  hashing every file (`build_manifest`) and the content check of every file
  (`scan_package` with the `DefaultScanner`), on the same kind of package, in the caller's
  thread. The floor leaves both out, so at 1 MiB files most of a publish is work the floor
  does not do; this reference shows what is left above both.
- `durable_locked_transaction`: the floor of the lock hold itself: a transaction that takes
  the workspace lock, writes one row and commits, so its commit waits for the log's flush
  as a publish's does (the empty locked transaction writes nothing, and its commit flushes
  nothing). The row goes to `bench_probe`, a table the bench adds to its own database.
- `cas_transaction`: the yardstick issue 14 names for the lock hold, "a well-written CAS
  transaction (advisory lock, read head, conditional update, 10 inserts)": the workspace
  lock, the head read, its compare-and-swap, ten rows in one multi-row insert and a
  durable commit, each statement through SQLAlchemy's `AsyncConnection.execute` as every
  statement of the registry's, on `bench_head` and `bench_rows`, tables of the bench's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.content import write_tree
from blobstore import BlobStore
from blobstore.digest import compute_digest
from registry.db.engine import write_connection
from registry.db.locks import lock_workspace
from registry.domain.manifest import build_manifest
from registry.domain.model import PackageFile
from registry.domain.scanner import DefaultScanner, scan_package

_GIT_CONFIG: Final = (
    ("user.name", "bench"),
    ("user.email", "bench@example.invalid"),
    ("core.fsync", "committed"),
    ("core.fsyncMethod", "fsync"),
    ("gc.auto", "0"),
    ("commit.gpgsign", "false"),
)


class GitReference:
    """A scratch git repository whose work tree is replaced by each package."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        self._git("init", "-q", "-b", "main")
        for key, value in _GIT_CONFIG:
            self._git("config", key, value)
        self._count = 0

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", *args], cwd=self.root, check=True, capture_output=True, timeout=600
        )

    def replace_tree(self, files: Mapping[str, bytes]) -> None:
        """Make the work tree hold exactly `files` (untimed set-up)."""
        for child in self.root.iterdir():
            if child.name == ".git":
                continue
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
        write_tree(self.root, dict(files))

    def add_package(self, slug: str, files: Mapping[str, bytes]) -> None:
        """Write a package's tree into the folder `slug` of the work tree (untimed set-up)."""
        write_tree(self.root / slug, dict(files))

    def write_file(self, path: str, data: bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def commit(self) -> float:
        """Time `git add -A && git commit` of the work tree as it is (seconds)."""
        self._count += 1
        start = time.perf_counter()
        self._git("add", "-A")
        # An unchanged tree makes `git commit` exit 1 ("nothing to commit"): that is the
        # no-op re-save's reference, so the exit code is not checked.
        subprocess.run(
            ["git", "commit", "-q", "-m", f"save {self._count}"],
            cwd=self.root,
            check=False,
            capture_output=True,
            timeout=600,
        )
        return time.perf_counter() - start


def naive_write(root: Path, files: Mapping[str, bytes]) -> float:
    """Time writing `files` under `root` one at a time, each fsynced (seconds)."""
    start = time.perf_counter()
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    return time.perf_counter() - start


def durable_copy(root: Path, packages: Mapping[str, Mapping[str, bytes]]) -> float:
    """Time `durable_copy` (the module docstring) of `packages` into `root` (seconds)."""
    start = time.perf_counter()
    staging = root / ".staging"
    staging.mkdir(parents=True)
    _fsync_dir(root)
    for slug, files in packages.items():
        folder = staging / slug
        folder.mkdir()
        directories = {folder}
        for path, data in files.items():
            target = folder / path
            if target.parent not in directories:
                target.parent.mkdir(parents=True, exist_ok=True)
                directories.add(target.parent)
            with target.open("wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        for directory in sorted(directories, key=lambda d: -len(d.parts)):
            _fsync_dir(directory)  # deepest first: a folder's entries before the folder
        folder.rename(root / slug)
        _fsync_dir(root)
    return time.perf_counter() - start


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def digests_of(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """Digest -> bytes for the floor's puts (computed before the clock starts)."""
    return {compute_digest(data): data for data in files.values()}


async def empty_locked_transaction(engine: AsyncEngine, workspace: str) -> None:
    """One write transaction that takes the workspace lock and commits nothing."""
    await _locked_transaction(engine, workspace, row=False)


_PROBE: Final = sa.table("bench_probe", sa.column("n", sa.Integer))
_HEAD: Final = sa.table("bench_head", sa.column("id", sa.Integer), sa.column("head", sa.Integer))
_ROWS: Final = sa.table(
    "bench_rows",
    sa.column("head", sa.Integer),
    sa.column("n", sa.Integer),
    sa.column("path", sa.Text),
    sa.column("digest", sa.Text),
)
_READ_HEAD: Final = sa.select(_HEAD.c.head).where(_HEAD.c.id == 1)
_MOVE_HEAD: Final = (
    sa.update(_HEAD)
    .where(_HEAD.c.id == 1, _HEAD.c.head == sa.bindparam("expected"))
    .values(head=sa.bindparam("expected") + 1)
)
# Ten rows in one statement (a module constant, compiled once): only the head varies.
_INSERT_ROWS: Final = sa.insert(_ROWS).values(
    [
        {"head": sa.bindparam("head"), "n": n, "path": f"scripts/file-{n}.md", "digest": "0" * 64}
        for n in range(10)
    ]
)


async def add_probe_table(engine: AsyncEngine) -> None:
    """Create the tables the locked-transaction references write to (idempotent)."""
    async with engine.begin() as conn:
        await conn.execute(sa.text("CREATE TABLE IF NOT EXISTS bench_probe (n INTEGER)"))
        await conn.execute(
            sa.text("CREATE TABLE IF NOT EXISTS bench_head (id INTEGER PRIMARY KEY, head INTEGER)")
        )
        await conn.execute(
            sa.text(
                "CREATE TABLE IF NOT EXISTS bench_rows (head INTEGER, n INTEGER, path TEXT, "
                "digest TEXT, PRIMARY KEY (head, n))"
            )
        )
        if (await conn.execute(_READ_HEAD)).first() is None:
            await conn.execute(sa.insert(_HEAD).values(id=1, head=0))


async def durable_locked_transaction(engine: AsyncEngine, workspace: str) -> None:
    """One write transaction that takes the workspace lock, writes one row and commits it."""
    await _locked_transaction(engine, workspace, row=True)


async def cas_transaction(engine: AsyncEngine, workspace: str) -> None:
    """Lock, read the head, move it by compare-and-swap, insert ten rows, commit durably."""
    async with engine.connect() as raw:
        conn = await write_connection(raw)
        async with conn.begin():
            await lock_workspace(conn, workspace)
            head = (await conn.execute(_READ_HEAD)).scalar_one()
            moved = await conn.execute(_MOVE_HEAD, {"expected": head})
            if moved.rowcount != 1:
                msg = f"the compare-and-swap from head {head} found another head"
                raise RuntimeError(msg)
            await conn.execute(_INSERT_ROWS, {"head": head + 1})


async def _locked_transaction(engine: AsyncEngine, workspace: str, *, row: bool) -> None:
    async with engine.connect() as raw:
        conn = await write_connection(raw)
        async with conn.begin():
            await lock_workspace(conn, workspace)
            if row:
                await conn.execute(sa.insert(_PROBE).values(n=1))


async def floor(
    store: BlobStore,
    engine: AsyncEngine,
    workspace: str,
    blobs: Mapping[str, bytes],
    *,
    concurrency: int,
) -> float:
    """Time the batched puts of `blobs` plus one empty locked transaction (seconds)."""
    start = time.perf_counter()
    await store.put_many(blobs, concurrency=concurrency)
    await empty_locked_transaction(engine, workspace)
    return time.perf_counter() - start


async def checked_floor(
    store: BlobStore,
    engine: AsyncEngine,
    workspace: str,
    files: Mapping[str, bytes],
    *,
    concurrency: int,
) -> float:
    """Hash and scan `files`, then `floor` their blobs (seconds, the checks included)."""
    start = time.perf_counter()
    package = {path: PackageFile(data) for path, data in files.items()}
    manifest = build_manifest(package)
    if scan_package(DefaultScanner(), package):
        msg = "the checked floor's package holds a finding"
        raise RuntimeError(msg)
    blobs = {entry.digest: files[entry.path] for entry in manifest.entries}
    checks = time.perf_counter() - start
    return checks + await floor(store, engine, workspace, blobs, concurrency=concurrency)
