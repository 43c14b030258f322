"""Source exclusions: which sources a workspace has excluded, and what they make unavailable.

A version is unavailable when any source it lists is excluded from its workspace.
The caller owns the transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.blobs import upsert
from registry.db.tables import Skill, SourceExclusion, Version, VersionSource


async def add(
    conn: AsyncConnection, workspace: str, source: str, *, actor: str, reason: str, now: datetime
) -> bool:
    """Exclude `source` from `workspace`; False if it already was."""
    statement = (
        upsert(conn, SourceExclusion)
        .values(workspace=workspace, source=source, actor=actor, reason=reason, created_at=now)
        .on_conflict_do_nothing(index_elements=["workspace", "source"])
        .returning(SourceExclusion.id)
    )
    # RETURNING, not rowcount: drivers disagree on the rowcount of a skipped insert.
    return (await conn.execute(statement)).first() is not None


async def excluded(conn: AsyncConnection, workspace: str, sources: Iterable[str]) -> list[str]:
    """Those of `sources` that are excluded from `workspace`, in the order given."""
    wanted = list(dict.fromkeys(sources))
    if not wanted:
        return []
    rows = await conn.execute(
        sa.select(SourceExclusion.source).where(
            SourceExclusion.workspace == workspace, SourceExclusion.source.in_(wanted)
        )
    )
    found = {r.source for r in rows}
    return [s for s in wanted if s in found]


def _excluded_sources_of(workspace: str) -> sa.Select[int, str]:
    return (
        sa.select(VersionSource.version_id, VersionSource.source)
        .join(
            SourceExclusion,
            sa.and_(
                SourceExclusion.workspace == VersionSource.workspace,
                SourceExclusion.source == VersionSource.source,
            ),
        )
        .where(VersionSource.workspace == workspace)
    )


async def unavailable(
    conn: AsyncConnection, workspace: str, version_ids: Iterable[int]
) -> dict[int, str]:
    """For each of `version_ids` that lists an excluded source: the first such source."""
    ids = sorted(set(version_ids))
    if not ids:
        return {}
    rows = await conn.execute(
        _excluded_sources_of(workspace)
        .where(VersionSource.version_id.in_(ids))
        .order_by(VersionSource.version_id, VersionSource.position)
    )
    out: dict[int, str] = {}
    for row in rows:
        out.setdefault(row.version_id, row.source)
    return out


async def skills_with_unavailable_head(conn: AsyncConnection, workspace: str) -> list[int]:
    """Ids of the live skills of `workspace` whose head lists an excluded source."""
    heads = _excluded_sources_of(workspace).subquery()
    rows = await conn.execute(
        sa.select(Skill.id)
        .distinct()
        .join(Version, sa.and_(Version.skill_id == Skill.id, Version.number == Skill.head))
        .join(heads, heads.c.version_id == Version.id)
        .where(Skill.workspace == workspace, Skill.state != "deleted")
        .order_by(Skill.id)
    )
    return [int(r.id) for r in rows]
