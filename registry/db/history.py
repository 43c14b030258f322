"""History queries: every skill a slug has named in a scope, and keyset pages of versions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.skills import VersionRow, in_scope
from registry.db.tables import Skill, Version
from registry.domain.model import Scope

_VERSION_COLUMNS = tuple(getattr(Version, f) for f in VersionRow.__slots__)


class SlugSkill(NamedTuple):
    id: int
    state: str
    head: int


async def skills_of_slug(conn: AsyncConnection, scope: Scope, slug: str) -> list[SlugSkill]:
    """The live skill and every deleted one that had `slug`, newest first."""
    result = await conn.execute(
        sa.select(Skill.id, Skill.state, Skill.head)
        .where(in_scope(scope), Skill.slug == slug)
        .order_by(Skill.id.desc())
    )
    return [SlugSkill(row.id, row.state, row.head) for row in result]


async def version_numbers(
    conn: AsyncConnection, workspace: str, skill_id: int
) -> list[tuple[int, int]]:
    """`(version id, number)` of every version of a skill, newest first."""
    result = await conn.execute(
        sa.select(Version.id, Version.number)
        .where(Version.workspace == workspace, Version.skill_id == skill_id)
        .order_by(Version.number.desc())
    )
    return [(row.id, row.number) for row in result]


async def versions_page(
    conn: AsyncConnection,
    workspace: str,
    skill_ids: Sequence[int],
    *,
    limit: int,
    after: tuple[int, int] | None,
) -> list[VersionRow]:
    """Up to `limit` versions of `skill_ids`, newest skill and number first, after a cursor.

    The cursor is the `(skill_id, number)` of the last row of the previous page.
    """
    query = (
        sa.select(*_VERSION_COLUMNS)
        .where(Version.workspace == workspace, Version.skill_id.in_(skill_ids))
        .order_by(Version.skill_id.desc(), Version.number.desc())
        .limit(limit)
    )
    if after is not None:
        skill_id, number = after
        query = query.where(
            sa.or_(
                Version.skill_id < skill_id,
                sa.and_(Version.skill_id == skill_id, Version.number < number),
            )
        )
    return [VersionRow(**r._asdict()) for r in (await conn.execute(query)).all()]
