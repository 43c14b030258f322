"""The learning section of `skillreg status` and `/v1/status`, one per workspace.

What an owner or an operator needs to see of the automated learning job's effect: pending
writes (how many wait for a saved slot, and since when), open decisions by kind
(`learning`, `suppressed`, `update`, `draft`), active suppressions, the last learned change
that was applied, and the skills whose learning is paused (docs/history.md, "Learning
status").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import learning as db_learning
from registry.db.tables import PROPOSAL_KINDS
from registry.services.context import Context


@dataclass(frozen=True)
class LastLearned:
    """The newest version a learning write made (directly, or as an applied proposal)."""

    agent: str
    slug: str
    version: int
    at: datetime


@dataclass(frozen=True)
class PausedSkill:
    agent: str
    slug: str


@dataclass(frozen=True)
class LearningStatus:
    """One workspace's learning section. `decisions` counts open proposals by kind."""

    workspace: str
    pending_writes: int
    oldest_pending_at: datetime | None
    decisions: dict[str, int]
    suppressions: int
    last_learned: LastLearned | None
    learning_paused: list[PausedSkill]


async def learning_status(
    ctx: Context, workspace: str | None = None, agent: str | None = None
) -> tuple[LearningStatus, ...]:
    """The learning section of one workspace (one agent of it), or of every workspace."""

    async def work(conn: AsyncConnection) -> tuple[LearningStatus, ...]:
        names = [workspace] if workspace is not None else await db_learning.workspaces(conn)
        out = []
        for name in names:
            found = await db_learning.figures(conn, name, agent)
            last = found.last_learned
            out.append(
                LearningStatus(
                    workspace=name,
                    pending_writes=found.pending_writes,
                    oldest_pending_at=found.oldest_pending_at,
                    decisions={k: found.decisions.get(k, 0) for k in PROPOSAL_KINDS},
                    suppressions=found.suppressions,
                    last_learned=None
                    if last is None
                    else LastLearned(last.agent, last.slug, last.version, last.at),
                    learning_paused=[PausedSkill(a, s) for a, s in found.learning_paused],
                )
            )
        return tuple(out)

    return await ctx.read(work)
