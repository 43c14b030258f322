"""Online garbage collection: reclaim every orphaned blob while writers run (docs/gc.md).

A run, each step idempotent so that a run killed anywhere is finished by the next:

1. retention (when a policy is configured): prune old versions, one locked transaction
   per skill (`registry/services/gc/retention.py`);
2. expired claims are deleted, a batch per transaction;
3. the rows are swept in digest order (keyset batches):
   - tx1 (short) locks the eligible rows (unreferenced, unclaimed, untouched for the grace
     period; PostgreSQL `FOR UPDATE SKIP LOCKED`), re-checks them and marks them
     `deleting`;
   - then a chunk at a time: tx2 (short) locks the rows `FOR UPDATE`, re-checks that each
     is still `deleting`, unreferenced and unclaimed, and *fences* it (`purge_expires_at`,
     `gc_purge_lease` + `gc_clock_skew` ahead); the objects are deleted with no
     transaction open; tx3 deletes the rows still under this run's fence. A writer that
     wants a digest meanwhile either resurrected the row to `pending` before tx2 (tx2
     leaves it alone), or finds it fenced: its claim changes nothing, its `confirm`
     refuses the digest and it claims again, until tx3 has removed the row and its fresh
     upload lands after the delete;
4. the store is listed (streamed) and every object without a row that is older than the
   grace period gets a `deleting` row (a conflict means a writer claimed it: skipped) and
   goes through tx2 and tx3;
5. a local store's abandoned temp files are swept (never one an upload still holds).

No transaction is open while the blob store is called, so on SQLite (one write lock for
the whole database) no writer waits on a blob-store round trip. A run starts a fenced
object's delete only in the first half of its lease; a run killed or stalled after tx2
leaves fenced rows that writers and later runs take over once the fence expires.

Memory is bounded by one batch of rows or one listing page. Runs are recorded in `gc_runs`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TypeVar, runtime_checkable

from sqlalchemy.ext.asyncio import AsyncConnection

from blobstore import BlobInfo, BlobStoreError
from registry.db import gc as db_gc
from registry.domain.retention import RetentionPolicy
from registry.errors import RegistryError
from registry.services.context import Context, blob_store_failed
from registry.services.gc import retention
from registry.services.gc.retention import RetentionReport

T = TypeVar("T")
R = TypeVar("R")


@runtime_checkable
class _SweepsTemp(Protocol):
    async def sweep_temp(self, older_than: datetime) -> int: ...


@dataclass(frozen=True)
class GcReport:
    """What a run reclaimed (or, with `dry_run`, would reclaim)."""

    run_id: int | None
    dry_run: bool
    grace_seconds: float
    started_at: datetime
    finished_at: datetime
    claims_expired: int
    blobs_reclaimed: int
    bytes_reclaimed: int
    untracked_reclaimed: int
    skipped: int
    repaired: int
    store_objects: int
    store_bytes: int
    temp_files_removed: int
    retention: RetentionReport | None


@dataclass
class _Tally:
    claims_expired: int = 0
    blobs_reclaimed: int = 0
    bytes_reclaimed: int = 0
    untracked_reclaimed: int = 0
    skipped: int = 0
    repaired: int = 0
    store_objects: int = 0
    store_bytes: int = 0
    store_listed: bool = False
    temp_files_removed: int = 0
    retention: RetentionReport | None = None

    def columns(self) -> dict[str, object]:
        return {
            "claims_expired": self.claims_expired,
            "versions_pruned": 0 if self.retention is None else self.retention.versions_pruned,
            "blobs_reclaimed": self.blobs_reclaimed,
            "bytes_reclaimed": self.bytes_reclaimed,
            "untracked_reclaimed": self.untracked_reclaimed,
            "store_objects": self.store_objects if self.store_listed else None,
            "store_bytes": self.store_bytes if self.store_listed else None,
        }


@dataclass(frozen=True, slots=True)
class _Deleted:
    digest: str
    stored_bytes: int | None  # None: there was no object (an upload that never happened)


def cutoffs_at(ctx: Context, now: datetime, grace: float) -> db_gc.Cutoffs:
    """The cutoffs of a run that starts at `now` with `grace` seconds."""
    return db_gc.Cutoffs(
        touched_before=now - timedelta(seconds=grace),
        claims_after=now - timedelta(seconds=ctx.settings.gc_clock_skew),
        now=now,
    )


async def collect(ctx: Context, *, grace: float | None = None, dry_run: bool = False) -> GcReport:
    """Run garbage collection once (retention first, when a policy is configured)."""
    grace = ctx.settings.gc_grace if grace is None else grace
    if grace < 0:
        raise ValueError(f"the grace period cannot be negative: {grace}")
    policy = RetentionPolicy(ctx.settings.retention_keep_versions, ctx.settings.retention_keep_days)
    started = ctx.clock.now()
    cutoffs = cutoffs_at(ctx, started, grace)
    tally = _Tally()
    if dry_run:
        try:
            await _plan(ctx, cutoffs, policy, tally)
        except BlobStoreError as exc:
            raise blob_store_failed(exc) from exc
        return _report(None, grace, started, ctx.clock.now(), tally, dry_run=True)

    async def start(conn: AsyncConnection) -> int:
        return await db_gc.start_run(conn, now=started, grace=grace)

    run_id = await ctx.write(start)
    try:
        if policy.enabled:
            tally.retention = await retention.prune(ctx, policy)
        await _expire_claims(ctx, cutoffs, tally)
        await _sweep_rows(ctx, cutoffs, tally)
        await _sweep_store(ctx, cutoffs, tally)
        await _sweep_temp(ctx, cutoffs, tally)
    except BaseException as exc:
        await ctx.shielded(_record_failure(ctx, run_id, tally, exc))
        raise
    finished = ctx.clock.now()

    async def end(conn: AsyncConnection) -> None:
        await db_gc.end_run(
            conn, run_id, outcome="finished", finished_at=finished, **tally.columns()
        )

    await ctx.write(end)
    return _report(run_id, grace, started, finished, tally, dry_run=False)


def _report(
    run_id: int | None,
    grace: float,
    started: datetime,
    finished: datetime,
    tally: _Tally,
    *,
    dry_run: bool,
) -> GcReport:
    return GcReport(
        run_id=run_id,
        dry_run=dry_run,
        grace_seconds=grace,
        started_at=started,
        finished_at=finished,
        claims_expired=tally.claims_expired,
        blobs_reclaimed=tally.blobs_reclaimed,
        bytes_reclaimed=tally.bytes_reclaimed,
        untracked_reclaimed=tally.untracked_reclaimed,
        skipped=tally.skipped,
        repaired=tally.repaired,
        store_objects=tally.store_objects,
        store_bytes=tally.store_bytes,
        temp_files_removed=tally.temp_files_removed,
        retention=tally.retention,
    )


async def _record_failure(ctx: Context, run_id: int, tally: _Tally, exc: BaseException) -> None:
    # Best effort: the database may be what failed. A run left `running` is harmless.
    now = ctx.clock.now()
    detail = f"{type(exc).__name__}: {exc}"[:2000]

    async def end(conn: AsyncConnection) -> None:
        await db_gc.end_run(
            conn, run_id, outcome="failed", finished_at=now, error=detail, **tally.columns()
        )

    with contextlib.suppress(RegistryError):
        await ctx.write(end)


# ---------------------------------------------------------------- the steps


async def _expire_claims(ctx: Context, cutoffs: db_gc.Cutoffs, tally: _Tally) -> None:
    limit = ctx.settings.gc_batch_size

    async def batch(conn: AsyncConnection) -> int:
        return await db_gc.expire_claims(conn, cutoffs, limit)

    while True:
        deleted = await ctx.write(batch)
        tally.claims_expired += deleted
        await ctx.hit("gc.claims_expired")
        if deleted < limit:
            return


async def _sweep_rows(ctx: Context, cutoffs: db_gc.Cutoffs, tally: _Tally) -> None:
    after = ""
    limit = ctx.settings.gc_batch_size
    while True:

        async def mark(conn: AsyncConnection, after: str = after) -> tuple[str | None, list[str]]:
            found = await db_gc.candidates(
                conn, after=after, cutoffs=cutoffs, limit=limit, lock=True
            )
            if not found:
                return None, []
            marked = await db_gc.mark_deleting(conn, [c.digest for c in found], cutoffs)
            return found[-1].digest, [c.digest for c in marked]

        last, marked = await ctx.write(mark)
        if last is None:
            return
        await ctx.hit("gc.marked")
        await _delete_marked(ctx, marked, cutoffs, tally)
        after = last


async def _sweep_store(ctx: Context, cutoffs: db_gc.Cutoffs, tally: _Tally) -> None:
    page: list[BlobInfo] = []
    try:
        async for info in ctx.blobs.iter_digests():
            tally.store_objects += 1
            tally.store_bytes += info.size
            if info.stored_at < cutoffs.touched_before:
                page.append(info)
            if len(page) >= ctx.settings.gc_batch_size:
                await _reclaim_untracked(ctx, page, cutoffs, tally)
                page = []
    except BlobStoreError as exc:
        raise blob_store_failed(exc) from exc
    if page:
        await _reclaim_untracked(ctx, page, cutoffs, tally)
    tally.store_listed = True


async def _reclaim_untracked(
    ctx: Context, page: Sequence[BlobInfo], cutoffs: db_gc.Cutoffs, tally: _Tally
) -> None:
    digests = [info.digest for info in page]

    async def known(conn: AsyncConnection) -> set[str]:
        return await db_gc.tracked(conn, digests)

    have_rows = await ctx.read(known)
    untracked = [db_gc.Candidate(i.digest, i.size) for i in page if i.digest not in have_rows]
    if not untracked:
        return
    now = ctx.clock.now()

    async def adopt(conn: AsyncConnection) -> list[str]:
        return await db_gc.adopt_untracked(conn, untracked, now)

    adopted = await ctx.write(adopt)
    await ctx.hit("gc.untracked_marked")
    await _delete_marked(ctx, adopted, cutoffs, tally, untracked=True)


async def _sweep_temp(ctx: Context, cutoffs: db_gc.Cutoffs, tally: _Tally) -> None:
    if isinstance(ctx.blobs, _SweepsTemp):
        try:
            tally.temp_files_removed += await ctx.blobs.sweep_temp(cutoffs.touched_before)
        except BlobStoreError as exc:
            raise blob_store_failed(exc) from exc


async def _delete_marked(
    ctx: Context,
    digests: Sequence[str],
    cutoffs: db_gc.Cutoffs,
    tally: _Tally,
    *,
    untracked: bool = False,
) -> None:
    chunk = ctx.settings.gc_delete_concurrency
    for start in range(0, len(digests), chunk):
        part = digests[start : start + chunk]
        await _delete_chunk(ctx, part, cutoffs, tally, untracked=untracked)


async def _delete_chunk(
    ctx: Context,
    digests: Sequence[str],
    cutoffs: db_gc.Cutoffs,
    tally: _Tally,
    *,
    untracked: bool,
) -> None:
    """tx2 fences the rows; the objects are deleted with no transaction open; tx3 drops the rows.

    A failure or cancellation between tx2 and tx3 leaves the rows fenced: no writer takes
    them back and no run selects them until the fence expires, by when no delete this run
    started can still be in flight.
    """
    settings = ctx.settings
    fenced_at = ctx.clock.now()
    until = fenced_at + timedelta(seconds=settings.gc_purge_lease + settings.gc_clock_skew)
    # The second half of the lease (and the clock skew) is the margin for a delete that
    # was started in time and is still in flight; no delete starts after this.
    last_start = fenced_at + timedelta(seconds=settings.gc_purge_lease / 2)

    async def fence(conn: AsyncConnection) -> db_gc.Fenced:
        rows = await db_gc.lock_and_recheck(conn, digests, cutoffs)
        await ctx.hit("gc.locked")
        return await db_gc.fence(conn, rows, until=until)

    fenced = await ctx.write(fence)
    await ctx.hit("gc.fenced")
    try:
        outcomes = await _bounded(
            fenced.digests, lambda d: _delete_object(ctx, d, last_start), len(fenced.digests)
        )
        # A referenced row cannot be `deleting` (tx1 re-checks references after its lock,
        # and `confirm` refuses `deleting`); if one is anyway, it goes back to `live` only
        # if its object is still there, else fsck reports it.
        restorable = [d for d in fenced.suspicious if await _stored(ctx, d)]
    except BlobStoreError as exc:
        raise blob_store_failed(exc) from exc
    deleted = [o for o in outcomes if o is not None]

    async def finish(conn: AsyncConnection) -> None:
        await db_gc.mark_live(conn, restorable)
        await db_gc.finish_purge(conn, [d.digest for d in deleted], cutoffs, until=until)

    await ctx.write(finish)
    await ctx.hit("gc.committed")
    for item in deleted:
        if item.stored_bytes is None:
            continue
        tally.blobs_reclaimed += 1
        tally.bytes_reclaimed += item.stored_bytes
        tally.untracked_reclaimed += int(untracked)
    tally.skipped += fenced.skipped + len(outcomes) - len(deleted)
    tally.repaired += len(restorable)


async def _delete_object(ctx: Context, digest: str, last_start: datetime) -> _Deleted | None:
    """Delete one fenced object; None if it is too late in the lease to start the delete.

    A row whose delete did not start stays fenced until its fence expires.
    """
    info = await ctx.blobs.stat(digest)
    if ctx.clock.now() > last_start:
        return None
    if info is not None:
        await ctx.blobs.delete(digest)
    await ctx.hit("gc.object_deleted")
    return _Deleted(digest, None if info is None else info.size)


async def _stored(ctx: Context, digest: str) -> bool:
    return await ctx.blobs.exists(digest)


async def _bounded(
    items: Sequence[T], run: Callable[[T], Awaitable[R]], concurrency: int
) -> list[R]:
    """`run` over `items`, at most `concurrency` at once; the first failure cancels the rest."""
    if not items:
        return []
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(item: T) -> R:
        async with gate:
            return await run(item)

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(item)) for item in items]
    except BaseExceptionGroup as failures:
        raise failures.exceptions[0] from None
    return [task.result() for task in tasks]


# ---------------------------------------------------------------- dry run


async def _plan(
    ctx: Context, cutoffs: db_gc.Cutoffs, policy: RetentionPolicy, tally: _Tally
) -> None:
    """Count what a run would reclaim now, changing nothing."""
    if policy.enabled:
        tally.retention = await retention.prune(ctx, policy, dry_run=True)

    async def expired(conn: AsyncConnection) -> int:
        return await db_gc.count_expired_claims(conn, cutoffs)

    tally.claims_expired = await ctx.read(expired)
    after, limit = "", ctx.settings.gc_batch_size
    while True:

        async def page(conn: AsyncConnection, after: str = after) -> list[db_gc.Candidate]:
            return await db_gc.candidates(
                conn, after=after, cutoffs=cutoffs, limit=limit, lock=False
            )

        found = await ctx.read(page)
        if not found:
            break
        stored = await _bounded(
            found, lambda c: ctx.blobs.stat(c.digest), ctx.settings.gc_delete_concurrency
        )
        for info in stored:
            if info is not None:
                tally.blobs_reclaimed += 1
                tally.bytes_reclaimed += info.size
        after = found[-1].digest
    await _plan_untracked(ctx, cutoffs, tally)


async def _plan_untracked(ctx: Context, cutoffs: db_gc.Cutoffs, tally: _Tally) -> None:
    page: list[BlobInfo] = []

    async def count(infos: list[BlobInfo]) -> None:
        digests = [i.digest for i in infos]

        async def known(conn: AsyncConnection) -> set[str]:
            return await db_gc.tracked(conn, digests)

        have_rows = await ctx.read(known)
        for info in infos:
            if info.digest not in have_rows:
                tally.blobs_reclaimed += 1
                tally.bytes_reclaimed += info.size
                tally.untracked_reclaimed += 1

    async for info in ctx.blobs.iter_digests():
        tally.store_objects += 1
        tally.store_bytes += info.size
        if info.stored_at < cutoffs.touched_before:
            page.append(info)
        if len(page) >= ctx.settings.gc_batch_size:
            await count(page)
            page = []
    if page:
        await count(page)
    tally.store_listed = True
