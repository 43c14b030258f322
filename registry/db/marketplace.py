"""Queries the marketplace jobs need: effects already applied, baselines, catalog manifests.

Every query filters by workspace; the caller owns the transaction (and, for
`move_baseline`, the workspace lock).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.skills import SkillRow, manifest_entries
from registry.db.tables import Manifest, Proposal, Skill, Version, VersionSource
from registry.domain.manifest import Manifest as DomainManifest


@dataclass(frozen=True, slots=True)
class Applied:
    """A version that names a source: where a job's effect landed."""

    agent: str
    slug: str
    version: int
    manifest_hash: str


async def versions_with_source(conn: AsyncConnection, workspace: str, source: str) -> list[Applied]:
    """The versions of `workspace` whose sources include `source`, oldest first."""
    rows = await conn.execute(
        sa.select(Skill.agent, Skill.slug, Version.number, Version.manifest_hash)
        .select_from(VersionSource)
        .join(Version, Version.id == VersionSource.version_id)
        .join(Skill, Skill.id == Version.skill_id)
        .where(
            VersionSource.workspace == workspace,
            VersionSource.source == source,
            Version.workspace == workspace,
        )
        .order_by(Version.id)
    )
    return [Applied(r.agent, r.slug, r.number, r.manifest_hash) for r in rows]


async def proposals_with_source(
    conn: AsyncConnection, workspace: str, skill_id: int, source: str
) -> list[tuple[int, str]]:
    """(id, manifest hash) of the skill's proposals whose sources include `source`."""
    rows = await conn.execute(
        sa.select(Proposal.id, Proposal.manifest_hash, Proposal.sources)
        .where(Proposal.workspace == workspace, Proposal.skill_id == skill_id)
        .order_by(Proposal.id)
    )
    # Sources are a JSON list; a skill has few proposals, so they are filtered here
    # rather than with each dialect's JSON operators.
    return [(r.id, r.manifest_hash) for r in rows if source in (r.sources or [])]


async def manifest_by_hash(
    conn: AsyncConnection, workspace: str, manifest_hash: str
) -> DomainManifest | None:
    """The manifest of `workspace` with this hash, if it is stored."""
    manifest_id = await conn.scalar(
        sa.select(Manifest.id).where(
            Manifest.workspace == workspace, Manifest.hash == manifest_hash
        )
    )
    if manifest_id is None:
        return None
    return await manifest_entries(conn, workspace, int(manifest_id))


async def move_baseline(
    conn: AsyncConnection,
    skill: SkillRow,
    *,
    baseline: tuple[str, int, str],
    now: datetime,
) -> None:
    """Point the copy's baseline at another listing version, compare-and-swap on its head.

    The workspace lock already serialises writers; the `WHERE head = :expected` makes the
    swap read like one, as `heads.swap` does.
    """
    listing, version, manifest_hash = baseline
    result = await conn.execute(
        sa.update(Skill)
        .where(
            Skill.id == skill.id,
            Skill.workspace == skill.workspace,
            Skill.head == skill.head,
        )
        .values(
            baseline_listing=listing,
            baseline_version=version,
            baseline_manifest_hash=manifest_hash,
            updated_at=now,
        )
    )
    if result.rowcount != 1:
        msg = f"compare-and-swap of skill {skill.id}'s baseline lost under the workspace lock"
        raise RuntimeError(msg)


async def copies_of(conn: AsyncConnection, listing: str, version: int) -> list[SkillRow]:
    """The live installed copies whose baseline is `listing@version`, in every workspace.

    The one query here that crosses workspaces: a catalog listing is installed into many,
    and a revocation of one of its versions reaches them all (docs/revocation.md).
    """
    columns = (getattr(Skill, f) for f in SkillRow.__slots__)
    rows = await conn.execute(
        sa.select(*columns)
        .where(
            Skill.baseline_listing == listing,
            Skill.baseline_version == version,
            Skill.kind == "installed",
            Skill.state != "deleted",
        )
        .order_by(Skill.workspace, Skill.agent, Skill.slug)
    )
    return [SkillRow(**r._asdict()) for r in rows]
