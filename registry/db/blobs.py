"""Blob rows and claims: the database half of "store every blob first".

A write *claims* the digests it is about to upload before it uploads them, in a short
transaction of its own: the blob row is created (`pending`) or touched, and a claim row
names the write. Garbage collection never deletes a blob that an unexpired claim, a
manifest row or a proposal references. It re-checks that under the row lock `claim` also
takes and then *fences* the row before it deletes the object outside any transaction; a
claim never lands on a fenced row, so a digest a writer claims is never removed
underneath it (docs/gc.md).

A write never deletes a blob. On failure it only releases its claims; GC reclaims what
nobody references once the grace period has passed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import Blob, BlobClaim


def upsert(conn: AsyncConnection, table: type[Any]) -> Any:
    """The dialect's `INSERT` construct that supports `ON CONFLICT`."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


async def claim(
    conn: AsyncConnection,
    *,
    write_id: str,
    workspace: str,
    sizes: Mapping[str, int],
    now: datetime,
    expires_at: datetime,
) -> dict[str, str]:
    """Claim `sizes`' digests for `write_id`; return each digest's status after the claim.

    A `live` digest is stored and confirmed: the writer need not upload it. A `pending`
    one must be uploaded (put is idempotent, so two writers may both do it). A `deleting`
    one that GC has only marked is resurrected to `pending` here, under the row lock GC
    also takes, and uploaded again: GC re-checks the status under that lock before it
    fences the row, and leaves it alone.

    A *fenced* row (GC is deleting its object now, outside any transaction, and may do so
    after this write uploads it) stays `deleting` and gets no claim: the caller uploads in
    vain and its `confirm` refuses the digest, so it claims again, and once GC has
    finished (the row is gone) the claim inserts a fresh row and the upload that follows
    lands after GC's delete. A fence that has expired (its GC run died or stalled; it
    starts no delete late in its lease) is lifted here and the row resurrected.
    """
    if not sizes:
        return {}
    rows = [
        {"digest": d, "size": size, "status": "pending", "created_at": now, "touched_at": now}
        for d, size in sorted(sizes.items())
    ]
    insert = upsert(conn, Blob)
    # In an upsert's SET, column references are the existing row's values.
    unfenced = sa.or_(Blob.purge_expires_at.is_(None), Blob.purge_expires_at <= now)
    statement = insert.values(rows).on_conflict_do_update(
        index_elements=[Blob.digest],
        set_={
            "touched_at": insert.excluded.touched_at,
            "status": sa.case(
                (sa.and_(Blob.status == "deleting", unfenced), "pending"), else_=Blob.status
            ),
            "purge_expires_at": sa.case((unfenced, None), else_=Blob.purge_expires_at),
        },
    )
    result = await conn.execute(statement.returning(Blob.digest, Blob.status))
    statuses = {row.digest: row.status for row in result}
    # Whatever is still `deleting` is fenced. The upsert holds the row lock until commit
    # (PostgreSQL), so GC cannot lift the fence and delete the row underneath this claim.
    claimable = sorted(d for d in sizes if statuses[d] != "deleting")
    if not claimable:
        return statuses
    claims = upsert(conn, BlobClaim).values(
        [
            {
                "write_id": write_id,
                "digest": d,
                "workspace": workspace,
                "created_at": now,
                "expires_at": expires_at,
            }
            for d in claimable
        ]
    )
    # A write that claims again (its publish found a claim lapsed) renews the expiry.
    await conn.execute(
        claims.on_conflict_do_update(
            index_elements=["write_id", "digest"],
            set_={"expires_at": claims.excluded.expires_at},
        )
    )
    return statuses


async def release(conn: AsyncConnection, write_id: str) -> int:
    """Drop every claim of `write_id`; return how many there were."""
    result = await conn.execute(sa.delete(BlobClaim).where(BlobClaim.write_id == write_id))
    return int(result.rowcount)


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Digests a publish found missing or being deleted (GC won a race against a slow write)."""

    digests: tuple[str, ...]


async def confirm(
    conn: AsyncConnection,
    *,
    write_id: str,
    uploaded: Collection[str],
    referenced: Collection[str],
    now: datetime,
) -> Unavailable | None:
    """Inside the publish transaction: check every referenced blob, mark uploads `live`.

    A digest this write uploaded must have a row that is not `deleting` and this write's
    claim on it must still be unexpired; any other digest (deduplicated against the head
    or found `live` at claim time) must be `live`, which only a committed write that
    verified the object can make it. A row GC is deleting the object of (fenced) is
    `deleting` and carries no claim of this write's, so it is refused either way.

    Why the claim: a write that stalled past its claim's expiry may have had its upload
    deleted by GC, and the digest claimed afresh (`pending`) by another write that has
    not uploaded it yet. The row alone cannot tell that `pending` from this write's own;
    an unexpired claim can, because GC deletes nothing while an unexpired claim names
    it (docs/gc.md, "Interleavings").

    On PostgreSQL the rows are locked in digest order until commit (`FOR NO KEY UPDATE`
    when this write flips some to `live`, else `FOR SHARE`), so GC's delete, which
    takes the row lock `FOR UPDATE`, waits for this commit and then sees the new
    reference, and two publishes sharing digests cannot deadlock. Returns the digests
    that failed the check (the caller claims and uploads again), or None.
    """
    wanted = sorted(set(referenced))
    if not wanted:
        return None
    mine = set(uploaded)
    held: set[str] = set()
    if mine:
        held = set(
            (
                await conn.execute(
                    sa.select(BlobClaim.digest).where(
                        BlobClaim.write_id == write_id,
                        BlobClaim.digest.in_(sorted(mine)),
                        BlobClaim.expires_at > now,
                    )
                )
            ).scalars()
        )
    query = sa.select(Blob.digest, Blob.status).where(Blob.digest.in_(wanted))
    if conn.dialect.name == "postgresql":
        exclusive = bool(mine)
        query = query.order_by(Blob.digest).with_for_update(read=not exclusive, key_share=exclusive)
    found = {row.digest: row.status for row in await conn.execute(query)}
    bad = tuple(d for d in wanted if not _usable(d, found.get(d), mine=mine, held=held))
    if bad:
        return Unavailable(bad)
    to_confirm = sorted(d for d in mine if found.get(d) == "pending")
    if to_confirm:
        await conn.execute(sa.update(Blob).where(Blob.digest.in_(to_confirm)).values(status="live"))
    return None


def _usable(digest: str, status: str | None, *, mine: set[str], held: set[str]) -> bool:
    if status is None or status == "deleting":
        return False
    if digest in mine:
        return status == "live" or digest in held
    return status == "live"
