"""Unknown names: a workspace nothing was recorded for, a slug no live skill has.

A read of a workspace that does not exist (registry/db/workspaces.py says what makes one
exist) is `WorkspaceNotFound`, not an empty listing: `skillreg list -w acmee` says the
name is wrong instead of "no skills". Both errors name the nearest existing names
(`difflib`'s ratio, at most three, closest first), so the caller sees the fix.
"""

from __future__ import annotations

import difflib
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import workspaces as db_workspaces
from registry.domain.model import Scope, check_workspace
from registry.errors import SkillNotFound, WorkspaceNotFound
from registry.services.context import Context

_NEAREST: Final = 3
_CUTOFF: Final = 0.6  # difflib's default: `acmee` is near `acme`, `globex` is not


def nearest(name: str, candidates: list[str]) -> list[str]:
    """Up to three of `candidates` closest to `name`, closest first."""
    return difflib.get_close_matches(name, candidates, n=_NEAREST, cutoff=_CUTOFF)


async def require_workspace(ctx: Context, workspace: str) -> None:
    """Raise `WorkspaceNotFound` (with the nearest names) unless `workspace` exists."""
    check_workspace(workspace)

    async def work(conn: AsyncConnection) -> list[str] | None:
        if await db_workspaces.exists(conn, workspace):
            return None
        return await db_workspaces.names(conn)

    existing = await ctx.read(work)
    if existing is not None:
        raise WorkspaceNotFound(workspace, nearest(workspace, existing))


async def skill_not_found(ctx: Context, error: SkillNotFound) -> WorkspaceNotFound | SkillNotFound:
    """The error to report for `error`, with the nearest names.

    Its workspace missing altogether: `WorkspaceNotFound`; else `SkillNotFound` naming
    the scope's live slugs nearest to the one asked for.
    """
    scope = Scope(error.workspace, error.agent)

    async def work(conn: AsyncConnection) -> tuple[bool, list[str]]:
        if not await db_workspaces.exists(conn, scope.workspace):
            return False, await db_workspaces.names(conn)
        return True, await db_workspaces.live_slugs(conn, scope)

    found, candidates = await ctx.read(work)
    if not found:
        return WorkspaceNotFound(scope.workspace, nearest(scope.workspace, candidates))
    return SkillNotFound(
        scope.workspace, scope.agent, error.slug, nearest=nearest(error.slug, candidates)
    )
