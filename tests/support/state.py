"""Snapshots of everything a write could touch, for "nothing changed" assertions."""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from blobstore import BlobStore
from registry.api import Registry
from registry.db.tables import Base

# Tables whose rows a refused or failed write must leave exactly as they were.
# scan_results caches clean verdicts and may grow; blob_claims are checked separately.
PACKAGE_TABLES = (
    "skills",
    "versions",
    "version_sources",
    "manifests",
    "manifest_entries",
    "events",
)
# A refused write (refused before it stores anything) changes none of these either:
# the package tables, the blob bookkeeping and the scan cache.
WRITE_TABLES = (*PACKAGE_TABLES, "blobs", "blob_claims", "scan_results")


async def table_rows(registry: Registry, table: str) -> list[tuple[Any, ...]]:
    meta = Base.metadata.tables[table]
    async with registry.engine.connect() as conn:
        rows = await conn.execute(sa.select(meta).order_by(*meta.primary_key.columns))
        return [tuple(r) for r in rows]


async def db_state(registry: Registry, tables: tuple[str, ...] = PACKAGE_TABLES) -> dict[str, Any]:
    return {t: await table_rows(registry, t) for t in tables}


async def store_digests(store: BlobStore) -> set[str]:
    return {info.digest async for info in store.iter_digests()}


async def live_claims(registry: Registry) -> int:
    async with registry.engine.connect() as conn:
        return int(await conn.scalar(sa.text("SELECT count(*) FROM blob_claims")) or 0)


async def blob_rows(registry: Registry) -> dict[str, str]:
    async with registry.engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT digest, status FROM blobs"))
        return {r.digest: r.status for r in rows}


async def waiting_for_advisory_lock(source: AsyncEngine | AsyncConnection) -> bool:
    """Whether some transaction waits for an advisory lock, as the server sees it.

    `source`: a connection (asked in its own transaction), or an engine (on a fresh one).
    """
    if isinstance(source, AsyncEngine):
        async with source.connect() as conn:
            return await waiting_for_advisory_lock(conn)
    waiting = await source.scalar(
        sa.text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
    )
    return bool(waiting)


async def until_waiting_for_advisory_lock(
    source: AsyncEngine | AsyncConnection, *, timeout: float = 10.0
) -> None:
    """Return once the server shows a transaction waiting for an advisory lock.

    Polled in 10 ms steps, at most `timeout` seconds: the server's lock table has no event
    to wait for.
    """
    async with asyncio.timeout(timeout):
        while not await waiting_for_advisory_lock(source):
            await asyncio.sleep(0.01)
