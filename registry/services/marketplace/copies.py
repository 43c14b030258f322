"""Installed copies: where each stands against its listing (what an update would bring).

A copy records its baseline: the listing, the listing version it was installed or last
updated from, and that version's manifest hash. The copy is *edited* when its head's
package differs from the baseline's, and an update is *available* when the listing has a
newer version than the baseline. An update job (`install.py`) decides what to do with both.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db import skills as db_skills
from registry.domain.model import Scope, check_slug
from registry.errors import ListingNotFound, NotInstalled, SkillNotFound
from registry.services.context import Context
from registry.services.marketplace import catalog


@dataclass(frozen=True)
class CopyStatus:
    """An installed copy against its listing.

    `latest` is None when the listing is no longer in the catalog.
    """

    slug: str
    head: int
    listing: str
    baseline: int
    latest: int | None
    edited: bool

    @property
    def update_available(self) -> bool:
        return self.latest is not None and self.latest > self.baseline


async def copy_status(ctx: Context, scope: Scope, slug: str) -> CopyStatus:
    """Where the installed copy `slug` stands (`NotInstalled` for a skill saved here)."""
    check_slug(slug)

    async def work(conn: AsyncConnection) -> tuple[db_skills.SkillRow, str]:
        skill = await db_skills.live_skill(conn, scope, slug)
        if skill is None:
            raise SkillNotFound(scope.workspace, scope.agent, slug)
        head = await db_skills.version(conn, skill, skill.head)
        assert head is not None, "a skill's head names an existing version"
        return skill, head.manifest_hash

    skill, head_hash = await ctx.read(work)
    listing, baseline = skill.baseline_listing, skill.baseline_version
    if skill.kind != "installed" or listing is None or baseline is None:
        raise NotInstalled(slug, skill.kind)
    try:
        latest: int | None = (await catalog.listing_version(ctx, listing)).version
    except ListingNotFound:
        latest = None
    return CopyStatus(
        slug=slug,
        head=skill.head,
        listing=listing,
        baseline=baseline,
        latest=latest,
        edited=head_hash != skill.baseline_manifest_hash,
    )
