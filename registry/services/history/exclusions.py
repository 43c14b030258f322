"""Source exclusion: stop using everything a source contributed to, across a workspace.

`exclude_source(scope, source)` records the exclusion for the scope's workspace (every
agent: a source reference is workspace data) in one locked transaction with one
`source_excluded` event. From then on every version that lists the source is unavailable:
reads and restores refuse it with `VersionUnavailable`, and a write that lists it is refused
with `SourceExcluded`.

Then it repairs every live skill whose head lists an excluded source, each in its own
transaction (one event each):

- the newest version that lists no excluded source (and passes the content check) becomes
  the head again as a new version: origin `restore`, `restored_from` that version, its
  sources, automatic improvements off; a compare-and-swap on the head it repaired;
- where no such version exists, the skill pauses (use and learning), with the reason.

Excluding the same source again records nothing new and repairs whatever is still to
repair, so it also finishes a repair that was interrupted. Deleted skills are never
repaired: their histories stay archived, not brought back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import exclusions as db_exclusions
from registry.db import history as db_history
from registry.db import skills as db_skills
from registry.domain.arguments import check_text
from registry.domain.model import Scope
from registry.errors import ContentBlocked, HeadConflict, VersionUnavailable
from registry.services.context import Context
from registry.services.write.restore import StoredVersion, republish, stored_version

# A repair that loses its compare-and-swap to a concurrent write reads the skill again.
_REPAIR_ATTEMPTS: Final = 3


@dataclass(frozen=True)
class Repair:
    """What the exclusion did to one skill: rolled back to a version, or paused."""

    slug: str
    agent: str
    previous_head: int
    outcome: str  # "rolled_back", "paused" or "already_paused"
    version: int | None = None
    restored_from: int | None = None


@dataclass(frozen=True)
class ExclusionReport:
    """The result of `exclude_source`: whether it was new, and each skill repaired."""

    workspace: str
    source: str
    newly_excluded: bool
    repairs: list[Repair] = field(default_factory=list)


async def exclude_source(
    ctx: Context, scope: Scope, source: str, *, actor: str, reason: str = ""
) -> ExclusionReport:
    """Exclude `source` from `scope.workspace` and repair the heads that depend on it."""
    check_text("source", source)
    check_text("actor", actor)
    check_text("reason", reason, multiline=True)
    workspace = scope.workspace

    async def record(conn: AsyncConnection) -> bool:
        now = ctx.clock.now()
        new = await db_exclusions.add(conn, workspace, source, actor=actor, reason=reason, now=now)
        if new:
            await db_skills.insert_event(
                conn,
                scope,
                "",
                skill_id=None,
                kind="source_excluded",
                version=None,
                manifest_hash=None,
                payload={"source": source, "actor": actor, "reason": reason or None},
                now=now,
            )
        return new

    newly = await ctx.locked(workspace, record)
    report = ExclusionReport(workspace, source, newly)
    skill_ids = await ctx.read(
        lambda conn: db_exclusions.skills_with_unavailable_head(conn, workspace)
    )
    for skill_id in skill_ids:
        repaired = await _repair(ctx, workspace, skill_id, actor=actor, source=source)
        if repaired is not None:
            report.repairs.append(repaired)
    return report


@dataclass(frozen=True)
class _Candidates:
    skill: db_skills.SkillRow
    excluded_head_source: str | None
    numbers: list[int]


async def _candidates(ctx: Context, workspace: str, skill_id: int) -> _Candidates | None:
    """The skill, why its head is unavailable, and its available versions, newest first."""

    async def work(conn: AsyncConnection) -> _Candidates | None:
        skill = await db_skills.skill_by_id(conn, workspace, skill_id)
        if skill is None or skill.state == "deleted":
            return None
        rows = await db_history.version_numbers(conn, workspace, skill_id)
        unavailable = await db_exclusions.unavailable(conn, workspace, [i for i, _ in rows])
        head_id = next(i for i, number in rows if number == skill.head)
        numbers = [number for i, number in rows if i not in unavailable]
        return _Candidates(skill, unavailable.get(head_id), numbers)

    return await ctx.read(work)


async def _repair(
    ctx: Context, workspace: str, skill_id: int, *, actor: str, source: str
) -> Repair | None:
    for _ in range(_REPAIR_ATTEMPTS):
        found = await _candidates(ctx, workspace, skill_id)
        if found is None or found.excluded_head_source is None:
            return None
        skill = found.skill
        scope = Scope(workspace, skill.agent)
        try:
            return await _roll_back(ctx, scope, found, actor=actor, source=source)
        except HeadConflict:
            continue
    return None


async def _roll_back(
    ctx: Context, scope: Scope, found: _Candidates, *, actor: str, source: str
) -> Repair:
    skill = found.skill
    reason = f"source {found.excluded_head_source!r} excluded"
    for number in found.numbers:
        try:
            stored: StoredVersion = await stored_version(ctx, scope, skill.slug, number)
            publication = await republish(
                ctx,
                scope,
                skill.slug,
                stored,
                expected_head=skill.head,
                actor=actor,
                message=f"rolled back: {reason}",
                repair=True,
            )
        except (ContentBlocked, VersionUnavailable):
            # It fails today's content check, or another exclusion made it unavailable
            # meanwhile: try an older one.
            continue
        return Repair(
            skill.slug, skill.agent, skill.head, "rolled_back", publication.version, number
        )
    paused = await _pause(ctx, scope, skill, actor=actor, reason=reason, source=source)
    return Repair(skill.slug, skill.agent, skill.head, paused)


async def _pause(
    ctx: Context, scope: Scope, skill: db_skills.SkillRow, *, actor: str, reason: str, source: str
) -> str:
    """Pause use and learning of a skill no available version can replace the head of."""

    async def work(conn: AsyncConnection) -> str:
        now = ctx.clock.now()
        current = await db_skills.skill_by_id(conn, scope.workspace, skill.id)
        if current is None or current.state == "deleted":
            return "already_paused"
        if current.head != skill.head:
            raise HeadConflict(skill.head, current.head)
        if current.use_paused and current.learning_paused and current.pause_reason == reason:
            return "already_paused"
        await db_skills.set_controls(
            conn,
            current,
            {"use_paused": True, "learning_paused": True, "pause_reason": reason},
            now=now,
        )
        await db_skills.insert_event(
            conn,
            scope,
            skill.slug,
            skill_id=skill.id,
            kind="use_paused",
            version=skill.head,
            manifest_hash=None,
            payload={"actor": actor, "reason": reason, "source": source},
            now=now,
        )
        return "paused"

    return await ctx.locked(scope.workspace, work)
