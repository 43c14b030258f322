"""Approving content-check findings of a stored version (docs/history.md, "Exceptions").

A version that the current scanner blocks (its rules changed since it was written) can be
cleared by the owner: `approve_findings` approves the named findings (path and ordinal, as
`ContentBlocked` and the skill's status report them) and stores the version's approvals as
exact-match hashes, paths and occurrence counts, in one locked transaction with one
`findings_approved` event. The version itself is immutable and unchanged. Approving at
write time is `write_package(..., approve=...)` / `edit(..., approve=...)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import approvals as db_approvals
from registry.db import skills as db_skills
from registry.domain.approvals import Approval, FindingRef
from registry.domain.arguments import check_text
from registry.domain.model import Scope, check_slug
from registry.errors import VersionNotFound
from registry.services.context import Context
from registry.services.history.controls import live_skill
from registry.services.write import content
from registry.services.write.restore import stored_version


@dataclass(frozen=True)
class ApprovalResult:
    """The version's approvals after the call, and what (if anything) still blocks it."""

    version: int
    approvals: tuple[Approval, ...]
    blocked_by: dict[str, object] | None


async def approve_findings(
    ctx: Context,
    scope: Scope,
    slug: str,
    version: int,
    findings: Sequence[FindingRef],
    *,
    actor: str,
) -> ApprovalResult:
    """Approve `findings` of `version` (see the module docstring)."""
    check_slug(slug)
    check_text("actor", actor)
    if not findings:
        msg = "name at least one finding to approve"
        raise ValueError(msg)
    stored = await stored_version(ctx, scope, slug, version)
    verdict = await content.verdict(
        ctx, stored.manifest, None, allowed=stored.approvals, approve=findings
    )

    async def work(conn: AsyncConnection) -> None:
        now = ctx.clock.now()
        skill = await live_skill(conn, scope, slug)
        row = await db_skills.version(conn, skill, version)
        if row is None or row.manifest_hash != stored.manifest.hash:
            raise VersionNotFound(slug, version)
        await db_approvals.replace(
            conn, scope.workspace, row.id, verdict.kept, actor=actor, now=now
        )
        await db_skills.insert_event(
            conn,
            scope,
            slug,
            skill_id=skill.id,
            kind="findings_approved",
            version=version,
            manifest_hash=row.manifest_hash,
            payload={
                "actor": actor,
                "findings": [{"path": f.path, "ordinal": f.ordinal} for f in findings],
                "still_blocked": verdict.blocked is not None,
            },
            now=now,
        )

    await ctx.locked(scope.workspace, work)
    blocked_by = None if verdict.blocked is None else verdict.blocked.details()
    return ApprovalResult(version, verdict.kept, blocked_by)
