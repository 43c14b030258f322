"""Content-check approvals stored with versions. The caller owns the transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import ContentApproval
from registry.domain.approvals import Approval


async def for_version(
    conn: AsyncConnection, workspace: str, version_id: int
) -> tuple[Approval, ...]:
    """The approvals stored with a version, in canonical order."""
    rows = await conn.execute(
        sa.select(
            ContentApproval.path,
            ContentApproval.value_hash,
            ContentApproval.pattern_class,
            ContentApproval.occurrences,
        ).where(ContentApproval.workspace == workspace, ContentApproval.version_id == version_id)
    )
    return tuple(sorted(Approval(*row) for row in rows))


async def replace(
    conn: AsyncConnection,
    workspace: str,
    version_id: int,
    approvals: Sequence[Approval],
    *,
    actor: str,
    now: datetime,
    fresh: bool = False,
) -> None:
    """Make `approvals` the version's approvals (`fresh`: a new version, which has none)."""
    if not fresh:
        await conn.execute(
            sa.delete(ContentApproval).where(
                ContentApproval.workspace == workspace, ContentApproval.version_id == version_id
            )
        )
    if approvals:
        await conn.execute(
            sa.insert(ContentApproval),
            [
                {
                    "workspace": workspace,
                    "version_id": version_id,
                    "path": a.path,
                    "value_hash": a.value_hash,
                    "pattern_class": a.pattern_class,
                    "occurrences": a.occurrences,
                    "actor": actor,
                    "created_at": now,
                }
                for a in approvals
            ],
        )
