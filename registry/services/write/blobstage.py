"""The blob stage of a write: claim the digests, then upload what is not stored yet.

Claims come first, in a short transaction of their own, so garbage collection keeps every
digest the write is about to reference (registry/db/blobs.py, docs/gc.md). Uploads run in
parallel, bounded by `upload_concurrency`, and only a put that returned counts as stored.
No blob I/O happens under the workspace lock: this stage ends before the publish
transaction begins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from blobstore import BlobStoreError
from registry.db import blobs as db_blobs
from registry.db import budget as write_budget
from registry.db import documents as db_documents
from registry.db import scans as db_scans
from registry.domain.model import Scope
from registry.errors import StorageUnavailable
from registry.services.context import Context, blob_store_failed
from registry.services.write import content


async def claim_and_upload(
    ctx: Context,
    scope: Scope,
    write_id: str,
    to_store: Mapping[str, bytes],
    *,
    scanned_clean: Sequence[str] = (),
    document: tuple[str, Sequence[str]] | None = None,
) -> frozenset[str]:
    """Claim the digests, upload those not already live; return what this write stored.

    The claim transaction also records the digests the content check found clean, and
    `document` (a `SKILL.md` digest and its triggers) in the SKILL.md index when that
    digest is among the claimed ones (a `SKILL.md` the skill already had is indexed).
    """
    if not to_store:
        await content.remember_clean(ctx, scanned_clean, scope.workspace)
        return frozenset()
    now = ctx.clock.now()
    expires = now + timedelta(seconds=ctx.settings.claim_ttl)
    sizes = {d: len(data) for d, data in to_store.items()}
    scanner = ctx.scanner.fingerprint
    if document is not None and document[0] not in sizes:
        document = None  # a `SKILL.md` the skill already had is indexed already

    async def claim(conn: AsyncConnection) -> dict[str, str]:
        await ctx.hit("write.claiming")
        statuses = await db_blobs.claim(
            conn,
            write_id=write_id,
            workspace=scope.workspace,
            sizes=sizes,
            now=now,
            expires_at=expires,
        )
        await db_scans.remember_clean(conn, scanned_clean, scanner, now)
        if document is not None:
            await db_documents.remember(conn, document[0], document[1], now)
        return statuses

    # One short write transaction, the write's first: idempotent as a whole, so retried.
    statuses = await ctx.write(claim, workspace=scope.workspace)
    await ctx.hit("write.claimed")
    needed = sorted(d for d in to_store if statuses.get(d) != "live")
    await upload(ctx, {d: to_store[d] for d in needed})
    await ctx.hit("write.uploaded")
    return frozenset(needed)


async def upload(ctx: Context, blobs: Mapping[str, bytes]) -> None:
    """Put every blob, at most `upload_concurrency` at a time; the first failure stops all.

    The uploads of one write finish within `upload_timeout` (and the write's own deadline),
    or the write fails with `StorageUnavailable` and releases its claims: a store that
    accepts connections and never answers cannot hold a write for long.
    """
    if not blobs:
        return
    budget = write_budget.current()
    limit = ctx.settings.upload_timeout
    if budget is not None:
        limit = max(0.0, min(limit, budget.left()))
    try:
        async with asyncio.timeout(limit):
            await ctx.blobs.put_many(blobs, concurrency=ctx.settings.upload_concurrency)
    except BlobStoreError as exc:
        raise blob_store_failed(exc) from exc
    except TimeoutError:
        raise StorageUnavailable(
            "blob store", f"{len(blobs)} uploads did not finish within {limit:.3g}s"
        ) from None
