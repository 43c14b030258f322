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

The claim rules are written here once: `claim` (the blob rows and the claim rows),
`release` (the claims dropped, by a publish inside its locked transaction or after a
failure) and `confirm` (the publish's blob check).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import Blob, BlobClaim


def upsert(conn: AsyncConnection, table: type[Any]) -> Any:
    """The dialect's `INSERT` construct that supports `ON CONFLICT` (the same statement)."""
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
    dialect = conn.dialect.name
    # Several rows with RETURNING: SQLAlchemy sends them as one multi-row INSERT
    # ("insertmanyvalues"), on either database.
    result = await conn.execute(_CLAIM_BLOBS[dialect], rows)
    statuses = {row.digest: row.status for row in result}
    # Whatever is still `deleting` is fenced. The upsert holds the row lock until commit
    # (PostgreSQL), so GC cannot lift the fence and delete the row underneath this claim.
    claimable = sorted(d for d in sizes if statuses[d] != "deleting")
    if claimable:
        # A write that claims again (its publish found a claim lapsed) renews the expiry.
        await conn.execute(
            _CLAIM[dialect],
            [
                {
                    "write_id": write_id,
                    "digest": d,
                    "workspace": workspace,
                    "created_at": now,
                    "expires_at": expires_at,
                }
                for d in claimable
            ],
        )
    return statuses


def _claim_blobs(statement: Any) -> Any:
    """The blob rows' upsert of a claim: `statement` inserts `pending` rows (or touches)."""
    # In an upsert's SET, column references are the existing row's values; the new row's
    # `touched_at` is the claim's time, so a fence that ends before it has expired.
    unfenced = sa.or_(
        Blob.purge_expires_at.is_(None), Blob.purge_expires_at <= statement.excluded.touched_at
    )
    return statement.on_conflict_do_update(
        index_elements=[Blob.digest],
        set_={
            "touched_at": statement.excluded.touched_at,
            "status": sa.case(
                (sa.and_(Blob.status == "deleting", unfenced), "pending"), else_=Blob.status
            ),
            "purge_expires_at": sa.case((unfenced, None), else_=Blob.purge_expires_at),
        },
    ).returning(Blob.digest, Blob.status)


def _claim(statement: Any) -> Any:
    """A claim that exists already (the write claims again) only renews its expiry."""
    return statement.on_conflict_do_update(
        index_elements=["write_id", "digest"],
        set_={"expires_at": statement.excluded.expires_at},
    )


# Built once per dialect (the same statement in each one's `ON CONFLICT` construct) and
# executed with a list of rows: one multi-row statement each.
_DIALECTS: Final = (("postgresql", postgresql.insert), ("sqlite", sqlite.insert))
_CLAIM_BLOBS: Final = {name: _claim_blobs(insert(Blob)) for name, insert in _DIALECTS}
_CLAIM: Final = {name: _claim(insert(BlobClaim)) for name, insert in _DIALECTS}
_RELEASE: Final = (
    sa.delete(BlobClaim)
    .where(BlobClaim.write_id == sa.bindparam("write_id"))
    .returning(BlobClaim.digest, BlobClaim.expires_at)
)


async def release(conn: AsyncConnection, write_id: str, now: datetime) -> frozenset[str]:
    """Drop every claim of `write_id`; return the digests whose claim had not expired.

    A publish releases its claims inside its locked transaction (its commit makes the
    release stick) and passes what was still held at `now` to `confirm`; a failed write
    releases them alone.
    """
    rows = await conn.execute(_RELEASE, {"write_id": write_id})
    return frozenset(r.digest for r in rows if r.expires_at > now)


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Digests a publish found missing or being deleted (GC won a race against a slow write)."""

    digests: tuple[str, ...]


async def confirm(
    conn: AsyncConnection,
    *,
    held: Collection[str],
    uploaded: Collection[str],
    referenced: Collection[str],
) -> Unavailable | None:
    """Inside the publish transaction: check every referenced blob, mark uploads `live`.

    `held` are the digests whose claim of this write had not expired when the
    transaction dropped the write's claims (`release`).

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
    # SQLite has no row locks (its write lock is the database's) and renders no FOR clause.
    query = _STATUSES_FOR_CONFIRM if mine else _STATUSES_FOR_SHARE
    found = {row.digest: row.status for row in await conn.execute(query, {"digests": wanted})}
    problem = unusable(found, referenced=wanted, uploaded=mine, held=held)
    if problem is not None:
        return problem
    to_confirm = sorted(d for d in mine if found.get(d) == "pending")
    if to_confirm:
        await conn.execute(_MAKE_LIVE, {"digests": to_confirm})
    return None


_STATUSES: Final = (
    sa.select(Blob.digest, Blob.status)
    .where(Blob.digest.in_(sa.bindparam("digests", expanding=True)))
    .order_by(Blob.digest)
)
_STATUSES_FOR_CONFIRM: Final = _STATUSES.with_for_update(key_share=True)
_STATUSES_FOR_SHARE: Final = _STATUSES.with_for_update(read=True)
_MAKE_LIVE: Final = (
    sa.update(Blob)
    .where(Blob.digest.in_(sa.bindparam("digests", expanding=True)))
    .values(status="live")
)


def unusable(
    found: Mapping[str, str],
    *,
    referenced: Collection[str],
    uploaded: Collection[str],
    held: Collection[str],
) -> Unavailable | None:
    """The digests of `referenced` that fail `confirm`'s check, given their `found` statuses.

    `uploaded` are the digests this write uploaded, `held` those whose claim of this
    write's had not expired when the transaction dropped it.
    """
    mine = set(uploaded)
    bad = tuple(
        d for d in sorted(set(referenced)) if not _usable(d, found.get(d), mine=mine, held=held)
    )
    return Unavailable(bad) if bad else None


def _usable(digest: str, status: str | None, *, mine: set[str], held: Collection[str]) -> bool:
    if status is None or status == "deleting":
        return False
    if digest in mine:
        return status == "live" or digest in held
    return status == "live"
