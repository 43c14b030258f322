"""Blobs uploaded ahead of a manifest: which digests a workspace may name, and confirming one.

Content addressing is global, so "is digest X stored?" must not be answered for another
tenant's bytes. A workspace *sees* a digest when the blob is `live` (stored and verified)
and the workspace either references it (a manifest of the workspace lists it: versions
and proposals both point at manifests) or holds an unexpired claim on it (it uploaded the
bytes itself, `registry/services/write/uploads.py`).

A blob uploaded *held* (its bytes have content-check findings the uploader means to approve
in the publish that names them) is claimed under a write id starting with `HELD_PREFIX`:
its claim lets the workspace's manifests name it, but not its reads (`HEAD`, `GET`), until
a version or proposal references it. A prefix rather than a column: the claim row is the
upload's whole record, and the write id is the one field only the uploader sets.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import Blob, BlobClaim, Manifest, ManifestEntry

HELD_PREFIX: Final = "held-"
"""The write id of a held upload: this prefix and 31 hex digits (36 characters, a claim's
write id column, like a UUID)."""


def held_write_id() -> str:
    """A fresh write id for a held upload."""
    return HELD_PREFIX + uuid.uuid4().hex[:31]


async def visible(
    conn: AsyncConnection,
    workspace: str,
    digests: Collection[str],
    now: datetime,
    *,
    held: bool = False,
) -> dict[str, int]:
    """The digests of `digests` that `workspace` sees, with their sizes.

    `held`: count held uploads too (a manifest may name them; a read may not).
    """
    wanted = sorted(set(digests))
    if not wanted:
        return {}
    referenced = (
        sa.select(ManifestEntry.digest)
        .join(Manifest, Manifest.id == ManifestEntry.manifest_id)
        .where(Manifest.workspace == workspace, ManifestEntry.digest == Blob.digest)
        .exists()
    )
    claims = [
        BlobClaim.workspace == workspace,
        BlobClaim.digest == Blob.digest,
        BlobClaim.expires_at > now,
    ]
    if not held:
        claims.append(BlobClaim.write_id.not_like(f"{HELD_PREFIX}%"))
    claimed = sa.select(BlobClaim.id).where(*claims).exists()
    rows = await conn.execute(
        sa.select(Blob.digest, Blob.size).where(
            Blob.digest.in_(wanted), Blob.status == "live", sa.or_(referenced, claimed)
        )
    )
    return {row.digest: int(row.size) for row in rows}


async def confirm_upload(
    conn: AsyncConnection, *, write_id: str, digest: str, now: datetime
) -> bool:
    """Mark an uploaded blob `live` after its put returned; False if that is not safe.

    Only while this upload's claim is unexpired: a claim that lapsed may have let GC
    delete the object and another write claim the digest afresh, and that `pending` row
    is not ours to confirm (the same rule as `registry.db.blobs.confirm`). A row GC is
    deleting the object of is `deleting` and got no claim (`claim` leaves a fenced row
    alone), so it is refused too. On PostgreSQL the row is locked first, so GC's fence
    and its final delete of the row (which lock it too) see a consistent state.
    """
    lock = sa.select(Blob.status).where(Blob.digest == digest)
    if conn.dialect.name == "postgresql":
        lock = lock.with_for_update()
    status = await conn.scalar(lock)
    held = await conn.scalar(
        sa.select(sa.func.count())
        .select_from(BlobClaim)
        .where(
            BlobClaim.write_id == write_id,
            BlobClaim.digest == digest,
            BlobClaim.expires_at > now,
        )
    )
    if not held or status not in ("pending", "live"):
        return False
    if status == "pending":
        await conn.execute(
            sa.update(Blob).where(Blob.digest == digest).values(status="live", touched_at=now)
        )
    return True
