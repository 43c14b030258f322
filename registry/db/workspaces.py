"""Which workspaces exist, and the slugs a scope holds: the names a misspelling is near.

A workspace exists once anything was recorded for it: a skill (a deleted one too: its
history is kept), a pending write, an access token (a revoked one too), discovery
settings, or a materialisation target. Each of these starts with a write that names the
workspace (a publish, `token create`, `discovery publish`, a first reconcile), so a read
of a name none of them holds is a misspelling, not an empty workspace
(`WorkspaceNotFound`, registry/services/names.py). Every table here has an index that
starts with `workspace`: each probe is one index seek.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.tables import ApiToken, DiscoveryScope, MaterializationTarget, PendingWrite, Skill
from registry.domain.model import Scope

_HOLDERS = (Skill, PendingWrite, ApiToken, DiscoveryScope, MaterializationTarget)


async def exists(conn: AsyncConnection, workspace: str) -> bool:
    """Whether anything was ever recorded for `workspace`."""
    probes = [sa.exists().where(table.workspace == workspace) for table in _HOLDERS]
    return bool(await conn.scalar(sa.select(sa.or_(*probes))))


async def names(conn: AsyncConnection) -> list[str]:
    """Every workspace that exists, by name."""
    union = sa.union(*(sa.select(table.workspace) for table in _HOLDERS)).subquery()
    rows = await conn.execute(sa.select(union.c.workspace).order_by(union.c.workspace))
    return [r.workspace for r in rows]


async def live_slugs(conn: AsyncConnection, scope: Scope) -> list[str]:
    """The slugs of the live (not deleted) skills of `scope`, by slug."""
    rows = await conn.execute(
        sa.select(Skill.slug)
        .where(Skill.workspace == scope.workspace, Skill.agent == scope.agent)
        .where(Skill.state != "deleted")
        .order_by(Skill.slug)
    )
    return [r.slug for r in rows]
