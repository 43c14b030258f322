"""Suppressions as the owner sees them: listed, and lifted when the owner changes their mind.

A suppression is recorded by an owner's restore (the change it undid) or delete (the
deleted package), docs/history.md "Suppression". Applying a `suppressed` proposal lifts
the suppression it names; `lift` does so without a proposal. Lifting is one locked
transaction with one event (`suppression_lifted`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import skills as db_skills
from registry.db import suppressions as db_suppressions
from registry.domain.arguments import check_text
from registry.domain.model import Scope, check_workspace
from registry.domain.numbers import MAX_ID, names_row
from registry.errors import StateConflict, SuppressionNotFound
from registry.services.context import Context


@dataclass(frozen=True)
class SuppressionInfo:
    """A suppression: what it undid, where, and whether it still holds.

    `paths` are the files of the undone change; `removed` those the change had removed.
    """

    id: int
    agent: str
    slug: str
    cause: str
    undone_version: int
    undone_hash: str
    paths: list[str]
    removed: list[str]
    status: str
    actor: str
    created_at: datetime
    lifted_at: datetime | None
    lifted_by: str | None

    @classmethod
    def of(cls, row: db_suppressions.SuppressionRow) -> SuppressionInfo:
        files = row.changed_files()
        return cls(
            id=row.id,
            agent=row.agent,
            slug=row.slug,
            cause=row.cause,
            undone_version=row.undone_version,
            undone_hash=row.undone_hash,
            paths=[f.path for f in files if f.digest is not None],
            removed=[f.path for f in files if f.digest is None],
            status=row.status,
            actor=row.actor,
            created_at=row.created_at,
            lifted_at=row.lifted_at,
            lifted_by=row.lifted_by,
        )


async def list_suppressions(
    ctx: Context, workspace: str, *, agent: str | None = None, active_only: bool = True
) -> list[SuppressionInfo]:
    """The suppressions of a workspace (one agent's, if given), newest first."""
    check_workspace(workspace)

    async def work(conn: AsyncConnection) -> list[db_suppressions.SuppressionRow]:
        return await db_suppressions.listed(conn, workspace, agent=agent, active_only=active_only)

    return [SuppressionInfo.of(r) for r in await ctx.read(work)]


async def lift(ctx: Context, workspace: str, suppression_id: int, *, actor: str) -> SuppressionInfo:
    """Lift an active suppression: learning may bring that behaviour back directly again."""
    check_workspace(workspace)
    check_text("actor", actor)
    if not names_row("suppression_id", suppression_id, MAX_ID):
        raise SuppressionNotFound(suppression_id)

    async def work(conn: AsyncConnection) -> SuppressionInfo:
        now = ctx.clock.now()
        row = await db_suppressions.get(conn, workspace, suppression_id)
        if row is None:
            raise SuppressionNotFound(suppression_id)
        if row.status != "active":
            raise StateConflict("lift", f"suppression {row.status}")
        await db_suppressions.lift(conn, workspace, suppression_id, actor=actor, now=now)
        await db_skills.insert_event(
            conn,
            Scope(workspace, row.agent),
            row.slug,
            skill_id=row.skill_id,
            kind="suppression_lifted",
            version=None,
            manifest_hash=row.undone_hash,
            payload={"suppression": row.id, "actor": actor},
            now=now,
        )
        lifted = await db_suppressions.get(conn, workspace, suppression_id)
        assert lifted is not None
        return SuppressionInfo.of(lifted)

    return await ctx.locked(workspace, work)
