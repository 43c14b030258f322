"""History: the versions of a skill, newest first, a keyset page at a time.

The live skill's versions come first; with `include_archived`, the versions of earlier,
deleted skills that had the same slug in the scope follow, newest skill first, each marked
`archived`. Every version carries its skill's id, so two deleted skills' versions of the
same number are told apart; `skill_id` lists one skill's versions only (the live skill's
or a deleted one's). A version that lists a source excluded from the workspace is listed
(its metadata is not the excluded content) but marked unavailable.

Pinned reads of a version are `read.read_package(..., version=N)`, of an archived one
`read.read_package(..., version=ArchivedVersion(N, skill_id))`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import exclusions as db_exclusions
from registry.db import history as db_history
from registry.db import revocations as db_revocations
from registry.db import skills as db_skills
from registry.domain.arguments import RULE_MALFORMED, check_type
from registry.domain.model import Scope, check_slug
from registry.domain.numbers import MAX_ID, MAX_VERSION, check_int, decimal
from registry.errors import ArchivedSkillNotFound, ArgumentInvalid, SkillNotFound
from registry.services.context import Context

MAX_PAGE: Final = 500


@dataclass(frozen=True)
class VersionSummary:
    """One version in a history listing."""

    number: int
    origin: str
    actor: str  # as the writer declared it
    created_at: datetime
    message: str
    sources: list[str]
    parent: int | None
    restored_from: int | None
    file_count: int
    total_size: int
    manifest_hash: str
    head: bool
    archived: bool
    available: bool
    # The skill the version belongs to: an archived version is read, compared and
    # restored by it (`ArchivedVersion(number, skill_id)`; `SLUG~ID@N` on the command line).
    skill_id: int
    unavailable_because: str | None
    # Who really wrote it (`token:<id>`, `os:<user>`): authenticated, signed with the
    # version. None for versions written before versions were signed.
    principal: str | None = None
    # A revocation in force (docs/revocation.md): never served for use, still listed.
    revoked: bool = False
    revoked_kind: str | None = None
    revoked_reason: str | None = None


@dataclass(frozen=True)
class HistoryPage:
    """A page of a skill's history; pass `next_before` back as `before` for the next page.

    `head` is the live skill's head (None when only archived histories exist).
    """

    scope: Scope
    slug: str
    head: int | None
    items: list[VersionSummary]
    next_before: str | None


def _cursor(skill_id: int, number: int) -> str:
    return f"{skill_id}.{number}"


def _parse_cursor(cursor: object) -> tuple[int, int]:
    """The (skill id, version) a `next_before` names; `ArgumentInvalid` for anything else.

    Bounded by the columns it is compared with, so a cursor no page gave is refused here,
    not by the driver.
    """
    text = check_type("before", cursor, str, "a history cursor (str)")
    skill_id, _, number = text.partition(".")
    parsed = decimal(skill_id, MAX_ID), decimal(number, MAX_VERSION)
    if parsed[0] is None or parsed[1] is None:
        raise ArgumentInvalid("before", RULE_MALFORMED, "not a history cursor (SKILL_ID.VERSION)")
    return parsed[0], parsed[1]


def _revoked(found: db_revocations.RevocationRow | None) -> dict[str, Any]:
    if found is None:
        return {}
    return {"revoked": True, "revoked_kind": found.kind, "revoked_reason": found.reason}


async def history(
    ctx: Context,
    scope: Scope,
    slug: str,
    *,
    limit: int = 20,
    before: str | None = None,
    include_archived: bool = False,
    skill_id: int | None = None,
) -> HistoryPage:
    """The versions of `slug` in `scope`, newest first; `SkillNotFound` if there are none.

    With `skill_id`, only that skill's versions (`ArchivedSkillNotFound` if no skill of
    the slug has that id); `include_archived` is then implied.
    """
    check_slug(slug)
    limit = max(1, min(limit, MAX_PAGE))
    cursor = None if before is None else _parse_cursor(before)
    if skill_id is not None:
        check_int("skill_id", skill_id)

    async def work(conn: AsyncConnection) -> HistoryPage:
        skills = await db_history.skills_of_slug(conn, scope, slug)
        live = next((s for s in skills if s.state != "deleted"), None)
        if skill_id is not None:
            wanted = [s for s in skills if s.id == skill_id]
            if not wanted:
                raise ArchivedSkillNotFound(scope.workspace, scope.agent, slug, skill_id)
        else:
            wanted = [s for s in skills if include_archived or s.state != "deleted"]
        if not wanted:
            raise SkillNotFound(scope.workspace, scope.agent, slug)
        rows = await db_history.versions_page(
            conn, scope.workspace, [s.id for s in wanted], limit=limit + 1, after=cursor
        )
        page = rows[:limit]
        sources = await db_skills.version_sources(conn, (r.id for r in page))
        unavailable = await db_exclusions.unavailable(conn, scope.workspace, sources)
        revoked = await db_revocations.of_skills(conn, scope.workspace, {r.skill_id for r in page})
        items = [
            VersionSummary(
                number=r.number,
                origin=r.origin,
                actor=r.actor,
                principal=r.principal,
                created_at=r.created_at,
                message=r.message,
                sources=sources[r.id],
                parent=r.parent,
                restored_from=r.restored_from,
                file_count=r.file_count,
                total_size=r.total_size,
                manifest_hash=r.manifest_hash,
                head=live is not None and r.skill_id == live.id and r.number == live.head,
                archived=live is None or r.skill_id != live.id,
                skill_id=r.skill_id,
                available=r.id not in unavailable,
                unavailable_because=unavailable.get(r.id),
                **_revoked(revoked.get((r.skill_id, r.number))),
            )
            for r in page
        ]
        more = len(rows) > limit
        next_before = _cursor(page[-1].skill_id, page[-1].number) if more else None
        return HistoryPage(scope, slug, None if live is None else live.head, items, next_before)

    return await ctx.read(work)
