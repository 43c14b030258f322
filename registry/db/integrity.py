"""The queries of fsck: structural checks the database can answer, and keyset walks.

Each function returns at most `limit` findings; fsck reports how many it found in all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from registry.db.gc import claimed, referenced
from registry.db.retention import holders
from registry.db.tables import (
    Base,
    Blob,
    BlobClaim,
    Manifest,
    ManifestEntry,
    ScopeCount,
    Skill,
    Version,
    WorkspaceUsage,
)
from registry.domain.model import DEFAULT_AGENT

_NOT_HOLDERS: Final = frozenset({"manifest_entries", "versions"})


@dataclass(frozen=True, slots=True)
class BlobRow:
    digest: str
    size: int
    status: str
    referenced: bool
    claimed: bool


@dataclass(frozen=True, slots=True)
class ManifestRow:
    id: int
    workspace: str
    hash: str
    file_count: int
    total_size: int


@dataclass(frozen=True, slots=True)
class EntryRow:
    manifest_id: int
    path: str
    digest: str
    size: int
    executable: bool


def version_label(workspace: str, agent: str, slug: str, number: int) -> str:
    """`acme/pdf-report@3`, with the agent when it is not the default one."""
    label = f"{workspace}/{slug}@{number}"
    return label if agent == DEFAULT_AGENT else f"{label} (agent {agent})"


async def missing_heads(conn: AsyncConnection, limit: int) -> list[tuple[str, str, str, int]]:
    """Skills whose head names no version: (workspace, agent, slug, head)."""
    head_exists = sa.exists().where(Version.skill_id == Skill.id, Version.number == Skill.head)
    rows = await conn.execute(
        sa.select(Skill.workspace, Skill.agent, Skill.slug, Skill.head)
        .where(~head_exists)
        .order_by(Skill.id)
        .limit(limit)
    )
    return [(r.workspace, r.agent, r.slug, r.head) for r in rows]


async def version_mismatches(conn: AsyncConnection, limit: int) -> list[tuple[str, str]]:
    """Versions whose recorded hash, counts or workspace disagree with their manifest."""
    query = (
        sa.select(
            Skill.workspace,
            Skill.agent,
            Skill.slug,
            Version.number,
            Version.manifest_hash,
            Version.file_count,
            Version.total_size,
            Version.workspace.label("version_workspace"),
            Manifest.workspace.label("manifest_workspace"),
            Manifest.hash,
            Manifest.file_count.label("manifest_files"),
            Manifest.total_size.label("manifest_size"),
        )
        .join(Skill, Skill.id == Version.skill_id)
        .join(Manifest, Manifest.id == Version.manifest_id)
        .where(
            sa.or_(
                Version.manifest_hash != Manifest.hash,
                Version.file_count != Manifest.file_count,
                Version.total_size != Manifest.total_size,
                Version.workspace != Manifest.workspace,
                Version.workspace != Skill.workspace,
            )
        )
        .order_by(Version.id)
        .limit(limit)
    )
    out = []
    for r in await conn.execute(query):
        label = version_label(r.workspace, r.agent, r.slug, r.number)
        what = []
        if r.manifest_hash != r.hash:
            what.append(f"records manifest hash {r.manifest_hash}, its manifest has {r.hash}")
        if (r.file_count, r.total_size) != (r.manifest_files, r.manifest_size):
            what.append(
                f"records {r.file_count} files / {r.total_size} B, its manifest "
                f"{r.manifest_files} files / {r.manifest_size} B"
            )
        if len({r.workspace, r.version_workspace, r.manifest_workspace}) > 1:
            what.append(
                f"crosses workspaces (skill {r.workspace}, version {r.version_workspace}, "
                f"manifest {r.manifest_workspace})"
            )
        out.append((label, "; ".join(what)))
    return out


async def counter_mismatches(conn: AsyncConnection, limit: int) -> list[str]:
    """Usage counters that disagree with a recount of `skills`, described one per line.

    The triggers of migration 0010 keep `scope_counts` and `workspace_usage`; a row that
    was edited by hand, or a trigger dropped, shows here. Rows at zero and missing rows
    are the same figure.
    """
    live = Skill.state != "deleted"
    counted = {
        (r.workspace, r.agent, r.kind): r.live_skills
        for r in await conn.execute(sa.select(ScopeCount))
    }
    recounted = {
        (r.workspace, r.agent, r.kind): r.n
        for r in await conn.execute(
            sa.select(Skill.workspace, Skill.agent, Skill.kind, sa.func.count().label("n"))
            .where(live)
            .group_by(Skill.workspace, Skill.agent, Skill.kind)
        )
    }
    used = {r.workspace: r.live_bytes for r in await conn.execute(sa.select(WorkspaceUsage))}
    summed = {
        r.workspace: int(r.n)
        for r in await conn.execute(
            sa.select(Skill.workspace, sa.func.sum(Skill.head_size).label("n"))
            .where(live)
            .group_by(Skill.workspace)
        )
    }
    out = []
    for workspace, agent, kind in sorted(counted.keys() | recounted.keys()):
        have, want = (
            counted.get((workspace, agent, kind), 0),
            recounted.get((workspace, agent, kind), 0),
        )
        if have != want:
            out.append(f"scope {workspace}/{agent} counts {have} live {kind} skills, it has {want}")
    for workspace in sorted(used.keys() | summed.keys()):
        have, want = used.get(workspace, 0), summed.get(workspace, 0)
        if have != want:
            out.append(
                f"workspace {workspace} counts {have} B in use, "
                f"its live skills' heads hold {want} B"
            )
    return out[:limit]


async def manifests_after(conn: AsyncConnection, after: int, limit: int) -> list[ManifestRow]:
    rows = await conn.execute(
        sa.select(
            Manifest.id, Manifest.workspace, Manifest.hash, Manifest.file_count, Manifest.total_size
        )
        .where(Manifest.id > after)
        .order_by(Manifest.id)
        .limit(limit)
    )
    return [ManifestRow(*r) for r in rows]


async def entries_of(conn: AsyncConnection, manifest_ids: Sequence[int]) -> list[EntryRow]:
    if not manifest_ids:
        return []
    rows = await conn.execute(
        sa.select(
            ManifestEntry.manifest_id,
            ManifestEntry.path,
            ManifestEntry.digest,
            ManifestEntry.size,
            ManifestEntry.executable,
        ).where(ManifestEntry.manifest_id.in_(manifest_ids))
    )
    return [EntryRow(*r) for r in rows]


async def versions_using(conn: AsyncConnection, manifest_id: int, limit: int) -> list[str]:
    rows = await conn.execute(
        sa.select(Skill.workspace, Skill.agent, Skill.slug, Version.number)
        .join(Skill, Skill.id == Version.skill_id)
        .where(Version.manifest_id == manifest_id)
        .order_by(Skill.slug, Version.number)
        .limit(limit)
    )
    return [version_label(*r) for r in rows]


async def entry_size_mismatches(
    conn: AsyncConnection, limit: int
) -> list[tuple[int, str, str, int, int]]:
    """Entries whose size differs from their blob row's: (manifest, path, digest, sizes)."""
    rows = await conn.execute(
        sa.select(
            ManifestEntry.manifest_id,
            ManifestEntry.path,
            ManifestEntry.digest,
            ManifestEntry.size,
            Blob.size.label("blob_size"),
        )
        .join(Blob, Blob.digest == ManifestEntry.digest)
        .where(ManifestEntry.size != Blob.size)
        .order_by(ManifestEntry.manifest_id, ManifestEntry.path)
        .limit(limit)
    )
    return [(r.manifest_id, r.path, r.digest, r.size, r.blob_size) for r in rows]


