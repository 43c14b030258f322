"""The scan cache: digests the content check found clean, per scanner fingerprint."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import ScanResult


async def clean_among(conn: AsyncConnection, digests: Iterable[str], scanner: str) -> set[str]:
    """The digests of `digests` that `scanner` already found clean."""
    wanted = sorted(set(digests))
    if not wanted:
        return set()
    rows = await conn.execute(
        sa.select(ScanResult.digest).where(
            ScanResult.scanner == scanner, ScanResult.digest.in_(wanted)
        )
    )
    return {r.digest for r in rows}


async def remember_clean(
    conn: AsyncConnection, digests: Iterable[str], scanner: str, now: datetime
) -> None:
    """Record `digests` as clean for `scanner` (idempotent)."""
    rows = [{"digest": d, "scanner": scanner, "scanned_at": now} for d in sorted(set(digests))]
    if rows:
        await conn.execute(_REMEMBER[conn.dialect.name], rows)


# Built once per dialect (the same statement in each one's `ON CONFLICT` construct);
# executed with a list of rows (one multi-row INSERT).
_REMEMBER: Final = {
    name: insert(ScanResult).on_conflict_do_nothing(index_elements=["digest", "scanner"])
    for name, insert in (("postgresql", postgresql.insert), ("sqlite", sqlite.insert))
}
