"""Learning rows on the skill and the figures of a workspace's learning status.

`move_to_saved` is the one statement a learning version adds when it lands on an installed
copy (docs/history.md, "Capacity for learning"); the figures feed `skillreg status` and
`/v1/status` (docs/history.md, "Learning status").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.skills import SkillRow
from registry.db.tables import (
    PENDING_PROPOSAL_STATUSES,
    PendingWrite,
    Proposal,
    Skill,
    Suppression,
    Version,
)


async def move_to_saved(conn: AsyncConnection, skill: SkillRow, now: datetime) -> None:
    """A learned change made an installed copy the agent's own: it counts as saved now."""
    await conn.execute(
        sa.update(Skill)
        .where(Skill.id == skill.id, Skill.workspace == skill.workspace)
        .values(kind="saved", updated_at=now)
    )


@dataclass(frozen=True)
class LastLearned:
    """The newest version made by a learning write (or an applied learning proposal)."""

    agent: str
    slug: str
    version: int
    at: datetime


@dataclass(frozen=True)
class LearningFigures:
    """One workspace's learning figures, as the database holds them."""

    pending_writes: int
    oldest_pending_at: datetime | None
    decisions: dict[str, int]
    suppressions: int
    last_learned: LastLearned | None
    learning_paused: list[tuple[str, str]]


async def workspaces(conn: AsyncConnection) -> list[str]:
    """Every workspace that has a skill, by name."""
    rows = await conn.execute(sa.select(Skill.workspace).distinct().order_by(Skill.workspace))
    return [r.workspace for r in rows]


async def figures(conn: AsyncConnection, workspace: str, agent: str | None) -> LearningFigures:
    """The learning figures of `workspace` (of one agent, if given)."""

    def scoped(query: Any, column: Any) -> Any:
        return query if agent is None else query.where(column == agent)

    pending = (
        await conn.execute(
            scoped(
                sa.select(sa.func.count(), sa.func.min(PendingWrite.created_at)).where(
                    PendingWrite.workspace == workspace, PendingWrite.status == "waiting"
                ),
                PendingWrite.agent,
            )
        )
    ).one()
    decisions = {
        r.kind: int(r.n)
        for r in await conn.execute(
            scoped(
                sa.select(Proposal.kind, sa.func.count().label("n"))
                .join(Skill, Skill.id == Proposal.skill_id)
                .where(
                    Proposal.workspace == workspace,
                    Proposal.status.in_(PENDING_PROPOSAL_STATUSES),
                )
                .group_by(Proposal.kind),
                Skill.agent,
            )
        )
    }
    suppressions = await conn.scalar(
        scoped(
            sa.select(sa.func.count()).where(
                Suppression.workspace == workspace, Suppression.status == "active"
            ),
            Suppression.agent,
        )
    )
    last = (
        await conn.execute(
            scoped(
                sa.select(Skill.agent, Skill.slug, Version.number, Version.created_at)
                .join(Skill, Skill.id == Version.skill_id)
                .where(Version.workspace == workspace, Version.origin == "learning")
                .order_by(Version.id.desc())
                .limit(1),
                Skill.agent,
            )
        )
    ).first()
    paused = await conn.execute(
        scoped(
            sa.select(Skill.agent, Skill.slug)
            .where(
                Skill.workspace == workspace,
                Skill.state != "deleted",
                Skill.learning_paused.is_(True),
            )
            .order_by(Skill.agent, Skill.slug),
            Skill.agent,
        )
    )
    return LearningFigures(
        pending_writes=int(pending[0] or 0),
        oldest_pending_at=pending[1],
        decisions=decisions,
        suppressions=int(suppressions or 0),
        last_learned=None
        if last is None
        else LastLearned(last.agent, last.slug, last.number, last.created_at),
        learning_paused=[(r.agent, r.slug) for r in paused],
    )