async def blob_rows_after(
    conn: AsyncConnection, after: str, limit: int, claims_after: datetime
) -> list[BlobRow]:
    """The next `limit` blob rows in digest order, with their reference and claim flags."""
    rows = await conn.execute(
        sa.select(
            Blob.digest,
            Blob.size,
            Blob.status,
            referenced().label("referenced"),
            claimed(claims_after).label("claimed"),
        )
        .where(Blob.digest > after)
        .order_by(Blob.digest)
        .limit(limit)
    )
    return [BlobRow(r.digest, r.size, r.status, bool(r.referenced), bool(r.claimed)) for r in rows]


async def blob_row(conn: AsyncConnection, digest: str, claims_after: datetime) -> BlobRow | None:
    rows = await conn.execute(
        sa.select(
            Blob.digest,
            Blob.size,
            Blob.status,
            referenced().label("referenced"),
            claimed(claims_after).label("claimed"),
        ).where(Blob.digest == digest)
    )
    r = rows.first()
    if r is None:
        return None
    return BlobRow(r.digest, r.size, r.status, bool(r.referenced), bool(r.claimed))


async def references(
    conn: AsyncConnection, digest: str, limit: int, metadata: sa.MetaData = Base.metadata
) -> list[str]:
    """What names `digest`: versions (`acme/pdf-report@3`) and rows of other tables."""
    manifests = sa.select(ManifestEntry.manifest_id).where(ManifestEntry.digest == digest)
    rows = await conn.execute(
        sa.select(Skill.workspace, Skill.agent, Skill.slug, Version.number)
        .join(Skill, Skill.id == Version.skill_id)
        .where(Version.manifest_id.in_(manifests))
        .order_by(Skill.workspace, Skill.slug, Version.number)
        .limit(limit)
    )
    out = [version_label(*r) for r in rows]
    for column in holders(metadata, "manifests.id", _NOT_HOLDERS):
        count = await conn.scalar(
            sa.select(sa.func.count()).select_from(column.table).where(column.in_(manifests))
        )
        if count:
            out.append(f"{count} row(s) of {column.table.name}")
    return out


async def dangling_claims(conn: AsyncConnection, limit: int) -> list[tuple[str, str]]:
    """Claims naming a digest without a row (the foreign key forbids it; checked anyway)."""
    rows = await conn.execute(
        sa.select(BlobClaim.write_id, BlobClaim.digest)
        .where(~sa.exists().where(Blob.digest == BlobClaim.digest))
        .order_by(BlobClaim.id)
        .limit(limit)
    )
    return [(r.write_id, r.digest) for r in rows]


async def counts(conn: AsyncConnection) -> tuple[int, int]:
    """Skills and versions."""
    skills = await conn.scalar(sa.select(sa.func.count()).select_from(Skill))
    versions = await conn.scalar(sa.select(sa.func.count()).select_from(Version))
    return int(skills or 0), int(versions or 0)
