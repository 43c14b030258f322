"""Installed copies of a revoked listing version: moved off it (docs/revocation.md).

When a catalog listing's version is revoked, every live copy whose baseline is that
version gets an update job to the listing's head (which the yank moved to the newest
version still allowed): the update rules apply as for any update, so an owner's edits
are merged or proposed, never lost. If no version of the listing is left to use, each
copy's use stops instead (`use_paused`, with the reason), in a locked transaction with
one event per copy.

The jobs are keyed by the revocation, so asking again (a retried request, an operator
who runs it twice) queues nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import marketplace as db_marketplace
from registry.db import skills as db_skills
from registry.domain.model import Scope
from registry.errors import ListingNotFound, VersionRevoked
from registry.services.context import Context
from registry.services.marketplace import catalog, install


@dataclass(frozen=True)
class CopiesMoved:
    """What a revocation did to the listing's installed copies."""

    listing: str
    version: int
    updates: list[tuple[str, str, str, int]] = field(default_factory=list)  # ws, agent, slug, job
    stopped: list[tuple[str, str, str]] = field(default_factory=list)


async def move_copies(ctx: Context, listing: str, version: int, *, actor: str) -> CopiesMoved:
    """Queue the update of every copy of `listing@version`, or stop their use (see above)."""
    copies = await ctx.read(lambda conn: db_marketplace.copies_of(conn, listing, version))
    report = CopiesMoved(listing, version)
    try:
        head = await catalog.listing_version(ctx, listing, None, for_use=True)
    except (VersionRevoked, ListingNotFound):
        head = None
    for copy in copies:
        scope = Scope(copy.workspace, copy.agent)
        if head is not None:
            key = f"revoked:{listing}@{version}:{scope}/{copy.slug}"
            queued = await install.enqueue_update(
                ctx, scope, copy.slug, version=head.version, actor=actor, key=key
            )
            report.updates.append((copy.workspace, copy.agent, copy.slug, queued.job.id))
        elif await _stop(ctx, scope, copy, listing=listing, version=version, actor=actor):
            report.stopped.append((copy.workspace, copy.agent, copy.slug))
    return report


async def _stop(
    ctx: Context,
    scope: Scope,
    copy: db_skills.SkillRow,
    *,
    listing: str,
    version: int,
    actor: str,
) -> bool:
    reason = f"listing {listing} v{version} revoked; no version is left to use"

    async def work(conn: AsyncConnection) -> bool:
        current = await db_skills.skill_by_id(conn, scope.workspace, copy.id)
        if current is None or current.state == "deleted" or current.use_paused:
            return False
        now = ctx.clock.now()
        await db_skills.set_controls(
            conn, current, {"use_paused": True, "pause_reason": reason}, now=now
        )
        await db_skills.insert_event(
            conn,
            scope,
            current.slug,
            skill_id=current.id,
            kind="use_paused",
            version=current.head,
            manifest_hash=None,
            payload={"actor": actor, "reason": reason, "listing": listing, "version": version},
            now=now,
        )
        return True

    return await ctx.locked(scope.workspace, work)
