"""Bulk seeding for the reconcile and GC scenarios: rows by the thousand, objects on disk.

Publishing 1,000 skills or 100,000 blobs through the write path would spend the time
budget on set-up and measure nothing these scenarios are about. So the rows a committed
write would leave (live blob rows, manifests and their entries, skills at head 1, their
first versions) are inserted in bulk with SQL, and the objects are written straight into
a local store's layout (`ab/cd/<digest>`, read-only, as the store leaves them) without
fsync. The result is a registry that `fsck` finds clean: the scenarios check that once
per seeding code path, so a seeding bug fails the run instead of skewing its figures.

Timestamps are backdated (`AGE`): the rows and objects look like a registry that has been
in use, so garbage collection's grace period has passed for everything seeded.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from blobstore.digest import compute_digest, sharded_path
from registry.db.tables import Blob, Manifest, ManifestEntry, Skill, Version
from registry.domain.manifest import Manifest as DomainManifest
from registry.domain.manifest import build_manifest
from registry.domain.model import PackageFile, Scope

AGE: Final = timedelta(days=2)
_BATCH: Final = 2000
_OBJECT_MODE: Final = 0o444


def manifest_of(files: Mapping[str, bytes]) -> DomainManifest:
    """The manifest the write path would build for `files` (none executable)."""
    return build_manifest({path: PackageFile(data) for path, data in files.items()})


def write_objects(root: Path, blobs: Mapping[str, bytes], *, mtime: float) -> int:
    """Write `blobs` (digest -> bytes) into the local store at `root`; skip those present.

    No fsync (set-up, not a measured write). `mtime` dates the objects, as the store's
    listing reports it. Returns how many objects were written.
    """
    written = 0
    made: set[Path] = set()
    for digest, data in blobs.items():
        path = root / sharded_path(digest)
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        if path.exists():
            continue
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _OBJECT_MODE)
        try:
            os.write(fd, data)
            os.utime(fd, (mtime, mtime))
        finally:
            os.close(fd)
        written += 1
    return written


def _batches(rows: Sequence[Any], size: int = _BATCH) -> Iterable[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


async def _insert(
    conn: AsyncConnection, table: Any, rows: Sequence[dict[str, Any]], *, keep: str | None = None
) -> None:
    """Insert `rows` into `table`; with `keep` (a unique column), conflicting rows are skipped.

    On PostgreSQL new rows go through `COPY` in the connection's transaction: the driver's
    executemany sends them one by one (~100 µs a row; 20 s for the GC scenario's seed).
    """
    if not rows:
        return
    if conn.dialect.name == "postgresql" and keep is None:
        columns = list(rows[0])
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection
        names = ", ".join(columns)
        statement = f"COPY {table.name} ({names}) FROM STDIN"
        async with driver.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                await copy.write_row([row[c] for c in columns])
        return
    dialect: Any
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql as dialect  # noqa: PLC0415
    else:
        from sqlalchemy.dialects import sqlite as dialect  # noqa: PLC0415
    statement = dialect.insert(table)
    if keep is not None:
        statement = statement.on_conflict_do_nothing(index_elements=[keep])
    for batch in _batches(rows):
        await conn.execute(statement, list(batch))


async def insert_blob_rows(
    conn: AsyncConnection, blobs: Mapping[str, int], *, at: datetime, restore: bool = False
) -> None:
    """Live blob rows (digest -> size), as committed writes leave them.

    With `restore`, rows that exist are kept (putting back what a GC run deleted).
    """
    rows = [
        {"digest": d, "size": s, "status": "live", "created_at": at, "touched_at": at}
        for d, s in blobs.items()
    ]
    await _insert(conn, Blob.__table__, rows, keep="digest" if restore else None)


async def insert_packages(
    conn: AsyncConnection, scope: Scope, manifests: Mapping[str, DomainManifest], *, at: datetime
) -> dict[str, int]:
    """Skills of `scope` at head 1, each with its first version and manifest; slug -> id.

    The blob rows the manifests name must exist (foreign keys); `insert_blob_rows` first.
    """
    by_hash = {m.hash: m for m in manifests.values()}
    await _insert(
        conn,
        Manifest.__table__,
        [
            {
                "workspace": scope.workspace,
                "hash": h,
                "file_count": m.file_count,
                "total_size": m.total_size,
                "created_at": at,
            }
            for h, m in by_hash.items()
        ],
    )
    manifest_ids = await _ids(
        conn, Manifest.hash, Manifest.id, list(by_hash), Manifest.workspace == scope.workspace
    )
    entries = [
        {
            "manifest_id": manifest_ids[h],
            "path": e.path,
            "digest": e.digest,
            "size": e.size,
            "executable": e.executable,
        }
        for h, m in by_hash.items()
        for e in m.entries
    ]
    await _insert(conn, ManifestEntry.__table__, entries)
    skills = [
        {
            "workspace": scope.workspace,
            "agent": scope.agent,
            "slug": slug,
            "kind": "saved",
            "head": 1,
            "head_size": m.total_size,
            "state": "active",
            "auto_improve": True,
            "learning_paused": False,
            "use_paused": False,
            "created_at": at,
            "updated_at": at,
        }
        for slug, m in manifests.items()
    ]
    await _insert(conn, Skill.__table__, skills)
    skill_ids = await _ids(
        conn,
        Skill.slug,
        Skill.id,
        list(manifests),
        sa.and_(Skill.workspace == scope.workspace, Skill.agent == scope.agent),
    )
    versions = [
        {
            "workspace": scope.workspace,
            "skill_id": skill_ids[slug],
            "number": 1,
            "parent": None,
            "origin": "import",
            "actor": "seed",
            "message": "",
            "restored_from": None,
            "manifest_id": manifest_ids[m.hash],
            "manifest_hash": m.hash,
            "file_count": m.file_count,
            "total_size": m.total_size,
            "write_id": None,
            "created_at": at,
        }
        for slug, m in manifests.items()
    ]
    await _insert(conn, Version.__table__, versions)
    return skill_ids


async def _ids(
    conn: AsyncConnection,
    key: Any,
    column: Any,
    keys: Sequence[str],
    where: sa.ColumnElement[bool],
) -> dict[str, int]:
    """`key` -> `column` for the rows whose `key` is in `keys` (and `where`)."""
    found: dict[str, int] = {}
    for batch in _batches(keys, 500):
        rows = await conn.execute(sa.select(key, column).where(where, key.in_(batch)))
        found.update({row[0]: row[1] for row in rows})
    return found


async def seed_packages(
    engine: AsyncEngine,
    store_root: Path,
    scope: Scope,
    packages: Mapping[str, Mapping[str, bytes]],
    *,
    at: datetime,
) -> dict[str, DomainManifest]:
    """Skills of `scope` with the given packages: objects, blob rows, manifests, versions."""
    manifests = {slug: manifest_of(files) for slug, files in packages.items()}
    blobs = {
        entry.digest: files[entry.path]
        for slug, files in packages.items()
        for entry in manifests[slug].entries
    }
    write_objects(store_root, blobs, mtime=at.timestamp())
    async with engine.begin() as conn:
        await insert_blob_rows(conn, {d: len(b) for d, b in blobs.items()}, at=at)
        await insert_packages(conn, scope, manifests, at=at)
    return manifests


def blob_bytes(tag: str, index: int, size: int) -> bytes:
    """`size` bytes of a small object, unique to (`tag`, `index`)."""
    head = f"{tag} blob {index:07d}\n".encode()
    return (head * (size // len(head) + 1))[:size]


async def seed_blobs(
    engine: AsyncEngine,
    store_root: Path,
    scope: Scope,
    blobs: Sequence[bytes],
    *,
    referenced: int,
    files_per_package: int,
    at: datetime,
) -> dict[str, DomainManifest]:
    """Store `blobs` with rows; the first `referenced` go into packages, the rest are orphans.

    The referenced blobs are grouped into packages of `files_per_package` files (a skill at
    head 1 each); the others have a live row that nothing references: what a failed write
    or a pruned version leaves behind.
    """
    packages: dict[str, dict[str, bytes]] = {}
    for number, start in enumerate(range(0, referenced, files_per_package)):
        chunk = blobs[start : min(start + files_per_package, referenced)]
        files = {"SKILL.md": chunk[0]}
        files.update({f"references/part-{i:03d}.md": data for i, data in enumerate(chunk[1:], 1)})
        packages[f"blobs-{number:05d}"] = files
    manifests = await seed_packages(engine, store_root, scope, packages, at=at)
    await seed_orphans(engine, store_root, blobs[referenced:], at=at)
    return manifests


async def seed_orphans(
    engine: AsyncEngine, store_root: Path, blobs: Sequence[bytes], *, at: datetime
) -> None:
    """Objects with a live row that no manifest references (idempotent: restores them)."""
    stored = {compute_digest(data): data for data in blobs}
    write_objects(store_root, stored, mtime=at.timestamp())
    async with engine.begin() as conn:
        await insert_blob_rows(conn, {d: len(b) for d, b in stored.items()}, at=at, restore=True)
