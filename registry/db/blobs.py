"""Blob rows and claims: the database half of "store every blob first".

A write *claims* the digests it is about to upload before it uploads them, in a short
transaction of its own: the blob row is created (`pending`) or touched, and a claim row
names the write. Garbage collection never deletes a blob that an unexpired claim, a
manifest row or a proposal references, and it takes the same row lock as `claim` before it
deletes, so a digest a writer claims is never removed underneath it (docs/gc.md).

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
    one is resurrected to `pending` here, under the row lock GC also takes, and uploaded
    again: GC re-checks the status under that lock and leaves it alone.
    """
    if not sizes:
        return {}
    rows = [
        {"digest": d, "size": size, "status": "pending", "created_at": now, "touched_at": now}
        for d, size in sorted(sizes.items())
    ]
    insert = upsert(conn, Blob)
    statement = insert.values(rows).on_conflict_do_update(
        index_elements=[Blob.digest],
        set_={
            "touched_at": insert.excluded.touched_at,
            "status": sa.case((Blob.status == "deleting", "pending"), else_=Blob.status),
        },
    )
    result = await conn.execute(statement.returning(Blob.digest, Blob.status))
    statuses = {row.digest: row.status for row in result}
    claims = upsert(conn, BlobClaim).values(
        [
            {
                "write_id": write_id,
                "digest": d,
                "workspace": workspace,
                "created_at": now,
                "expires_at": expires_at,
            }
            for d in sorted(sizes)
        ]
    )
    await conn.execute(claims.on_conflict_do_nothing(index_elements=["write_id", "digest"]))
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
    conn: AsyncConnection, *, uploaded: Collection[str], referenced: Collection[str]
) -> Unavailable | None:
    """Inside the publish transaction: check every referenced blob, mark uploads `live`.

    A digest this write uploaded must have a row that is not `deleting`; any other digest
    (deduplicated against the head or found `live` at claim time) must be `live`, which
    only a committed write that verified the object can make it. On PostgreSQL the rows
    are share-locked until commit, so GC's delete (which takes the row lock `FOR UPDATE`)
    waits for this commit and then sees the new reference. Returns the digests that
    failed the check (the caller retries the write from the claim), or None.
    """
    wanted = sorted(set(referenced))
    if not wanted:
        return None
    mine = set(uploaded)
    query = sa.select(Blob.digest, Blob.status).where(Blob.digest.in_(wanted))
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(read=True)
    found = {row.digest: row.status for row in await conn.execute(query)}
    bad = tuple(
        d
        for d in wanted
        if found.get(d) is None
        or found[d] == "deleting"
        or (found[d] == "pending" and d not in mine)
    )
    if bad:
        return Unavailable(bad)
    to_confirm = sorted(d for d in mine if found.get(d) == "pending")
    if to_confirm:
        await conn.execute(sa.update(Blob).where(Blob.digest.in_(to_confirm)).values(status="live"))
    return None
