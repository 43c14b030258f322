"""Queries on suppressions (docs/history.md, "Learning writes").

Every query filters by workspace; the caller owns the transaction (and, for writes, the
workspace lock).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import Suppression
from registry.domain.model import Scope
from registry.domain.similarity import ChangedFile


@dataclass(frozen=True, slots=True)
class SuppressionRow:
    """A suppression as the services see it."""

    id: int
    workspace: str
    agent: str
    slug: str
    skill_id: int
    cause: str
    undone_version: int
    undone_hash: str
    change: list[dict[str, Any]]
    status: str
    actor: str
    created_at: datetime
    lifted_at: datetime | None
    lifted_by: str | None

    def changed_files(self) -> list[ChangedFile]:
        return [ChangedFile.from_json(c) for c in self.change]


_COLUMNS = tuple(getattr(Suppression, f) for f in SuppressionRow.__slots__)


def _row(row: sa.Row[Any]) -> SuppressionRow:
    return SuppressionRow(**row._asdict())


async def active_for(conn: AsyncConnection, scope: Scope, slug: str) -> list[SuppressionRow]:
    """The active suppressions of `slug` in `scope`, newest first (deleted skills included)."""
    rows = await conn.execute(
        sa.select(*_COLUMNS)
        .where(
            Suppression.workspace == scope.workspace,
            Suppression.agent == scope.agent,
            Suppression.slug == slug,
            Suppression.status == "active",
        )
        .order_by(Suppression.id.desc())
    )
    return [_row(r) for r in rows]


async def record(
    conn: AsyncConnection,
    scope: Scope,
    slug: str,
    *,
    skill_id: int,
    cause: str,
    undone_version: int,
    undone_hash: str,
    change: Sequence[ChangedFile],
    actor: str,
    now: datetime,
) -> int:
    """Record a suppression; returns its id."""
    suppression_id = await conn.scalar(
        sa.insert(Suppression)
        .values(
            workspace=scope.workspace,
            agent=scope.agent,
            slug=slug,
            skill_id=skill_id,
            cause=cause,
            undone_version=undone_version,
            undone_hash=undone_hash,
            change=[c.as_json() for c in change],
            status="active",
            actor=actor,
            created_at=now,
        )
        .returning(Suppression.id)
    )
    assert suppression_id is not None
    return int(suppression_id)


async def lift(
    conn: AsyncConnection, workspace: str, suppression_id: int, *, actor: str, now: datetime
) -> bool:
    """Lift an active suppression; False if there was none to lift."""
    result = await conn.execute(
        sa.update(Suppression)
        .where(
            Suppression.workspace == workspace,
            Suppression.id == suppression_id,
            Suppression.status == "active",
        )
        .values(status="lifted", lifted_at=now, lifted_by=actor)
    )
    return result.rowcount == 1


async def lift_deleted(
    conn: AsyncConnection, workspace: str, skill_id: int, *, actor: str, now: datetime
) -> None:
    """Lift the active suppressions a skill's delete recorded (the skill came back)."""
    await conn.execute(
        sa.update(Suppression)
        .where(
            Suppression.workspace == workspace,
            Suppression.skill_id == skill_id,
            Suppression.cause == "delete",
            Suppression.status == "active",
        )
        .values(status="lifted", lifted_at=now, lifted_by=actor)
    )


async def listed(
    conn: AsyncConnection, workspace: str, *, agent: str | None, active_only: bool
) -> list[SuppressionRow]:
    """The suppressions of a workspace (of one agent, if given), newest first."""
    query = sa.select(*_COLUMNS).where(Suppression.workspace == workspace)
    if agent is not None:
        query = query.where(Suppression.agent == agent)
    if active_only:
        query = query.where(Suppression.status == "active")
    return [_row(r) for r in await conn.execute(query.order_by(Suppression.id.desc()))]


async def get(conn: AsyncConnection, workspace: str, suppression_id: int) -> SuppressionRow | None:
    row = (
        await conn.execute(
            sa.select(*_COLUMNS).where(
                Suppression.workspace == workspace, Suppression.id == suppression_id
            )
        )
    ).first()
    return None if row is None else _row(row)
