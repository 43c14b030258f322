"""Storage figures: what the registry stores, references and could reclaim, and the last GC.

Cheap enough for `skillreg status`: aggregate queries over the blob rows and the run log,
no store listing. (The store as listed is reported by each GC run and by fsck.)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import gc as db_gc
from registry.services.context import Context
from registry.services.gc.collect import cutoffs_at


@dataclass(frozen=True)
class LastGc:
    """The most recent GC run that finished."""

    run_id: int
    started_at: datetime
    finished_at: datetime
    grace_seconds: float
    blobs_reclaimed: int
    bytes_reclaimed: int
    untracked_reclaimed: int
    claims_expired: int
    versions_pruned: int
    store_objects: int | None
    store_bytes: int | None


@dataclass(frozen=True)
class GcFigures:
    """Blob figures now, and what GC has done.

    `bytes_stored` counts every blob row (referenced, in flight, or orphaned);
    `orphan_bytes` the rows no manifest references (a write in flight holds some of
    them); `reclaimable_bytes` the orphans a GC run with the configured grace period
    would delete now.
    """

    blobs_stored: int
    bytes_stored: int
    blobs_referenced: int
    bytes_referenced: int
    orphan_blobs: int
    orphan_bytes: int
    reclaimable_blobs: int
    reclaimable_bytes: int
    claims: int
    gc_runs: int
    blobs_reclaimed_total: int
    bytes_reclaimed_total: int
    last_gc_at: datetime | None
    last_gc: LastGc | None


async def gc_figures(ctx: Context) -> GcFigures:
    """The figures, read in one transaction."""
    cutoffs = cutoffs_at(ctx, ctx.clock.now(), ctx.settings.gc_grace)

    async def work(conn: AsyncConnection) -> GcFigures:
        totals = await db_gc.blob_totals(conn, cutoffs)
        runs, blobs_total, bytes_total = await db_gc.run_totals(conn)
        last = await db_gc.last_run(conn)
        last_gc = None
        if last is not None and last.finished_at is not None:
            last_gc = LastGc(
                run_id=last.id,
                started_at=last.started_at,
                finished_at=last.finished_at,
                grace_seconds=last.grace_seconds,
                blobs_reclaimed=last.blobs_reclaimed,
                bytes_reclaimed=last.bytes_reclaimed,
                untracked_reclaimed=last.untracked_reclaimed,
                claims_expired=last.claims_expired,
                versions_pruned=last.versions_pruned,
                store_objects=last.store_objects,
                store_bytes=last.store_bytes,
            )
        return GcFigures(
            blobs_stored=totals.blobs,
            bytes_stored=totals.bytes,
            blobs_referenced=totals.referenced_blobs,
            bytes_referenced=totals.referenced_bytes,
            orphan_blobs=totals.blobs - totals.referenced_blobs,
            orphan_bytes=totals.bytes - totals.referenced_bytes,
            reclaimable_blobs=totals.reclaimable_blobs,
            reclaimable_bytes=totals.reclaimable_bytes,
            claims=totals.claims,
            gc_runs=runs,
            blobs_reclaimed_total=blobs_total,
            bytes_reclaimed_total=bytes_total,
            last_gc_at=None if last_gc is None else last_gc.finished_at,
            last_gc=last_gc,
        )

    return await ctx.read(work)
